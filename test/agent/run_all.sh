#!/usr/bin/env bash
# The one loop over the coord-agent test scripts: every test/agent/*.sh but
# the library (agent_lib.sh) and this file, one after the other (each starts
# and stops its own cluster on its own port, 54340-54349), through
# coord_run_scripts (test/lib.sh), so results are named "agent/NAME.sh" and
# outputs kept in $COORD_RESULTS/agent_NAME.sh.out (test/results/).
#
# test/run.sh sources this file and calls coord_agent_tests with its own
# counters.  Run on its own (`bash test/agent/run_all.sh`), it builds
# coord-agent, runs the same loop and ends with "N passed, M failed"; exit
# status 0 only if all passed.  It uses the extension as installed (`make
# install` first, with the PostgreSQL the tests are to use first on PATH).
coord_agent_tests() {
  local t scripts=()
  for t in "$COORD_ROOT"/test/agent/*.sh; do
    case "$(basename "$t")" in run_all.sh|agent_lib.sh) continue ;; esac
    scripts+=("$t")
  done
  coord_run_scripts agent "${scripts[@]}"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -u
  . "$(dirname "$0")/../lib.sh"
  passed=0
  failed=0
  failures=()
  start=$SECONDS
  if make -C "$COORD_ROOT/agent" -s >/dev/null; then
    coord_agent_tests
  else
    failed=1; failures+=("agent: coord-agent does not build")
  fi
  log "agent tests: $((SECONDS - start)) s; outputs in $COORD_RESULTS"
  [ ${#failures[@]} -gt 0 ] && log "failed: ${failures[*]}"
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
fi
