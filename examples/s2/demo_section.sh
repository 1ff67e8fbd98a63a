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
# run was done, with all 336 upstream results.
# Part 2 (database ${S2_DB}_tz, schema_tz.sql, driver_tz.py): the host's
# reports in America/Chicago over the local week of Monday 2026-10-26 (it
# ends with the fall-back of 2026-11-01) and the Monday after; two new
# workers.  Checks: 24 hourly runs per local day and 25 on 2026-11-01, one
# daily run per local day over exactly its hours, one weekly run over its 7
# days; the weekly run, held by its worker, raises one deadline alert at the
# tick that finds it 3 h past its week (a LISTENing connection hears it, two
# more ticks add nothing) and the alert is cleared when it is done; Thursday,
# whose feed was broken, is rerun with downstream => true: its 24 hours, its
# day and the week get a second attempt each (the first kept in coord.runs),
# in dependency order.  Prints a report and a last line starting with "S2:";
# returns non-zero if a check failed.  Settings (environment): S2_DB, PYTHON
# (a python3 with psycopg2).

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

# Part 2: the Dallas reports (schema_tz.sql) in America/Chicago over the local
# week of Monday 2026-10-26, which ends with the fall-back of Sunday
# 2026-11-01, and the Monday after; driver_tz.py plays the clock.  Thursday's
# feed is broken when first read; the week's rollup is held past its deadline.
s2_tz_part() {   # HOST
  local host=$1 week=2026-10-26 w out
  local S2_DB=${S2_DB}_tz   # its own database (s2_q uses it too): see schema_tz.sql
  psql -qX -v ON_ERROR_STOP=1 -d postgres -c 'SET client_min_messages = warning' \
       -c "DROP DATABASE IF EXISTS $S2_DB WITH (FORCE)" -c "CREATE DATABASE $S2_DB" >/dev/null
  s2_q 'CREATE EXTENSION pg_coord' >/dev/null
  psql -qX -v ON_ERROR_STOP=1 -v week="$week" -d "$S2_DB" -f "$S2_DIR/schema_tz.sql" >/dev/null
  echo "  part 2 (database $S2_DB): the same host's reports in Dallas time (tz America/Chicago)," \
       "the local week of Mon $week and the Monday after:"
  psql -qX -P footer=off -d "$S2_DB" -c "
    SELECT name, starts, depends, tz, deadline FROM coord.app_defs WHERE name LIKE 'dal%'
     ORDER BY depends <> '{}', starts DESC" | sed '/^$/d; s/^/      /'
  echo "  two job managers again; dal_hits of Thu 10-29 reads a broken feed (until it is fixed);" \
       "the week's dal_weekly run is held by its worker until the driver releases it"
  for w in w3 w4; do
    PGDATABASE=$S2_DB setsid "$PYTHON" "$S2_DIR/worker.py" -n $w \
      --bad-from 2026-10-29T05:00:00Z --bad-to 2026-10-30T05:00:00Z --fixed "$S2_LOGDIR/feed-fixed" \
      --hold dal_weekly --release "$S2_LOGDIR/release-weekly" >"$S2_LOGDIR/$w.log" 2>&1 &
    S2_PIDS+=($!)
  done
  local t0=$EPOCHREALTIME drove=0
  out=$S2_LOGDIR/driver_tz.out
  PGDATABASE=$S2_DB "$PYTHON" "$S2_DIR/driver_tz.py" "$week" "$S2_LOGDIR" >"$out" 2>&1 && drove=1
  cat "$out"
  echo "    what the workers said about dal_weekly and the day of 10-29:"
  grep -h -E 'dal_weekly|dal_daily 2026-10-29' "$S2_LOGDIR"/w[34].log | sort -s -k1,1 | sed 's/^/      | /'
  echo "    ($(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s)"
  kill -TERM "${S2_PIDS[@]}" 2>/dev/null || true
  local p rc_all=0
  for p in "${S2_PIDS[@]}"; do wait "$p" || rc_all=1; done
  S2_PIDS=()

  local days daily weekly alert heard rerun order
  # current hourly runs per local day
  days=$(s2_q "SELECT string_agg(d || ' ' || n, ', ' ORDER BY d) FROM (
                 SELECT to_char(period_start AT TIME ZONE 'America/Chicago', 'MM-DD') AS d, count(*) AS n
                   FROM coord.runs WHERE app = 'dal_hits' AND current AND state = 'done' GROUP BY 1) AS x")
  daily=$(s2_q "SELECT count(*) || ' ' || count(*) FILTER (WHERE state = 'done') || ' '
                       || string_agg(result->>'hours', ',' ORDER BY period_start)
                  FROM coord.runs WHERE app = 'dal_daily' AND current")
  weekly=$(s2_q "SELECT count(*) || ' ' || max(state) || ' '
                        || max(to_char(period_start AT TIME ZONE 'America/Chicago', 'MM-DD HH24:MI')) || ' '
                        || max(extract(epoch FROM period_end - period_start)::int / 3600) || 'h '
                        || max(result->>'days') || ' days, total '
                        || max((result->>'total')::int) || ' = ' || (SELECT sum((result->>'total')::int)
                             FROM coord.runs WHERE app = 'dal_daily' AND current AND period_start < '2026-11-02 06:00Z')
                   FROM coord.runs WHERE app = 'dal_weekly' AND current")
  alert=$(s2_q "SELECT count(*) || ' ' || bool_and(a.cleared_at IS NOT NULL)
                       || ' ' || bool_and(a.raised_at > r.period_end + interval '3 hours')
                       || ' ' || bool_and(a.cleared_at <= r.finished_at
                                          AND a.cleared_at > r.finished_at - interval '1 second')
                       || ' open ' || (SELECT count(*) FROM coord.alerts WHERE cleared_at IS NULL AND app LIKE 'dal%')
                  FROM coord.alerts AS a JOIN coord.runs AS r USING (app, period_start)
                 WHERE a.app = 'dal_weekly' AND a.kind = 'deadline' AND r.attempt_no = 1")
  heard=$(grep -c "heard: \['{\"app\" *: *\"dal_weekly\".*\"kind\" *: *\"deadline\"}'\]" "$out" || true)
  heard="$heard $(grep -c 'alerts of dal_weekly now 1; notifications since: \[\]' "$out" || true)"
  # which runs have a second attempt, and that the first attempts are kept with their results
  rerun=$(s2_q "SELECT string_agg(app || ' ' || n2 || '/' || n1 || ' ' || b1 || '>' || b2, ', ' ORDER BY app) FROM (
                  SELECT app, count(*) FILTER (WHERE attempt_no = 2 AND current) AS n2,
                         count(*) FILTER (WHERE attempt_no = 1 AND NOT current) AS n1,
                         max(COALESCE(result->>'broken', (result->>'feed' = 'broken')::int::text))
                           FILTER (WHERE attempt_no = 1) AS b1,
                         max(COALESCE(result->>'broken', (result ? 'feed')::int::text)) FILTER (WHERE attempt_no = 2) AS b2
                    FROM coord.runs AS r WHERE app LIKE 'dal%' AND state = 'done'
                     AND EXISTS (SELECT FROM coord.runs AS x WHERE x.app = r.app AND x.period_start = r.period_start
                                    AND x.attempt_no = 2)
                   GROUP BY app) AS x")
  rerun="$rerun; max attempt $(s2_q "SELECT max(attempt_no) FROM coord.runs WHERE app LIKE 'dal%'")"
  rerun="$rerun; Thu only $(s2_q "SELECT bool_and(period_start >= '2026-10-29 05:00Z' AND period_start < '2026-10-30 05:00Z')
                                    FROM coord.runs WHERE app = 'dal_hits' AND attempt_no = 2")"
  # dependency order: the new daily run created once the last new hourly run
  # was done, the new weekly run once the new daily run was (created_at is
  # the start of the completing transaction, finished_at a moment later)
  order=$(s2_q "WITH h AS (SELECT finished_at, row_number() OVER (ORDER BY finished_at DESC) AS n
                              FROM coord.runs WHERE app = 'dal_hits' AND attempt_no = 2)
                SELECT d.created_at <= (SELECT finished_at FROM h WHERE n = 1)
                   AND d.created_at > (SELECT finished_at FROM h WHERE n = 2)
                   AND w.created_at <= d.finished_at AND w.created_at > d.created_at
                  FROM coord.runs AS d, coord.runs AS w
                 WHERE d.app = 'dal_daily' AND d.attempt_no = 2 AND w.app = 'dal_weekly' AND w.attempt_no = 2")
  echo "    current dal_hits runs per local day: $days"
  echo "    dal_daily: $daily (runs, done, hours per day);  dal_weekly: $weekly"
  echo "    deadline alert of dal_weekly (count, cleared, raised > 3 h after the week, cleared when done; open): $alert"
  echo "    rerun (app redone/earlier kept, broken before>after): $rerun; in dependency order: $order"

  s2_check "part 2: the Dallas week ran through, and both workers stopped cleanly" '[ $drove = 1 ] && [ $rc_all = 0 ]'
  s2_check "dal_hits: 24 hourly runs a local day, 25 on the fall-back day 2026-11-01" \
    '[ "$days" = "10-26 24, 10-27 24, 10-28 24, 10-29 24, 10-30 24, 10-31 24, 11-01 25, 11-02 24" ]'
  s2_check "dal_daily: one run per local day, each over all its hourly runs (25 on 11-01)" \
    '[ "$daily" = "8 8 24,24,24,24,24,24,25,24" ]'
  s2_check "dal_weekly: one run, for the local week from Mon 10-26 00:00 (169 hours), over its 7 days" \
    '[[ "$weekly" =~ ^"1 done 10-26 00:00 169h 7 days, total "([0-9]+)" = "([0-9]+)$ ]] \
       && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ]'
  s2_check "one deadline alert, raised by a tick while dal_weekly was late, heard by LISTEN, none more; cleared when done" \
    '[ "$alert" = "1 true true true open 0" ] && [ "$heard" = "1 2" ]'
  s2_check "the rerun of Thu 10-29: its 24 hours, its day and the week redone once each, first attempts kept" \
    '[ "$rerun" = "dal_daily 1/1 24>0, dal_hits 24/24 1>0, dal_weekly 1/1 24>0; max attempt 2; Thu only t" ]'
  s2_check "the rerun in dependency order: new hours, then the new day, then the new week" '[ "$order" = t ]'
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
                 -- created by the complete of one of the week's last two hourly runs:
                 -- created_at is that transaction's start, before its finished_at
                 -- (clock_timestamp); when the last two completes overlap, either
                 -- may commit last, so it is compared with the third-last
                 SELECT b.created_at <= (SELECT finished_at FROM up WHERE n = 1)
                    AND b.created_at > (SELECT finished_at FROM up WHERE n = 3)
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

  s2_tz_part "$host"

  if [ "$S2_FAILED" = 0 ]; then
    echo "S2: ok, $S2_CHECKS checks: 4 apps on $host over one simulated week, 505 runs by 2 workers;" \
         "counters fired by their upstreams' completes, a hung run timed out and retried, bigcounter after the week;" \
         "a Dallas week across the fall-back (25 hourly runs on 2026-11-01), a bad day rerun with its downstream," \
         "a deadline alert raised while late and cleared"
  else
    echo "  worker logs kept in $S2_LOGDIR"
    S2_REPORTED=1
    echo "S2: FAILED, $S2_FAILED of $S2_CHECKS checks failed"
    return 1
  fi
}
