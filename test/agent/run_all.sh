#!/usr/bin/env bash
# Runs every coord-agent test script (test/agent/*.sh), one after the other
# (each starts and stops its own cluster on its own port), and ends with
# "N passed, M failed".  Each script's output goes to $OUT (if set, kept;
# else a temporary directory, removed when all passed); a failing script's
# tail is printed.  Exit status 0 only if all passed.
set -u
cd "$(dirname "$0")" || exit 1
keep_out=${OUT:+yes}
OUT=${OUT:-$(mktemp -d /tmp/coord-agent-tests.XXXXXX)}
mkdir -p "$OUT"
passed=0
failed=0
failures=()
start=$(date +%s)
# elapsed seconds since a ${EPOCHREALTIME/./} value, one decimal, no bc needed
since() { local d=$(( (${EPOCHREALTIME/./} - $1) / 100000 )); echo "$((d / 10)).$((d % 10))"; }
make -C ../../agent -s >/dev/null || { echo "coord-agent does not build"; echo "0 passed, 1 failed"; exit 1; }
for t in *.sh; do
  case "$t" in run_all.sh|agent_lib.sh) continue ;; esac
  t0=${EPOCHREALTIME/./}
  if bash "./$t" >"$OUT/$t.out" 2>&1; then
    passed=$((passed + 1))
    printf '%-14s ok   %5ss  %s\n' "$t" "$(since "$t0")" "$(tail -1 "$OUT/$t.out")"
  else
    failed=$((failed + 1))
    failures+=("$t")
    printf '%-14s FAIL %5ss\n' "$t" "$(since "$t0")"
    tail -40 "$OUT/$t.out" | sed 's/^/    /'
  fi
done
if [ "$failed" -eq 0 ] && [ -z "$keep_out" ]; then
  rm -rf "$OUT"
  echo "agent tests: $(( $(date +%s) - start )) s"
else
  echo "agent tests: $(( $(date +%s) - start )) s; outputs in $OUT"
fi
[ ${#failures[@]} -gt 0 ] && echo "failed: ${failures[*]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
