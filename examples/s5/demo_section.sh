# S5 end to end, with real worker processes: sourced by examples/demo.sh and
# test/crash/s5_events.sh.
#
#   s5_demo [quick]    needs the cluster in the PG* environment with pg_coord
#                      installed in the server; (re)creates database $S5_DB
#                      (default coord_demo_s5) with pg_coord and schema s5,
#                      and drops it again at the end (kept after a failure,
#                      or with S5_KEEP=1).
#
# An application server's scheduler: three recurring events on queue
# 'events' -- heartbeat every 2 s (fixed delay: 2 s after each run
# finished), report every 3 s (fixed rate: on a 3 s grid) and cleanup by
# cron '* * * * *' (every minute, on the minute, UTC) -- and three worker
# processes (worker.py) that claim their instances session-bound.  Worker w3
# "crashes" right after claiming its second event: it hangs holding the
# claim and is SIGKILLed.  The event must run again on another worker within
# 1.5 s (the claim ended with w3's session), never two runs of one event at
# once, every schedule must have exactly one live instance whenever
# coord.jobs is sampled (every 20 ms), each run must put the next instance
# on (in the transaction that completed it), and fixed-delay runs must start
# at least `every` after the previous one finished.  The full demo also waits
# (at most about a minute) for the cron event's first run at a minute
# boundary; `quick`, for the test suite, does not wait for it and only checks
# that its instance is on a minute boundary.
#
# Prints a report with its checks and a last line starting with "S5:";
# returns non-zero if a check failed.  Worker logs go to a temporary
# directory, kept when a check fails.  Settings (environment): S5_DB,
# S5_KEEP=1 (keep the database), PYTHON (a python3 with psycopg2).

# shellcheck shell=bash disable=SC2016,SC2034  # s5_check evals its condition strings later
S5_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

s5_demo() {
  # a subshell: its own set -e, EXIT trap and globals, whoever sourced us
  ( s5_demo_run "$@" )
}

s5_q() { psql -qtAX -v ON_ERROR_STOP=1 -d "$S5_DB" -c "$1"; }

s5_check() {   # DESCRIPTION 'SHELL CONDITION': prints ok/FAIL, counts failures
  S5_CHECKS=$((S5_CHECKS + 1))
  if eval "$2"; then
    printf '  ok    %s\n' "$1"
  else
    printf '  FAIL  %s\n' "$1"
    S5_FAILED=$((S5_FAILED + 1))
  fi
}

# Waits until an SQL condition is true, polled inside the server every ms.
s5_wait_for() {   # SQL_CONDITION TIMEOUT_S
  [ "$(s5_q "SELECT s5.wait_until(\$c\$$1\$c\$, interval '$2 seconds')")" = t ] && return 0
  echo "    timed out after $2 s waiting for: $1"
  return 1
}

s5_now() { date +%H:%M:%S.%3N; }

s5_note() {   # MESSAGE: into the demo's own log, shown merged with the workers' logs
  printf '%s demo %s\n' "$(s5_now)" "$1" >>"$S5_LOGDIR/demo.log"
}

# Starts a worker in its own process group.
s5_start() {   # NAME [worker options]
  local name=$1
  shift
  PGDATABASE=$S5_DB setsid "$PYTHON" "$S5_DIR/worker.py" -n "$name" "$@" >"$S5_LOGDIR/$name.log" 2>&1 &
  S5_PID[$name]=$!
}

# SIGTERM (a worker finishes the event it runs, then exits 0), and waits;
# false if one still runs after DEADLINE_S.  Exit codes land in S5_RC[name].
s5_stop() {   # DEADLINE_S NAME...
  local limit=$1 name deadline rc
  shift
  for name; do kill -TERM "${S5_PID[$name]}" 2>/dev/null || true; done
  deadline=$((SECONDS + limit))
  for name; do
    while kill -0 "${S5_PID[$name]}" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
    if kill -0 "${S5_PID[$name]}" 2>/dev/null; then
      echo "    $name still running $limit s after SIGTERM"
      return 1
    fi
    rc=0; { wait "${S5_PID[$name]}"; } 2>/dev/null || rc=$?
    S5_RC[$name]=$rc
    unset 'S5_PID[$name]'
  done
}

