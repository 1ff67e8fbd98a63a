#!/usr/bin/env bash
# Builds and runs the standalone tests of src/partitions_assign.c (the pure
# assignment of partition groups), as test/cron/run.sh does for cron.c: with warnings
# as errors, and under AddressSanitizer and UBSan when the compiler can
# link them.  Exits 0 on success; the last line is the summary.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cc=${CC:-cc}
flags=(-Wall -Wextra -Werror -std=c99 -O1 -I"$root/src")
srcs=("$here/assign_test.c" "$root/src/partitions_assign.c")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== $cc ${flags[*]}"
"$cc" "${flags[@]}" -o "$tmp/assign_test" "${srcs[@]}" -lm
"$tmp/assign_test" | tee "$tmp/plain.out"
summary=$(tail -n 1 "$tmp/plain.out")

san=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
if echo 'int main(void){return 0;}' >"$tmp/probe.c" &&
	"$cc" "${san[@]}" -o "$tmp/probe" "$tmp/probe.c" 2>/dev/null &&
	"$tmp/probe" 2>/dev/null; then
	echo "== $cc ${flags[*]} ${san[*]}"
	"$cc" "${flags[@]}" "${san[@]}" -o "$tmp/assign_test_san" "${srcs[@]}" -lm
	ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
		"$tmp/assign_test_san" | tee "$tmp/san.out"
	[ "$(tail -n 1 "$tmp/san.out")" = "$summary" ] || {
		echo "partition assignment: the sanitizer build disagrees with the plain one"
		exit 1
	}
fi
echo "$summary"
