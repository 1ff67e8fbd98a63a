# coord-agent end to end: S2's apps on two hosts and S1's components, all run
# by coord-agent processes from their allow-lists.  Sourced by examples/demo.sh.
#
#   agent_demo         needs the cluster in the PG* environment with pg_coord
#                      installed in the server; (re)creates database
#                      $AGENT_DEMO_DB (default coord_demo_agent) and drops it
#                      at the end.
#
# 1. Builds agent/coord-agent and writes one configuration per host: host
#    tr-oddjob-dal-01 allows adxcheck and retgtcheck, tr-oddjob-dal-02 allows
#    counter and bigcounter (all tasks/app-task.sh), both allow S1's two
#    components (tasks/s1-component.sh).
# 2. Defines S2's four apps across the two hosts (counter and bigcounter on
#    02 depend on the hourly runs of adxcheck and retgtcheck on 01) and starts
#    one agent per host (session-bound claims, queues apps and s1).
# 3. clock.py ticks coord.tick(now) once per simulated hour from Monday 00:00
#    of last ISO week to the current hour (the status grid shows the last
#    day), as fast as the agents keep up: every counter run is created on
#    host 02 by the complete of the later of its two upstream runs on host 01,
#    bigcounter's run by the complete of the week's last hourly run.
# 4. S1's components as jobs on queue s1, for any host: three runs of
#    checksum (procedure 1) and two of histogram (procedure 2) over 8
#    batches; coord-agent status while they hold and wait for their locks.
# 5. coord-agent status --no-color: queues, locks, the apps x periods grid.
# 6. One more run of each component; SIGTERM to both agents while one runs:
#    the agent waits for it, reports it and exits 0.  Then the checks, from
#    coord.runs, S1's tables and the agents' logs (loaded into
#    agent_demo.agent_log).
#
# Prints a report and a last line starting with "agent:"; returns non-zero
# if a check failed.  The clock's simulated hours (169 on a Monday, up to
# 336 on a Sunday) take most of the time: about 55 s for 324 hours on a
# busy two-CPU machine, 90 s for the section.  Settings (environment):
# AGENT_DEMO_DB, AGENT_DEMO_WINDOW (hours the clock may run ahead of the
# runs, default 4), AGENT_DEMO_KEEP=1 (keep the database and the logs),
# PYTHON (a python3 with psycopg2).

# shellcheck shell=bash disable=SC2016,SC2034  # ag_check evals its condition strings later
AG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
AG_ROOT=$(cd "$AG_DIR/../.." && pwd)

agent_demo() {
  # a subshell: its own set -e, EXIT trap and globals, whoever sourced us
  ( agent_demo_run "$@" )
}

ag_q() { psql -qtAX -v ON_ERROR_STOP=1 -d "$AG_DB" -c "$1"; }

ag_table() {   # SQL: psql's aligned output, indented
  psql -qX -v ON_ERROR_STOP=1 -P footer=off -d "$AG_DB" -c "$1" | sed '/^$/d; s/^/      /'
}

ag_check() {   # DESCRIPTION 'SHELL CONDITION': prints ok/FAIL, counts failures
  AG_CHECKS=$((AG_CHECKS + 1))
  if eval "$2"; then
    printf '  ok    %s\n' "$1"
  else
    printf '  FAIL  %s\n' "$1"
    AG_FAILED=$((AG_FAILED + 1))
  fi
}

ag_wait_for() {   # SQL_CONDITION TIMEOUT_S
  [ "$(ag_q "SELECT agent_demo.wait_until(\$c\$$1\$c\$, interval '$2 seconds')")" = t ] && return 0
  echo "  timed out after $2 s waiting for: $1"
  return 1
}

ag_secs() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