s5_cleanup() {   # EXIT_STATUS: kills what still runs; drops the database, or keeps it and the logs
  local name
  # the watcher's backend would outlive its psql: stop its loop from inside
  [ -z "${S5_PID[watch]:-}" ] ||
    s5_q "INSERT INTO s5.watch_stop VALUES (true) ON CONFLICT DO NOTHING" >/dev/null 2>&1 || true
  for name in "${!S5_PID[@]}"; do
    kill -KILL -- "-${S5_PID[$name]}" 2>/dev/null || true
  done
  if [ "$1" = 0 ]; then
    rm -rf "$S5_LOGDIR"
    if [ "${S5_KEEP:-0}" != 1 ]; then
      psql -qX -d postgres -c 'SET client_min_messages = warning' \
           -c "DROP DATABASE IF EXISTS $S5_DB WITH (FORCE)" >/dev/null 2>&1 || true
    fi
  elif [ -z "${S5_REPORTED:-}" ]; then   # stopped by an error before the report's end
    echo "  worker logs kept in $S5_LOGDIR, database $S5_DB kept"
    echo "S5: FAILED, stopped by an error after $S5_CHECKS checks"
  fi
}

s5_psql_table() {   # SQL: psql's aligned output, indented
  psql -qX -P footer=off -d "$S5_DB" -c "$1" | sed '/^$/d; s/^/      /'
}

s5_demo_run() {
  set -euo pipefail
  local quick=0
  [ "${1:-}" = quick ] && quick=1
  S5_DB=${S5_DB:-coord_demo_s5}
  PYTHON=${PYTHON:-/usr/bin/python3}
  S5_LOGDIR=$(mktemp -d /tmp/s5_demo.XXXXXX)
  S5_CHECKS=0 S5_FAILED=0
  declare -gA S5_PID=() S5_RC=()
  trap 's5_cleanup $?' EXIT

  local min_runs=5 victim=w3
  [ $quick = 1 ] && min_runs=4

  psql -qX -v ON_ERROR_STOP=1 -d postgres -c 'SET client_min_messages = warning' \
       -c "DROP DATABASE IF EXISTS $S5_DB WITH (FORCE)" -c "CREATE DATABASE $S5_DB" >/dev/null
  s5_q 'CREATE EXTENSION pg_coord' >/dev/null
  psql -qX -v ON_ERROR_STOP=1 -d "$S5_DB" -f "$S5_DIR/schema.sql" >/dev/null

  # ------------------------------------------------------------ step 1
  echo "  step 1: workers w1, w2, w3 start: LISTEN \"coord:events\", claim session-bound, nothing to run yet;"
  echo "    w3 will hang right after claiming its 2nd event, as if it crashed; a watcher samples coord.jobs every 20 ms"
  echo "    and calls coord.tick() every 200 ms (pg_cron would, once a minute; the instances need no tick)"
  PGDATABASE=$S5_DB setsid psql -qX -v ON_ERROR_STOP=1 -c "CALL s5.watch('events', 120, 20, 10)" \
    >"$S5_LOGDIR/watch.log" 2>&1 &
  S5_PID[watch]=$!
  s5_start w1
  s5_start w2
  s5_start w3 -k 2
  s5_wait_for "(SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE application_name LIKE 's5:worker:%'
                                                                 AND state = 'idle') = 3" 20
  s5_note "w1, w2, w3 are up"

  # ------------------------------------------------------------ step 2
  echo "  step 2: three recurring events on queue 'events' (the payload names the event and how long it runs):"
  local sched_sql
  sched_sql=$(cat <<'SQL'
SELECT coord.schedule('heartbeat', 'events', every => '2 seconds',
                      payload => '{"event": "heartbeat", "ms": 300}');
SELECT coord.schedule('report', 'events', every => '3 seconds', fixed_rate => true,
                      payload => '{"event": "report", "ms": 600}');
SELECT coord.schedule('cleanup', 'events', cron => '* * * * *',
                      payload => '{"event": "cleanup", "ms": 200}');
SQL
  )
  # shellcheck disable=SC2001  # indent every line
  sed 's/^/      /' <<<"$sched_sql"
  s5_note "coord.schedule heartbeat, report, cleanup"
  echo "    coord.schedules, as the transaction that created them sees it: each has one instance (job_id) at its"
  echo "    slot; heartbeat's and report's are due at once, cleanup's at the next minute boundary (cron is UTC):"
  psql -qX -v ON_ERROR_STOP=1 -P footer=off -d "$S5_DB" -1 <<SQL | sed '/^$/d; s/^/      /'
