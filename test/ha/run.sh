#!/usr/bin/env bash
# make test-ha: failover under load with pg_auto_failover (test/ha/failover.sh).
# Not part of make test: it needs Debian's pg_auto_failover packages
# (installed here when missing) and a few minutes; .ci/run runs it when time
# allows.  Builds and installs pg_coord and coord-agent, runs the test under
# a time limit (COORD_HA_TIMEOUT seconds, default 480), and ends with
# "N passed, M failed" like make test.
set -u
. "$(dirname "$0")/../lib.sh"
cd "$COORD_ROOT"
m=$(coord_pg_major)
coord_deps "postgresql-$m-auto-failover" pg-auto-failover-cli
export WERROR=1
coord_build

passed=0 failed=0
mkdir -p "$COORD_RESULTS"
out=$COORD_RESULTS/ha_failover.sh.out
t0=$SECONDS
export COORD_HA_STATE=$COORD_RESULTS/ha_state
if timeout -k 20 "${COORD_HA_TIMEOUT:-480}" bash test/ha/failover.sh >"$out" 2>&1; then
  passed=1
  log "ha/failover.sh: ok $((SECONDS - t0))s ($(tail -1 "$out"))"
else
  rc=$?
  failed=1
  [ "$rc" -eq 124 ] && log "ha/failover.sh: timed out after ${COORD_HA_TIMEOUT:-480}s"
  log "ha/failover.sh: FAILED $((SECONDS - t0))s"; tail -40 "$out" >&2
fi
# a run killed by the time limit may have left servers and workers behind
if [ -s "$COORD_HA_STATE" ]; then
  bash test/ha/failover.sh --sweep "$(cat "$COORD_HA_STATE")" || true
  rm -f "$COORD_HA_STATE"
fi
log "(output: $out)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
