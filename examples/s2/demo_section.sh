# S2 end to end: period-keyed apps with dependencies across hosts, with real
# worker processes.  Sourced by examples/demo.sh.
#
#   s2_demo            needs the cluster in the PG* environment with pg_coord
#                      installed in the server; (re)creates database $S2_DB
#                      (default coord_demo_s2) with pg_coord and schema s2.
#
# The four apps of the original system (schema.sql) on host tr-oddjob-dal-01;
# two job-manager processes for that host (worker.py) run what they claim.
# driver.py plays the clock: coord.tick(now) once per simulated hour through
# the ISO week of Monday 2024-01-01, waiting after each tick for that hour's
# runs.  One adxcheck run (Wednesday 13:00) hangs in its worker: a later tick
# times it out, it is retried elsewhere, and the hung worker's late complete
# answers false.  Checks: every hourly run done once; each counter run created
# by the transaction that completed the second of its two upstream runs (no
# tick in between); bigcounter's run created only once the week's last hourly
# run was done, with all 336 upstream results.  Prints a report and a last
# line starting with "S2:"; returns non-zero if a check failed.  Settings
# (environment): S2_DB, PYTHON (a python3 with psycopg2).

# shellcheck shell=bash disable=SC2016,SC2034  # s2_check evals its condition strings later
S2_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

s2_demo() {
  # a subshell: its own set -e, EXIT trap and globals, whoever sourced us
  ( s2_demo_run "$@" )
}

s2_q() { psql -qtAX -v ON_ERROR_STOP=1 -d "$S2_DB" -c "$1"; }

s2_check() {   # DESCRIPTION 'SHELL CONDITION': prints ok/FAIL, counts failures
  S2_CHECKS=$((S2_CHECKS + 1))
  if eval "$2"; then
    printf '  ok    %s\n' "$1"
  else
    printf '  FAIL  %s\n' "$1"
    S2_FAILED=$((S2_FAILED + 1))
  fi
}

s2_cleanup() {   # EXIT_STATUS
  local p
  for p in "${S2_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  if [ "$1" = 0 ]; then
    rm -rf "$S2_LOGDIR"
  elif [ -z "${S2_REPORTED:-}" ]; then
    echo "  worker logs kept in $S2_LOGDIR"
    echo "S2: FAILED, stopped by an error after $S2_CHECKS checks"
  fi
}

