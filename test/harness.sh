#!/usr/bin/env bash
# harness.sh LABEL TEST.c SOURCE.c...: builds and runs the standalone C
# tests of a plain-C part of src/ (the cron parser, the app periods), once
# optimized with warnings as errors, and once more under AddressSanitizer
# and UBSan when the compiler can link them; the two must agree.  Needs
# only a C compiler; the binaries go to a temporary directory.  Exits 0 on
# success; the last line is the test's summary.
set -euo pipefail
label=$1
shift
root=$(cd "$(dirname "$0")/.." && pwd)
cc=${CC:-cc}
flags=(-Wall -Wextra -Werror -std=c99 -O1 -I"$root/src")
srcs=("$@")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== $cc ${flags[*]}"
"$cc" "${flags[@]}" -o "$tmp/test" "${srcs[@]}"
"$tmp/test" | tee "$tmp/plain.out"
summary=$(tail -n 1 "$tmp/plain.out")

san=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
if echo 'int main(void){return 0;}' >"$tmp/probe.c" &&
	"$cc" "${san[@]}" -o "$tmp/probe" "$tmp/probe.c" 2>/dev/null &&
	"$tmp/probe" 2>/dev/null; then
	echo "== $cc ${flags[*]} ${san[*]}"
	"$cc" "${flags[@]}" "${san[@]}" -o "$tmp/test_san" "${srcs[@]}"
	# Leak checking needs ptrace, which containers often refuse; nothing here allocates.
	ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
		"$tmp/test_san" | tee "$tmp/san.out"
	[ "$(tail -n 1 "$tmp/san.out")" = "$summary" ] || {
		echo "$label: the sanitizer build disagrees with the plain one"
		exit 1
	}
	echo "(both builds passed: plain and -fsanitize=address,undefined)"
else
	echo "(sanitizers unavailable with $cc: plain build only)"
fi
echo "$summary"
