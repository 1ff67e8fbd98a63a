#!/usr/bin/env bash
# Builds and runs the standalone tests of src/cron.c: once optimized with
# warnings as errors, and once more under AddressSanitizer and UBSan when
# the compiler can link them.  Needs only a C compiler; the binaries go to a
# temporary directory.  Exits 0 on success; the last line is the summary.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cc=${CC:-cc}
flags=(-Wall -Wextra -Werror -std=c99 -O1 -I"$root/src")
srcs=("$here/cron_test.c" "$root/src/cron.c")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== $cc ${flags[*]}"
"$cc" "${flags[@]}" -o "$tmp/cron_test" "${srcs[@]}"
"$tmp/cron_test" | tee "$tmp/plain.out"
summary=$(tail -n 1 "$tmp/plain.out")

san=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
if echo 'int main(void){return 0;}' >"$tmp/probe.c" &&
	"$cc" "${san[@]}" -o "$tmp/probe" "$tmp/probe.c" 2>/dev/null &&
	"$tmp/probe" 2>/dev/null; then
	echo "== $cc ${flags[*]} ${san[*]}"
	"$cc" "${flags[@]}" "${san[@]}" -o "$tmp/cron_test_san" "${srcs[@]}"
	# Leak checking needs ptrace, which containers often refuse; nothing here allocates.
	ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
		"$tmp/cron_test_san" | tee "$tmp/san.out"
	[ "$(tail -n 1 "$tmp/san.out")" = "$summary" ] || {
		echo "cron: the sanitizer build disagrees with the plain one"
		exit 1
	}
	echo "(both builds passed: plain and -fsanitize=address,undefined)"
else
	echo "(sanitizers unavailable with $cc: plain build only)"
fi
echo "$summary"