# Loads the job lines of the agents' logs into agent_demo.agent_log (afresh).
ag_load_logs() {   # HOST...
  local h tz
  tz=$(date +%z)   # the agents log local time
  ag_q 'TRUNCATE agent_demo.agent_log' >/dev/null
  for h; do
    awk -v host="$h" -v tz="$tz" '
      match($0, / job [0-9]+ (start|end|rejected) task=[^ ]+/) {
        split(substr($0, RSTART + 1, RLENGTH - 1), f, " ")
        outcome = "\\N"
        if (match($0, / outcome=[a-z]+/)) outcome = substr($0, RSTART + 9, RLENGTH - 9)
        printf "%s\t%s %s%s\t%s\t%s\t%s\t%s\n", host, $1, $2, tz, f[2], f[3], substr(f[4], 6), outcome
      }' "$AG_TMP/$h.log"
  done | psql -qX -v ON_ERROR_STOP=1 -d "$AG_DB" \
              -c '\copy agent_demo.agent_log (host, at, job, event, task, outcome) FROM pstdin'
}

ag_cleanup() {   # EXIT_STATUS
  local p
  # an agent's children die with it (PR_SET_PDEATHSIG); whatever they
  # started that still talks to the database ends with DROP DATABASE (FORCE)
  for p in "${AG_PIDS[@]}"; do
    { kill -KILL "$p" && wait "$p"; } 2>/dev/null || true   # (no "Killed" notice)
  done
  if [ "${AGENT_DEMO_KEEP:-0}" = 1 ]; then
    echo "  kept: database $AG_DB, logs in $AG_TMP"
    return
  fi
  psql -qX -d postgres -c 'SET client_min_messages = warning' \
       -c "DROP DATABASE IF EXISTS $AG_DB WITH (FORCE)" >/dev/null 2>&1 || true
  if [ "$1" = 0 ]; then
    rm -rf "$AG_TMP"
  else
    echo "  agent logs kept in $AG_TMP"
    [ -n "${AG_REPORTED:-}" ] || echo "agent: FAILED, stopped by an error after $AG_CHECKS checks"
  fi
}

# The configuration of one host's agent: its allow-list.
ag_write_config() {   # HOST APP...
  local host=$1 app tasks=$AG_DIR/tasks
  shift
  {
    echo "# coord-agent on $host (written by examples/agent/demo_section.sh)"
    echo "dbname = dbname=$AG_DB application_name=coord-agent:$host"
    echo "concurrency = 4"
    echo "# the S1 tasks use psql with the agent's PG* settings"
    echo "pass_env = PG*"
    echo "grace = 20s"
    echo "timeout = 2m"
    for app; do
      printf '\n[task %s]\ncommand = %s\ntimeout = 30s\n' "$app" "'$tasks/app-task.sh'"
    done
    printf '\n[task s1-checksum]\ncommand = %s checksum 1 150\nenv = S1_LOGDIR=%s\n' \
      "'$tasks/s1-component.sh'" "$AG_TMP/s1"
    printf '\n[task s1-histogram]\ncommand = %s histogram 2 400\nenv = S1_LOGDIR=%s\n' \
      "'$tasks/s1-component.sh'" "$AG_TMP/s1"
  } >"$AG_TMP/$host.conf"
  chmod go-w "$AG_TMP/$host.conf"   # the agent refuses a file others may write
}