s2_demo_run() {
  set -euo pipefail
  S2_DB=${S2_DB:-coord_demo_s2}
  PYTHON=${PYTHON:-/usr/bin/python3}
  S2_LOGDIR=$(mktemp -d /tmp/s2_demo.XXXXXX)
  S2_CHECKS=0 S2_FAILED=0
  S2_PIDS=()
  trap 's2_cleanup $?' EXIT
  local week=2024-01-01 hang=2024-01-03T13:00:00Z host=tr-oddjob-dal-01

  psql -qX -v ON_ERROR_STOP=1 -d postgres -c 'SET client_min_messages = warning' \
       -c "DROP DATABASE IF EXISTS $S2_DB WITH (FORCE)" -c "CREATE DATABASE $S2_DB" >/dev/null
  s2_q 'CREATE EXTENSION pg_coord' >/dev/null
  psql -qX -v ON_ERROR_STOP=1 -v week="$week" -d "$S2_DB" -f "$S2_DIR/schema.sql" >/dev/null
  echo "  apps on host $host (coord.define_app):"
  psql -qX -P footer=off -d "$S2_DB" -c "
    SELECT name, COALESCE(starts, '-') AS starts, depends, timeout, host FROM coord.app_defs
     ORDER BY depends <> '{}', name" | sed '/^$/d; s/^/      /'
  echo "  two job managers for $host (worker.py, session-bound claims);" \
       "the first attempt of adxcheck ${hang%:00Z} hangs for 4 s in whichever claims it"
  local w
  for w in w1 w2; do
    PGDATABASE=$S2_DB setsid "$PYTHON" "$S2_DIR/worker.py" -n $w --hang "adxcheck@$hang" --hang-seconds 4 \
      >"$S2_LOGDIR/$w.log" 2>&1 &
    S2_PIDS+=($!)
  done

  echo "  the clock: coord.tick(now) once per simulated hour, Mon $week 00:00 to the next Monday 00:00 UTC"
  local t0=$EPOCHREALTIME drove=0
  PGDATABASE=$S2_DB "$PYTHON" "$S2_DIR/driver.py" "$week" "$hang" && drove=1
  echo "    ($(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s for 169 ticks)"
  # the hung worker wakes up and answers; then both stop
  local deadline=$((SECONDS + 10))
  while ! grep -q 'late complete' "$S2_LOGDIR"/w*.log && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
  kill -TERM "${S2_PIDS[@]}" 2>/dev/null || true
  local p rc_all=0
  for p in "${S2_PIDS[@]}"; do wait "$p" || rc_all=1; done
  S2_PIDS=()
  echo "  what the workers said about the hung run and bigcounter:"
  grep -h -E 'hangs|late complete|attempt [2-9]|bigcounter' "$S2_LOGDIR"/w*.log | sort -s -k1,1 | sed 's/^/      | /'

  local hourly counter_ok big big_ok timed late
  hourly=$(s2_q "SELECT string_agg(app || ' ' || n || '/' || d, ', ' ORDER BY app) FROM (
                   SELECT app, count(*) AS n, count(*) FILTER (WHERE state = 'done') AS d FROM coord.runs
                    WHERE period_start >= '$week' AND period_start < timestamptz '$week' + interval '7 days'
                      AND app <> 'bigcounter' GROUP BY app) AS r")
  # each counter run: created at most 1 s before the later of its two upstream
  # runs finished (created_at is the start of the transaction that completed it)
  counter_ok=$(s2_q "SELECT count(*) FILTER (WHERE c.created_at <= u.last AND c.created_at > u.last - interval '1 second')
                            || ' ' || count(*)
                       FROM coord.app_runs AS c,
                            LATERAL (SELECT max(finished_at) AS last FROM coord.app_runs AS x
                                      WHERE x.app IN ('adxcheck', 'retgtcheck') AND x.period_start = c.period_start) AS u
                      WHERE c.app = 'counter' AND c.period_start < timestamptz '$week' + interval '7 days'")
  big=$(s2_q "SELECT count(*) || ' ' || COALESCE(max(state), '-') || ' ' || COALESCE(max(result::text), '-')
                FROM coord.runs WHERE app = 'bigcounter'")
  big_ok=$(s2_q "WITH up AS (SELECT finished_at, row_number() OVER (ORDER BY finished_at DESC) AS n
                                FROM coord.app_runs WHERE app IN ('adxcheck', 'retgtcheck')
                                 AND period_start < timestamptz '$week' + interval '7 days')
                 SELECT b.created_at <= (SELECT finished_at FROM up WHERE n = 1)
                    AND b.created_at > (SELECT finished_at FROM up WHERE n = 2)
                   FROM coord.app_runs AS b WHERE b.app = 'bigcounter'")
  timed=$(s2_q "SELECT state || ' ' || attempts FROM coord.runs WHERE app = 'adxcheck' AND period_start = '$hang'")
  late=$(cat "$S2_LOGDIR"/w*.log | grep -c 'late complete of adxcheck .* -> False' || true)
  echo "    hourly runs (runs/done): $hourly"
  echo "    bigcounter: $big"

  s2_check "the clock ran the week through, and both workers stopped cleanly" '[ $drove = 1 ] && [ $rc_all = 0 ]'
  s2_check "168 hourly runs of adxcheck, retgtcheck and counter each, all done" \
    '[ "$hourly" = "adxcheck 168/168, counter 168/168, retgtcheck 168/168" ]'
  s2_check "every counter run created by the complete of its second upstream run (within 1 s, no tick)" \
    '[ "$counter_ok" = "168 168" ]'
  s2_check "the hung adxcheck run timed out, was retried and done (attempt 2); the late complete answered false" \
    '[ "$timed" = "done 2" ] && [ "$late" = 1 ]'
  s2_check "one bigcounter run, created by the complete of the week's last hourly run, with 168 + 168 results" \
    '[[ "$big" == "1 done "*"\"hours\": {\"adxcheck\": 168, \"retgtcheck\": 168}"* ]] && [ "$big_ok" = t ]'

  if [ "$S2_FAILED" = 0 ]; then
    echo "S2: ok, $S2_CHECKS checks: 4 apps on $host over one simulated week, 505 runs by 2 workers;" \
         "counters fired by their upstreams' completes, a hung run timed out and retried, bigcounter after the week"
  else
    echo "  worker logs kept in $S2_LOGDIR"
    S2_REPORTED=1
    echo "S2: FAILED, $S2_FAILED of $S2_CHECKS checks failed"
    return 1
  fi
}
