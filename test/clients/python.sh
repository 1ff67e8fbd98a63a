#!/usr/bin/env bash
# The Python client's suite (clients/python/tests, pytest with Debian's
# python3-pytest) against the running cluster of the PG* environment (make
# test's private cluster, a superuser): one TAP line per pytest test, named
# with its scenario id of clients/scenarios.md where it has one. Exits
# non-zero when a test failed or pytest did not run.
#   bash test/clients/python.sh        (after make install, PGHOST/PGPORT/PGUSER set)
set -u
cd "$(dirname "$0")/../../clients/python"
py=${PYTHON:-/usr/bin/python3}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# -p no:cacheprovider: nothing written into the tree
timeout 300 "$py" -m pytest -p no:cacheprovider -rA -q tests >"$out" 2>&1
rc=$?
n=0
while read -r status name _; do
  n=$((n + 1))
  case $status in
    PASSED) echo "ok $n - python: $name" ;;
    *)      echo "not ok $n - python: $name ($status)" ;;
  esac
done < <(grep -E '^(PASSED|FAILED|ERROR) ' "$out")
if [ "$rc" -ne 0 ]; then
  grep -qE '^(FAILED|ERROR) ' "$out" || echo "not ok $((n + 1)) - python: pytest exited $rc"
  tail -60 "$out" | sed 's/^/# /'
fi
echo "# python: $(tail -1 "$out")"
exit $rc
