#!/usr/bin/env bash
# make demo: the systems pg_coord replaces (README.md, the introduction), each run end
# to end with real worker processes against the cluster in the PG*
# environment (test/run.sh demo starts a private one).  Each scenario prints
# a short report with its checks; a summary table closes the run.  Exits
# non-zero if any check failed.
#
#   examples/demo.sh            every scenario
#   examples/demo.sh S1 ...     only these
#
# Adding a scenario: write demo_sN (it runs in a subshell with set -e and
# fails by returning non-zero), and add a line to SCENARIOS.
set -euo pipefail

EXAMPLES=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DEMO_DB=${DEMO_DB:-coord_demo}
# Debian's python3 has psycopg2, whatever python3 comes first on PATH.
export PYTHON=${PYTHON:-/usr/bin/python3}

# id|title|function
SCENARIOS=(
  "S1|autonomous components: index and batch locks (was ZooKeeper/Curator)|demo_s1"
  "S2|apps: period-keyed dependency scheduling on a host (was a state manager + job managers)|demo_s2"
  "S3|crawlers: the duplicate-work coordinator, per-site limits, 429 pauses (was RabbitMQ + coordinator)|demo_s3"
  "S4|mail runners: claims, leases, weighted partition groups (was per-runner hash splits)|demo_s4"
  "S5|application-server scheduler: recurring events, one run at a time|demo_s5"
  "agent|coord-agent: S2 apps on two hosts, S1 components as agent tasks, the status view|demo_agent"
  "flows|workflows: an import flow, a batch with a callback, cancel and await (was a queue library + a home-made DAG runner)|demo_flows"
)

# ---------------------------------------------------------------- scenarios

demo_s1() {
  . "$EXAMPLES/s1/scenario.sh"
  S1_SHOW_LOCKS=1 s1_scenario "$DEMO_DB"
}

demo_s3() {
  . "$EXAMPLES/s3/demo_section.sh"
  s3_demo
}

demo_s2() { . "$EXAMPLES/s2/demo_section.sh"; s2_demo; }

demo_s4() { . "$EXAMPLES/s4/demo_section.sh"; s4_demo; }

demo_s5() { . "$EXAMPLES/s5/demo_section.sh"; s5_demo; }

demo_agent() { . "$EXAMPLES/agent/demo_section.sh"; agent_demo; }

demo_flows() { . "$EXAMPLES/flows/demo_section.sh"; flows_demo; }

# ---------------------------------------------------------------- driver

SUMMARY=()
FAILED=0

run_scenario() {   # ID TITLE FUNCTION
  local id=$1 title=$2 fn=$3 t0=$EPOCHREALTIME rc=0 status
  printf '\n== %s  %s\n' "$id" "$title"
  # set -e is void inside `cmd || ...`, so the subshell runs unguarded
  set +e
  ( set -e; "$fn" )
  rc=$?
  set -e
  if [ "$rc" = 0 ]; then status=ok; else status=FAILED; FAILED=$((FAILED + 1)); fi
  SUMMARY+=("$(printf '%-4s %-72s %-7s %5.1f s' "$id" "$title" "$status" \
                 "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')")")
}

main() {
  local want=("$@") s id title fn
  psql -qX -v ON_ERROR_STOP=1 -d postgres -c 'SET client_min_messages = warning' \
       -c "DROP DATABASE IF EXISTS $DEMO_DB" -c "CREATE DATABASE $DEMO_DB" >/dev/null
  psql -qX -v ON_ERROR_STOP=1 -d "$DEMO_DB" -c 'CREATE EXTENSION pg_coord' >/dev/null
  printf 'pg_coord %s on PostgreSQL %s, database %s\n' \
    "$(psql -qtAX -d "$DEMO_DB" -c "SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'pg_coord'")" \
    "$(psql -qtAX -d "$DEMO_DB" -c 'SHOW server_version')" "$DEMO_DB"

  for s in "${SCENARIOS[@]}"; do
    IFS='|' read -r id title fn <<<"$s"
    if [ ${#want[@]} -gt 0 ] && ! printf '%s\n' "${want[@]}" | grep -qix "$id"; then
      continue
    fi
    run_scenario "$id" "$title" "$fn"
  done

  printf '\n== Summary\n'
  printf '  %s\n' "${SUMMARY[@]}"
  if [ "$FAILED" -gt 0 ]; then
    printf '%d scenario(s) failed\n' "$FAILED"
    exit 1
  fi
  printf 'all %d scenario(s) passed\n' "${#SUMMARY[@]}"
}

main "$@"