\o /dev/null
$sched_sql
\o
SELECT name, every, cron, fixed_rate, job_id, next_run_at::time(3) AS next_run_at,
       round(extract(epoch FROM next_run_at - now()), 1) AS due_in_s
  FROM coord.schedules ORDER BY name;
SQL
  local cron_slot cron_ok
  IFS='|' read -r cron_slot cron_ok < <(s5_q "
    SELECT next_run_at::time(0), next_run_at = date_trunc('minute', starts_at) + interval '1 minute'
      FROM coord.schedules WHERE name = 'cleanup'")

  # ------------------------------------------------------------ step 3
  # The three race for each instance; on a loaded machine w3 can lose every
  # race for a while.  After 8 s the others are stopped (SIGSTOP) until w3
  # has claimed its second event, and go on (SIGCONT) at once after.
  local deadline=$((SECONDS + 25)) nudge=$((SECONDS + 8)) vline="" stopped="" w
  while [ $SECONDS -lt $deadline ]; do
    vline=$(grep -m1 'hanging' "$S5_LOGDIR/$victim.log" || true)
    [ -n "$vline" ] && break
    kill -0 "${S5_PID[$victim]}" 2>/dev/null || break
    if [ -z "$stopped" ] && [ $SECONDS -ge $nudge ]; then
      for w in w1 w2; do kill -STOP -- "-${S5_PID[$w]}" 2>/dev/null; done
      stopped=1
      s5_note "w3 lost every race for 8 s: w1 and w2 stopped (SIGSTOP) until it claims"
    fi
    sleep 0.01
  done
  if [ -n "$stopped" ]; then
    for w in w1 w2; do kill -CONT -- "-${S5_PID[$w]}" 2>/dev/null; done
    s5_note "w1 and w2 go on (SIGCONT)"
  fi
  if [ -z "$vline" ]; then
    echo "    $victim did not claim a second event within 25 s"
    return 1
  fi
  local t_kill=$EPOCHREALTIME rc=0
  { kill -KILL -- "-${S5_PID[$victim]}"; wait "${S5_PID[$victim]}"; } 2>/dev/null || rc=$?
  S5_RC[$victim]=$rc
  unset 'S5_PID[$victim]'
  s5_note "SIGKILL $victim"
  local vevent vjob
  read -r vevent vjob < <(sed -E 's/.* CLAIMED ([^ ]+) ([0-9]+) .*/\1 \2/' <<<"$vline")
  echo "  step 3: $victim claimed $vevent (job $vjob) and hung; SIGKILLed $(awk -v a="$t_kill" -v b="$(s5_q "
          SELECT extract(epoch FROM started_at) FROM s5.runs WHERE job_id = $vjob AND worker = '$victim'")" \
          'BEGIN { printf "%.0f", (a - b) * 1000 }') ms after its claim"
  s5_wait_for "EXISTS (SELECT FROM s5.runs WHERE job_id = $vjob AND worker <> '$victim' AND finished_at IS NOT NULL)" 10 || true
  s5_q "UPDATE s5.runs SET killed_at = to_timestamp($t_kill) WHERE worker = '$victim' AND finished_at IS NULL" >/dev/null
  local retaker reclaim_ms
  IFS='|' read -r retaker reclaim_ms < <(s5_q "
    SELECT worker, round(extract(epoch FROM started_at - to_timestamp($t_kill)) * 1000)
      FROM s5.runs WHERE job_id = $vjob AND worker <> '$victim' ORDER BY started_at LIMIT 1")
  echo "    the same instance, claimed again by ${retaker:-nobody} ${reclaim_ms:+$reclaim_ms ms after the kill}; the logs around the kill:"
  local t_from t_to
  t_from=$(date -d "@$(awk -v a="$t_kill" 'BEGIN { printf "%.3f", a - 1.5 }')" +%H:%M:%S.%3N)
  t_to=$(s5_now)
  sort -s -k1,1 "$S5_LOGDIR"/w*.log "$S5_LOGDIR/demo.log" |
    awk -v f="$t_from" -v t="$t_to" '$1 >= f && $1 <= t' | sed 's/^/      | /'
  echo "    coord.jobs: the job's second claim (attempt 2) and why the first one ended:"
  s5_psql_table "SELECT id, state, attempt, token, run_at::time(3) AS run_at, last_error
                   FROM coord.jobs WHERE id = $vjob"

  # ------------------------------------------------------------ step 4
  local until_sql="(SELECT count(*) FROM s5.runs WHERE event = 'heartbeat' AND finished_at IS NOT NULL) >= $min_runs
                   AND (SELECT count(*) FROM s5.runs WHERE event = 'report' AND finished_at IS NOT NULL) >= $min_runs"
  local left=""
  if [ $quick = 1 ]; then
    echo "  step 4: w1 and w2 carry on until heartbeat and report have run $min_runs times each"
  else
    left=$(s5_q "SELECT greatest(0, ceil(extract(epoch FROM next_run_at - clock_timestamp())))
                   FROM coord.schedules WHERE name = 'cleanup' AND last_run_at IS NULL")
    echo "  step 4: w1 and w2 carry on until heartbeat and report have run $min_runs times each, and cleanup has run"
    echo "    once at $cron_slot${left:+ (in $left s)}"
    until_sql="$until_sql AND EXISTS (SELECT FROM s5.runs WHERE event = 'cleanup' AND finished_at IS NOT NULL)"
  fi
  # 20 s at most, or until 5 s after the cron slot (at most 60 s after step
  # 2); a line of progress every 10 s
  local budget=20
  if [ $quick = 0 ] && [ -n "$left" ] && [ $((left + 5)) -gt $budget ]; then budget=$((left + 5)); fi
  local give_up=$((SECONDS + budget)) progress=$((SECONDS + 10))
  until_sql="$until_sql AND clock_timestamp() > to_timestamp($t_kill) + interval '4 seconds'"
  while [ "$(s5_q "SELECT $until_sql")" != t ]; do
    if [ $SECONDS -ge $give_up ]; then
      echo "    gave up waiting after $budget s"
      break
    fi
    if [ $SECONDS -ge $progress ]; then
      progress=$((SECONDS + 10))
      echo "    $(s5_now)  runs so far: $(s5_q "
        SELECT string_agg(s.name || ' ' || (SELECT count(*) FROM s5.runs AS r
                                             WHERE r.event = s.name AND r.finished_at IS NOT NULL), ', ' ORDER BY s.name)
               || COALESCE((SELECT '; cleanup is due in ' || ceil(extract(epoch FROM next_run_at - clock_timestamp())) || ' s'
                              FROM coord.schedules WHERE name = 'cleanup' AND last_run_at IS NULL
                               AND next_run_at > clock_timestamp()), '')
          FROM coord.schedules AS s")"
    fi
    sleep 0.2
  done
  if [ $quick = 0 ]; then
    echo "    the cron event's run, from the logs:"
    { grep -h ' cleanup ' "$S5_LOGDIR"/w*.log || true; } | sort -s -k1,1 | sed 's/^/      | /'
  fi

  # ------------------------------------------------------------ step 5
  local stopped_ok=0
  s5_note "SIGTERM w1 w2"
  s5_stop 10 w1 w2 && stopped_ok=1
  s5_q "INSERT INTO s5.watch_stop VALUES (true)" >/dev/null
  local watch_ok=0
  deadline=$((SECONDS + 5))
  while kill -0 "${S5_PID[watch]}" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.02; done
  rc=0; { wait "${S5_PID[watch]}"; } 2>/dev/null || rc=$?
  [ "$rc" = 0 ] && watch_ok=1
  unset 'S5_PID[watch]'
  echo "  step 5: the workers stopped (SIGTERM: each finishes its event); the runs, from s5.runs:"
  s5_psql_table "
    WITH r AS (   -- finished runs, each with the gaps to the previous finished run of its event
      SELECT r.*, r.started_at - lag(r.started_at) OVER w AS start_gap,
             r.started_at - lag(r.finished_at) OVER w AS idle_gap
        FROM s5.runs AS r WHERE r.finished_at IS NOT NULL
      WINDOW w AS (PARTITION BY r.event ORDER BY r.started_at))
    SELECT r.event,
           CASE WHEN s.cron IS NOT NULL THEN 'cron ' || s.cron
                WHEN s.fixed_rate THEN 'every ' || s.every || ', fixed rate'
                ELSE 'every ' || s.every || ', fixed delay' END AS schedule,
           count(*) AS runs,
           (SELECT count(*) FROM s5.runs AS k WHERE k.event = r.event AND k.killed_at IS NOT NULL) AS killed,
           (SELECT string_agg(worker || ':' || n, ' ' ORDER BY worker)
              FROM (SELECT x.worker, count(*) AS n FROM r AS x WHERE x.event = r.event GROUP BY x.worker) AS x) AS by_worker,
           round(avg(extract(epoch FROM r.start_gap)), 2) AS start_to_start_s,
           round(min(extract(epoch FROM r.idle_gap)), 3) AS min_finish_to_start_s,
           round(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM r.started_at - r.slot)) * 1000) AS median_late_ms
      FROM r JOIN coord.schedules AS s ON s.name = r.event
     GROUP BY r.event, s.every, s.cron, s.fixed_rate ORDER BY r.event"
  echo "    (start_to_start: fixed delay = every + run time; fixed rate = every, on a grid; late: start - slot)"

  # ------------------------------------------------------------ checks
  # every figure the checks need, in one query (one psql: cheap on a busy machine)
  local n_runs n_samples sample_bad overlaps lostdup unfinished putback fd_bad fd_min grid_bad cron_runs
  local min_count final ticks cron_instance tick_error
  IFS='|' read -r n_runs n_samples sample_bad overlaps lostdup unfinished putback fd_bad fd_min grid_bad \
                  cron_runs min_count final ticks cron_instance tick_error < <(s5_q "
    SELECT (SELECT count(*) FROM s5.runs),
           (SELECT count(DISTINCT at) FROM s5.samples),
           -- samples with more than one live instance of a schedule, with none, with more than one running
           (SELECT count(*) FILTER (WHERE live > 1) || ' ' || count(*) FILTER (WHERE live = 0)
                   || ' ' || count(*) FILTER (WHERE running > 1) FROM s5.samples),
           -- two runs of one event overlap if each started before the other ended (a
           -- killed run ended when its worker was killed; a run that never ended, never)
           (SELECT count(*) FROM s5.runs AS a JOIN s5.runs AS b
                ON a.event = b.event AND a.id < b.id
               AND a.started_at < COALESCE(b.finished_at, b.killed_at, 'infinity')
               AND b.started_at < COALESCE(a.finished_at, a.killed_at, 'infinity')),
           -- done instances, finished runs, distinct jobs among them, done jobs with
           -- no finished run, finished runs whose job is not done
           (SELECT (SELECT count(*) FROM coord.jobs WHERE origin LIKE 's:%' AND state = 'done')
                   || ' ' || count(*) || ' ' || count(DISTINCT job_id)
                   || ' ' || (SELECT count(*) FROM coord.jobs AS j WHERE j.origin LIKE 's:%' AND j.state = 'done'
                                AND NOT EXISTS (SELECT FROM s5.runs AS r WHERE r.job_id = j.id AND r.finished_at IS NOT NULL))
                   || ' ' || count(*) FILTER (WHERE coord.job_state(job_id) IS DISTINCT FROM 'done')
              FROM s5.runs WHERE finished_at IS NOT NULL),
           -- runs that never finished, and how many of them are the victim's killed one
           (SELECT count(*) || ' ' || count(*) FILTER (WHERE worker = '$victim' AND job_id = $vjob AND killed_at IS NOT NULL)
              FROM s5.runs WHERE finished_at IS NULL),
           -- each finished run put the next instance on, in its own transaction: a
           -- new job, at the slot the schedule's kind says
           (SELECT count(*) || ' ' || count(*) FILTER (WHERE NOT COALESCE(ok, false))
              FROM (SELECT r.next_job_id IS NOT NULL AND r.next_job_id <> r.job_id AND r.next_run_at > r.finished_at
                           AND CASE WHEN s.cron IS NOT NULL THEN r.next_run_at = coord.cron_next(s.cron, r.finished_at)
                                    WHEN s.fixed_rate THEN r.next_run_at > r.slot
                                         AND (extract(epoch FROM r.next_run_at - s.starts_at) * 1000000)
                                             % (extract(epoch FROM s.every) * 1000000) = 0
                                    ELSE r.next_run_at >= r.finished_at + s.every
                                         AND r.next_run_at < r.finished_at + s.every + interval '0.25 seconds' END AS ok
                      FROM s5.runs AS r JOIN coord.schedules AS s ON s.name = r.event
                     WHERE r.finished_at IS NOT NULL) AS x),
           -- fixed delay: a run starts at least every (less 10 ms) after the previous run finished
           g.bad, g.min_gap,
           -- fixed rate: every slot on the grid from starts_at
           (SELECT count(*) FROM s5.runs AS r JOIN coord.schedules AS s ON s.name = r.event
             WHERE s.fixed_rate AND s.every IS NOT NULL
               AND (extract(epoch FROM r.slot - s.starts_at) * 1000000) % (extract(epoch FROM s.every) * 1000000) <> 0),
           -- cron runs, and those at a minute boundary that started within 1 s of it
           (SELECT count(*) || ' ' || count(*) FILTER (WHERE slot = date_trunc('minute', slot)
                                                        AND started_at < slot + interval '1 second')
              FROM s5.runs WHERE event = 'cleanup' AND finished_at IS NOT NULL),
           (SELECT min(n) FROM (SELECT count(*) AS n FROM s5.runs
                                 WHERE event IN ('heartbeat', 'report') AND finished_at IS NOT NULL GROUP BY event) AS c
            HAVING count(*) = 2),
           -- schedules, and those put back on: a live instance, not running, after the last run
           (SELECT count(*) || ' ' || count(*) FILTER (WHERE job_id IS NOT NULL AND NOT running
                                 AND (last_run_at IS NULL OR (last_state = 'done' AND next_run_at > last_run_at)))
              FROM coord.schedules),
           (SELECT count(*) || ' ' || COALESCE(sum(done), 0) || ' ' || count(error) FROM s5.ticks),
           (SELECT j.run_at = date_trunc('minute', j.run_at) AND j.run_at > now() - interval '1 minute'
              FROM coord.schedules AS s JOIN coord.jobs AS j ON j.id = s.job_id WHERE s.name = 'cleanup'),
           (SELECT replace(error, E'\n', ' ') FROM s5.ticks WHERE error IS NOT NULL ORDER BY at LIMIT 1)
      FROM (SELECT count(*) FILTER (WHERE gap < every - interval '10 milliseconds') AS bad,
                   round(min(extract(epoch FROM gap)), 3) AS min_gap
              FROM (SELECT r.started_at - lag(r.finished_at) OVER w AS gap, s.every
                      FROM s5.runs AS r JOIN coord.schedules AS s ON s.name = r.event
                     WHERE s.every IS NOT NULL AND NOT s.fixed_rate
                    WINDOW w AS (PARTITION BY r.event ORDER BY r.started_at)) AS d
             WHERE gap IS NOT NULL) AS g")

  echo "  checks:"
  s5_check "$victim was SIGKILLed right after claiming $vevent (job $vjob); its run never finished" \
    '[ "${S5_RC[$victim]}" = 137 ] && [ "$unfinished" = "1 1" ]'
  s5_check "job $vjob ran again on another worker ($retaker) within 1.5 s of the kill ($reclaim_ms ms)" \
    '[ -n "$reclaim_ms" ] && [ "$reclaim_ms" -ge 0 ] && [ "$reclaim_ms" -le 1500 ]'
  s5_check "no two runs of one event overlapped ($overlaps overlapping pairs in $n_runs runs)" \
    '[ "$overlaps" = 0 ]'
  s5_check "exactly one live instance per schedule in each of $n_samples samples of coord.jobs (>1: ${sample_bad%% *}, 0: $(cut -d' ' -f2 <<<"$sample_bad"))" \
    '[ "$n_samples" -ge 50 ] && [ "$sample_bad" = "0 0 0" ]'
  s5_check "each of the $(cut -d' ' -f1 <<<"$putback") finished runs put the next instance on in its complete's transaction, at the right slot" \
    '[ "$(cut -d" " -f2 <<<"$putback")" = 0 ] && [ "$(cut -d" " -f1 <<<"$putback")" -gt 0 ]'
  s5_check "fixed delay: heartbeat started each run >= 2 s after the previous one finished (shortest gap $fd_min s)" \
    '[ "$fd_bad" = 0 ] && [ -n "$fd_min" ]'
  s5_check "fixed rate: every report slot is on the 3 s grid from its starts_at" '[ "$grid_bad" = 0 ]'
  s5_check "heartbeat and report ran at least $min_runs times each (the fewer: ${min_count:-0})" \
    '[ "${min_count:-0}" -ge $min_runs ]'
  s5_check "no run lost or doubled: $(cut -d' ' -f1 <<<"$lostdup") instances done, $(cut -d' ' -f2 <<<"$lostdup") finished runs of as many distinct jobs" \
    'read -r a b c d e <<<"$lostdup"; [ "$a" = "$b" ] && [ "$b" = "$c" ] && [ "$d" = 0 ] && [ "$e" = 0 ]'
  if [ $quick = 1 ]; then
    s5_check "cleanup (cron) has its instance on a minute boundary; $(cut -d' ' -f1 <<<"$cron_runs") run(s) so far, all on the minute" \
      '[ "$cron_ok" = t ] && [ "$cron_instance" = t ] && [ "$(cut -d" " -f1 <<<"$cron_runs")" = "$(cut -d" " -f2 <<<"$cron_runs")" ]'
  else
    s5_check "cleanup (cron) ran at its minute boundary $cron_slot, within 1 s, and is on again for the next minute" \
      '[ "$cron_ok" = t ] && [ "$cron_instance" = t ] && read -r a b <<<"$cron_runs" && [ "$a" -ge 1 ] && [ "$a" = "$b" ]'
  fi
  s5_check "every schedule was put back on after its last run (last_state done, a live instance at next_run_at)" \
    '[ "$final" = "3 3" ]'
  s5_check "coord.tick, called $(cut -d' ' -f1 <<<"$ticks") times meanwhile, found nothing to repair (done: $(cut -d' ' -f2 <<<"$ticks"), errors: $(cut -d' ' -f3 <<<"$ticks"))" \
    'read -r a b c <<<"$ticks"; [ "$a" -ge 5 ] && [ "$b" = 0 ] && [ "$c" = 0 ]'
  [ -z "$tick_error" ] || echo "        the first error: $tick_error"
  s5_check "w1 and w2 exited 0 on SIGTERM; the watcher ended cleanly" \
    '[ $stopped_ok = 1 ] && [ "${S5_RC[w1]}" = 0 ] && [ "${S5_RC[w2]}" = 0 ] && [ $watch_ok = 1 ]'

  # ------------------------------------------------------------ step 6
  echo "  step 6: coord.schedules at the end:"
  s5_psql_table "SELECT name, queue, every, cron, fixed_rate, next_run_at::time(3) AS next_run_at,
                        last_run_at::time(3) AS last_run_at, last_state, running, job_id
                   FROM coord.schedules ORDER BY name"
  local unsched left_live
  unsched=$(s5_q "SELECT string_agg(coord.unschedule(name)::text, ' ' ORDER BY name) FROM coord.schedules")
  left_live=$(s5_q "SELECT count(*) FROM coord.jobs WHERE origin LIKE 's:%' AND state IN ('scheduled', 'ready', 'running')")
  echo "    coord.unschedule of each: $unsched; live instances left: $left_live"
  [ "${S5_KEEP:-0}" = 1 ] || echo "    (database $S5_DB is dropped at the end; S5_KEEP=1 keeps it)"

  if [ "$S5_FAILED" = 0 ]; then
    echo "S5: ok, $S5_CHECKS checks: 3 recurring events, 3 workers; SIGKILLed $victim's $vevent ran again on $retaker" \
         "after $reclaim_ms ms; no overlapping runs, one live instance per schedule at all $n_samples samples, none lost"
  else
    echo "  worker logs kept in $S5_LOGDIR, database $S5_DB kept"
    S5_REPORTED=1
    echo "S5: FAILED, $S5_FAILED of $S5_CHECKS checks failed"
    return 1
  fi
}