agent_demo_run() {
  set -euo pipefail
  AG_DB=${AGENT_DEMO_DB:-coord_demo_agent}
  AG_WINDOW=${AGENT_DEMO_WINDOW:-4}
  PYTHON=${PYTHON:-/usr/bin/python3}
  AG_TMP=$(mktemp -d /tmp/agent_demo.XXXXXX)
  AG_CHECKS=0 AG_FAILED=0
  AG_PIDS=()
  trap 'ag_cleanup $?' EXIT
  local agent=$AG_ROOT/agent/coord-agent h1=tr-oddjob-dal-01 h2=tr-oddjob-dal-02
  mkdir -p "$AG_TMP/s1"

  # ------------------------------------------------------------ 1. build, configure
  make -s -C "$AG_ROOT/agent" >/dev/null
  ag_write_config $h1 adxcheck retgtcheck
  ag_write_config $h2 counter bigcounter
  echo "  1. $("$agent" --version) built (make -C agent); one allow-list per host:"
  local h
  for h in $h1 $h2; do
    printf '      %s.conf: %s\n' "$h" \
      "$(sed -n 's/^\[task \(.*\)\]$/\1/p' "$AG_TMP/$h.conf" | paste -sd' ')"
  done
  echo "      the apps run tasks/app-task.sh, S1's components tasks/s1-component.sh; in $h2.conf:"
  sed -n '/^\[task counter\]/,/^$/p; /^\[task s1-histogram\]/,$p' "$AG_TMP/$h2.conf" |
    sed "/^$/d; s|$AG_DIR|examples/agent|; s|$AG_TMP|\$TMP|; s/^/        | /"

  # ------------------------------------------------------------ 2. apps, agents
  local first last hours
  psql -qX -v ON_ERROR_STOP=1 -d postgres -c 'SET client_min_messages = warning' \
       -c "DROP DATABASE IF EXISTS $AG_DB WITH (FORCE)" -c "CREATE DATABASE $AG_DB" >/dev/null
  ag_q 'CREATE EXTENSION pg_coord' >/dev/null
  psql -qX -v ON_ERROR_STOP=1 -d "$AG_DB" -f "$AG_DIR/schema.sql" >/dev/null
  psql -qX -v ON_ERROR_STOP=1 -d "$AG_DB" -f "$AG_ROOT/examples/s1/schema.sql" >/dev/null
  # from Monday 00:00 of last ISO week to the current hour (UTC): a whole
  # week for bigcounter, and runs in the last day for the status grid
  IFS='|' read -r first last hours < <(ag_q "
    SELECT to_char(f, 'YYYY-MM-DD\"T\"HH24:MI\"Z\"'), to_char(l, 'YYYY-MM-DD\"T\"HH24:MI\"Z\"'),
           extract(epoch FROM l - f)::int / 3600 + 1
      FROM (SELECT date_trunc('week', now() AT TIME ZONE 'UTC') - interval '7 days' AS f,
                   date_trunc('hour', now() AT TIME ZONE 'UTC') AS l) AS t")
  ag_q "
    SELECT coord.define_app('adxcheck', 'hourly', host => '$h1',
                            catchup_from => '$first', conf => '{\"table\": \"adx_events\"}');
    SELECT coord.define_app('retgtcheck', 'hourly', host => '$h1',
                            catchup_from => '$first', conf => '{\"table\": \"retgt_events\"}');
    SELECT coord.define_app('counter', 'hourly', '{\"adxcheck\": \"hourly\", \"retgtcheck\": \"hourly\"}',
                            host => '$h2', catchup_from => '$first');
    SELECT coord.define_app('bigcounter', 'weekly', '{\"adxcheck\": \"hourly\", \"retgtcheck\": \"hourly\"}',
                            host => '$h2', catchup_from => '$first');" >/dev/null
  echo "  2. S2's apps on two hosts (coord.define_app), runs from $first:"
  ag_table "SELECT name, COALESCE(starts, '-') AS starts, depends, host, queue FROM coord.app_defs
             ORDER BY depends <> '{}', name"
  echo "     one agent per host, each in the background:"
  for h in $h1 $h2; do
    PGDATABASE=$AG_DB setsid "$agent" -f "$AG_TMP/$h.conf" --host "$h" --queue apps,s1 \
      >"$AG_TMP/$h.log" 2>&1 &
    AG_PIDS+=($!)
    echo "      coord-agent -f $h.conf --host $h --queue apps,s1     (pid $!)"
  done
  ag_wait_for "(SELECT count(*) = 2 FROM pg_stat_activity WHERE datname = current_database()
                  AND application_name LIKE 'coord-agent:%')" 10

  # ------------------------------------------------------------ 3. the clock
  echo "  3. the clock (clock.py): coord.tick(now) once per simulated hour, $first to $last ($hours ticks),"
  echo "     as fast as the agents keep up (at most $AG_WINDOW hours ahead of the runs all done); runs done per day:"
  local t0=$EPOCHREALTIME clocked=0 clock_s
  PGDATABASE=$AG_DB "$PYTHON" "$AG_DIR/clock.py" "$first" "$last" "$AG_WINDOW" && clocked=1
  clock_s=$(ag_secs "$t0")
  ag_load_logs $h1 $h2
  echo "     ($clock_s s for $hours ticks and $(ag_q 'SELECT count(*) FROM coord.app_runs') runs)"
  echo "     the first two hours, in ms after each hour's tick: each counter run (on $h2) is created"
  echo "     by the complete of the later of its two upstream runs (on $h1), in the same transaction:"
  ag_table "
    SELECT to_char(r.period_start, 'Dy HH24:MI') AS period, r.app, l.host AS \"ran on\", r.job_id AS job,
           round(extract(epoch FROM r.created_at - t.at) * 1000) AS created,
           round(extract(epoch FROM l.at - t.at) * 1000) AS started,
           round(extract(epoch FROM r.finished_at - t.at) * 1000) AS done,
           r.result -> 'rows' AS rows, r.result -> 'upstream' AS upstream
      FROM coord.app_runs AS r
      JOIN agent_demo.ticks AS t ON t.sim = r.period_start
      LEFT JOIN agent_demo.agent_log AS l ON l.job = r.job_id AND l.event = 'start'
     WHERE r.period_start < timestamptz '$first' + interval '2 hours' AND r.app <> 'bigcounter'
     ORDER BY r.period_start, r.finished_at, r.app"
  echo "     bigcounter's run for the week from $first, created by the complete of the week's last hourly run:"
  ag_table "
    SELECT u.app || ' ' || to_char(u.period_start, 'Dy HH24:MI') || ' (job ' || u.job_id || ')'
             AS \"created by the complete of\",
           l.host AS \"ran on\", r.job_id AS job, r.result - 'app' - 'period' - 'host' AS result
      FROM coord.app_runs AS r
      LEFT JOIN agent_demo.agent_log AS l ON l.job = r.job_id AND l.event = 'start',
           LATERAL (SELECT * FROM coord.app_runs AS u
                     WHERE u.app IN ('adxcheck', 'retgtcheck')
                       AND u.period_start >= r.period_start AND u.period_start < r.period_end
                     ORDER BY u.finished_at DESC LIMIT 1) AS u
     WHERE r.app = 'bigcounter'"
  echo "     the end of that week, coord.grid(Sun 00:00, Mon 01:00):"
  ag_q "SELECT * FROM coord.grid(timestamptz '$first' + interval '6 days', timestamptz '$first' + interval '7 days 1 hour', NULL)" |
    sed 's/^/      | /'

  # ------------------------------------------------------------ 4. S1
  ag_q "INSERT INTO s1.batches (batch, roundtrip) SELECT b, 1 FROM generate_series(101, 108) AS b" >/dev/null
  ag_q "SELECT count(*) FROM coord.enqueue_many('s1', ARRAY['{\"task\": \"s1-checksum\"}'::jsonb,
          '{\"task\": \"s1-checksum\"}', '{\"task\": \"s1-checksum\"}',
          '{\"task\": \"s1-histogram\"}', '{\"task\": \"s1-histogram\"}'])" >/dev/null
  echo "  4. S1's components as agent tasks: 8 batches (B101..B108) in the index; on queue s1, for any host:"
  echo "     3 jobs {\"task\": \"s1-checksum\"} (procedure 1, 150 ms a batch) and 2 {\"task\": \"s1-histogram\"}"
  echo "     (procedure 2: the index lock through every batch, 400 ms each)"
  local waited=0 status_mid
  ag_wait_for "EXISTS (SELECT FROM coord.locks WHERE path = '/SBOI/histogram' AND NOT granted)
               AND EXISTS (SELECT FROM coord.locks WHERE path LIKE '/histogram/B%' AND granted)" 20 && waited=1
  # (a busy machine may be slow to start status: look again while the
  # histogram jobs still run)
  local tries=0
  while :; do
    status_mid=$("$agent" -d "dbname=$AG_DB" status --no-color 2>&1) || true
    tries=$((tries + 1))
    grep -q '/SBOI/histogram .* waiting' <<<"$status_mid" && break
    if [ $tries = 3 ] || [ "$(ag_q "SELECT count(*) FROM coord.jobs WHERE payload ->> 'task' = 's1-histogram'
                                         AND state <> 'done'")" != 2 ]; then break; fi
  done
  echo "     coord-agent status while they run (Queues, Running jobs, Locks):"
  sed -n '/^Queues/,/^Apps/p' <<<"$status_mid" | sed '/^Apps/d; /^$/d; s/^/      | /'
  ag_wait_for "NOT EXISTS (SELECT FROM coord.jobs WHERE queue = 's1' AND state <> 'done')" 60 || true
  echo "     what each job did (s1.attempts: batch locks held, and their fencing tokens):"
  ag_table "
    SELECT j.id AS job, j.payload ->> 'task' AS task, split_part(j.result ->> 'worker', '.', 1) AS host,
           COALESCE(string_agg(regexp_replace(a.path, '^/[a-z]+/', '') || '#' || a.token, ' ' ORDER BY a.id), '-')
             AS \"stored batches#token\"
      FROM coord.jobs AS j
      LEFT JOIN s1.attempts AS a ON a.worker = j.result ->> 'worker'
     WHERE j.queue = 's1' GROUP BY j.id, j.payload, j.result ORDER BY j.id"
  echo "     the histogram jobs' logs:"
  # (procedure 2 takes the index lock once more before it finds nothing left)
  grep -l 'component histogram' "$AG_TMP"/s1/*.log 2>/dev/null | xargs -r grep -h -E 'holding|released|nothing left' |
    sort | awk '/holding/ && seen[$2]++ { next } /after 0 batches/ { next } { print }' | sed 's/^/      | /'

  # ------------------------------------------------------------ 5. status
  local status_end status_rc=0
  status_end=$("$agent" -d "dbname=$AG_DB" status --no-color 2>&1) || status_rc=$?
  echo "  5. coord-agent -d dbname=$AG_DB status --no-color"
  sed 's/^/      | /' <<<"$status_end"

  # ------------------------------------------------------------ 6. SIGTERM, checks
  # one more run of each component over 4 new batches; SIGTERM while the
  # histogram job works: its agent claims nothing more, waits for its running
  # jobs and reports them, then exits
  local drain_job drain_host p rc rcs=() stop_t0
  ag_q "INSERT INTO s1.batches (batch, roundtrip) SELECT b, 1 FROM generate_series(109, 112) AS b" >/dev/null
  ag_q "SELECT coord.enqueue('s1', '{\"task\": \"s1-checksum\"}')" >/dev/null
  drain_job=$(ag_q "SELECT coord.enqueue('s1', '{\"task\": \"s1-histogram\"}')")
  ag_wait_for "EXISTS (SELECT FROM s1.attempts WHERE worker LIKE '%.job$drain_job')" 30
  drain_host=$(ag_q "SELECT split_part(worker, '.', 1) FROM s1.attempts WHERE worker LIKE '%.job$drain_job' LIMIT 1")
  stop_t0=$EPOCHREALTIME
  kill -TERM "${AG_PIDS[@]}"
  for p in "${AG_PIDS[@]}"; do rc=0; wait "$p" || rc=$?; rcs+=("$rc"); done
  AG_PIDS=()
  ag_load_logs $h1 $h2
  echo "  6. 4 more batches (B109..B112), one more job of each component; SIGTERM to both agents while"
  echo "     the histogram job ($drain_job, on $drain_host) works: exit status ${rcs[*]} after $(ag_secs "$stop_t0") s; they logged:"
  grep -h -E "SIGTERM|stopped|job ($((drain_job - 1))|$drain_job) " "$AG_TMP/$h1.log" "$AG_TMP/$h2.log" | sort |
    sed 's/^/      | /'
  echo "     jobs started, per host:"
  ag_table "SELECT host, string_agg(task || ' ' || n, ', ' ORDER BY task) AS \"started (task, jobs)\"
              FROM (SELECT host, task, count(*) AS n FROM agent_demo.agent_log WHERE event = 'start'
                     GROUP BY host, task) AS l GROUP BY host ORDER BY host"

  local per_app once host_ok ends counter_ok big big_ok s1_ok hist_ok s1_jobs left drained
  # runs per app (done/all)
  per_app=$(ag_q "SELECT string_agg(app || ' ' || d || '/' || n, ', ' ORDER BY app) FROM (
                    SELECT app, count(*) AS n, count(*) FILTER (WHERE state = 'done') AS d
                      FROM coord.runs GROUP BY app) AS r")
  # the agents' logs: one start for each run's job, and no other start of an app's task
  once=$(ag_q "SELECT bool_and(n = 1) AND sum(n) = (SELECT count(*) FROM agent_demo.agent_log AS l
                                                     JOIN coord.app_defs AS d ON d.name = l.task
                                                    WHERE l.event = 'start')
                 FROM (SELECT count(l.job) AS n FROM coord.app_runs AS r
                         LEFT JOIN agent_demo.agent_log AS l ON l.job = r.job_id AND l.event = 'start'
                        GROUP BY r.app, r.period_start) AS x")
  # each app's runs were started by the agent of the app's host (the logs),
  # and ran there (the COORD_HOST the task put in its result)
  host_ok=$(ag_q "SELECT bool_and(l.host = d.host) FROM agent_demo.agent_log AS l
                    JOIN coord.app_defs AS d ON d.name = l.task WHERE l.event = 'start'")
  host_ok+=" $(ag_q "SELECT bool_and(result ->> 'host' = host) FROM coord.app_runs")"
  # every job that started ended done; nothing rejected
  ends=$(ag_q "SELECT count(*) FILTER (WHERE event = 'start') = count(*) FILTER (WHERE event = 'end' AND outcome = 'done')
                      AND count(*) FILTER (WHERE event = 'rejected') = 0 FROM agent_demo.agent_log")
  # each counter run was created by the transaction that completed the later
  # of its two upstream runs (its created_at is that transaction's start,
  # before the run's finished_at: within 1 s of it, no tick in between), with
  # both upstream results in its payload (so both were done)
  counter_ok=$(ag_q "
    SELECT count(*) FILTER (WHERE c.created_at <= u.last AND c.created_at > u.last - interval '1 second'
                              AND c.result -> 'upstream' = '{\"adxcheck\": 1, \"retgtcheck\": 1}') || ' ' || count(*)
      FROM coord.app_runs AS c,
           LATERAL (SELECT max(x.finished_at) AS last FROM coord.app_runs AS x
                     WHERE x.app IN ('adxcheck', 'retgtcheck') AND x.period_start = c.period_start) AS u
     WHERE c.app = 'counter'")
  big=$(ag_q "SELECT count(*) || ' ' || string_agg(state || ' ' || (result -> 'upstream')::text, ',')
                FROM coord.runs WHERE app = 'bigcounter'")
  # created by the complete of the last of the week's 336 hourly runs
  big_ok=$(ag_q "
    SELECT b.created_at <= max(u.finished_at) AND b.created_at > max(u.finished_at) - interval '1 second'
           AND count(*) = 336 AND bool_and(u.state = 'done')
      FROM coord.app_runs AS b, coord.app_runs AS u
     WHERE b.app = 'bigcounter' AND u.app IN ('adxcheck', 'retgtcheck')
       AND u.period_start >= b.period_start AND u.period_start < b.period_end
     GROUP BY b.created_at")
  # S1: per component, every batch stored once, by an agent's job, with the
  # newest fencing token of its batch lock; no attempt rejected or unfinished
  s1_ok=$(ag_q "
    SELECT string_agg(component || ' ' || stored || ' ' || ok, ', ' ORDER BY component) FROM (
      SELECT r.component, count(*) || '/' || (SELECT count(*) FROM s1.batches) AS stored,
             bool_and(coord.fence_ok(s1.batch_path(r.component, r.batch, r.roundtrip), r.token)
                      AND r.worker LIKE 'tr-oddjob-dal-0_.job%') AS ok
        FROM s1.results AS r GROUP BY r.component) AS c")
  s1_ok+=" $(ag_q "SELECT count(*) = count(*) FILTER (WHERE outcome = 'stored') FROM s1.attempts")"
  s1_jobs=$(ag_q "SELECT count(*) FILTER (WHERE state = 'done') || '/' || count(*) FROM coord.jobs WHERE queue = 's1'")
  # procedure 2: one histogram job stored every batch, the other none
  hist_ok=$(ag_q "SELECT string_agg(result ->> 'stored', ' ' ORDER BY (result ->> 'stored')::int)
                    FROM coord.jobs WHERE queue = 's1' AND payload ->> 'task' = 's1-histogram' AND id <> $drain_job")
  # the drained job: done with its 4 batches; its agent waited for 1 job
  drained=$(ag_q "SELECT state || ' ' || (result ->> 'stored') FROM coord.jobs WHERE id = $drain_job")
  grep -q -E 'SIGTERM: .* for [1-9][0-9]* running job' "$AG_TMP/$drain_host.log" && drained+=" waited"
  left=$(ag_q "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
                 AND (application_name LIKE 'coord-agent:%' OR application_name LIKE 's1:%')")

  echo "     runs (done/all): $per_app"
  ag_check "the clock ran $hours simulated hours; every run of every app done" \
    '[ $clocked = 1 ] && [ "$per_app" = "adxcheck $hours/$hours, bigcounter 1/1, counter $hours/$hours, retgtcheck $hours/$hours" ]'
  ag_check "every run executed exactly once (one start in the agents' logs for each run's job, no other)" \
    '[ "$once" = t ]'
  ag_check "adxcheck and retgtcheck ran only on $h1, counter and bigcounter only on $h2 (agent logs and results agree)" \
    '[ "$host_ok" = "t t" ]'
  ag_check "every counter run created by the complete of its later upstream run (on the other host), with both results" \
    '[ "$counter_ok" = "$hours $hours" ]'
  ag_check "one bigcounter run, created by the complete of the week's last hourly run, with 168 + 168 upstream results" \
    '[ "$big" = "1 done {\"adxcheck\": 168, \"retgtcheck\": 168}" ] && [ "$big_ok" = t ]'
  ag_check "S1: 7 component jobs done by the agents; each batch stored once per component under its lock (newest token)" \
    '[ "$s1_jobs" = 7/7 ] && [ "$s1_ok" = "checksum 12/12 true, histogram 12/12 true t" ]'
  ag_check "S1 procedure 2: one histogram job held /SBOI/histogram through all 8 batches while the other waited, then found none" \
    '[ $waited = 1 ] && [ "$hist_ok" = "0 8" ]'
  ag_check "coord-agent status showed queues, running jobs, held and awaited locks, and the apps grid" \
    '[ $status_rc = 0 ] && grep -q "^Running jobs" <<<"$status_mid" && grep -q "/SBOI/histogram .* waiting" <<<"$status_mid" &&
     grep -q "^Apps" <<<"$status_end" && grep -q "^  counter  .*#" <<<"$status_end"'
  ag_check "SIGTERM: the agent running job $drain_job waited for it and completed it (4 batches); both exited 0, no session left" \
    '[ "$drained" = "done 4 waited" ] && [ "${rcs[*]}" = "0 0" ] && [ "$left" = 0 ]'
  ag_check "every job started ended done: no failure, retry or rejection in the agents' logs" '[ "$ends" = t ]'

  if [ "$AG_FAILED" = 0 ]; then
    echo "agent: ok, $AG_CHECKS checks: 2 coord-agents ran $(ag_q 'SELECT count(*) FROM coord.app_runs') app runs" \
         "over $hours simulated hours ($clock_s s), each on its app's host, bigcounter after the week," \
         "and 7 S1 component jobs under their locks"
  else
    AG_REPORTED=1
    echo "agent: FAILED, $AG_FAILED of $AG_CHECKS checks failed"
    return 1
  fi
}
