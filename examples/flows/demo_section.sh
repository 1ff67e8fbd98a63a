# Workflows end to end, with real processes: sourced by examples/demo.sh
# (scenario flows) and test/crash/flows_demo.sh.
#
#   flows_demo         needs the cluster in the PG* environment with pg_coord
#                      installed in the server; (re)creates database $FLOWS_DB
#                      (default coord_demo_flows) with pg_coord and schema
#                      flows, and drops it again at the end (kept after a
#                      failure, or with FLOWS_KEEP=1).
#
# 1. Three workers (worker.py: w1, w2, w3) claim session-bound from queues
#    import, import_report and notify.
# 2. The producer (producer.py) enqueues an import with ONE
#    coord.enqueue_flow: fetch, then clean, geocode and dedupe in parallel,
#    then aggregate, whose handler opens a batch of 1,000 notifications
#    (coord.open_batch, enqueue_many(..., batch => id), coord.seal_batch, all
#    in the transaction of its complete); the batch's callback writes the
#    report.  The producer then coord.await()s the aggregate, and the callback.
# 3. The worker that claims geocode is SIGKILLed while it works on it: the
#    claim ends with its session, and another worker runs geocode again.
# 4. The producer gets the aggregate's result, then the callback's.
# 5. coord-agent runs an export (export.sh, a long external command); the
#    job is cancelled while it runs, and the time from the cancel's commit
#    (the server's clock) to the child's process group gone (a watcher
#    polling /proc every 2 ms) is measured.
# 6. The workers and the agent stop (SIGTERM); the report: each node's claim
#    and end against its parents' ends, the batch's counts, the checks.
#
# Prints a report with its checks and a last line starting with "flows:";
# returns non-zero if a check failed.  About 10 s.  Logs go to a temporary
# directory, kept when a check fails.  Settings (environment): FLOWS_DB,
# FLOWS_KEEP=1 (keep the database), PYTHON (a python3 with psycopg2).

# shellcheck shell=bash disable=SC2016,SC2034  # fl_check evals its condition strings later
FL_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FL_ROOT=$(cd "$FL_DIR/../.." && pwd)

flows_demo() {
  # a subshell: its own set -e, EXIT trap and globals, whoever sourced us
  ( flows_demo_run "$@" )
}

fl_q() { psql -qtAX -v ON_ERROR_STOP=1 -d "$FL_DB" -c "$1"; }

fl_table() {   # SQL: psql's aligned output, indented
  psql -qX -v ON_ERROR_STOP=1 -P footer=off -d "$FL_DB" -c "$1" | sed '/^$/d; s/^/      /'
}

fl_check() {   # DESCRIPTION 'SHELL CONDITION': prints ok/FAIL, counts failures
  FL_CHECKS=$((FL_CHECKS + 1))
  if eval "$2"; then
    printf '  ok    %s\n' "$1"
  else
    printf '  FAIL  %s\n' "$1"
    FL_FAILED=$((FL_FAILED + 1))
  fi
}

# Waits until an SQL condition is true, polled inside the server every ms.
fl_wait_for() {   # SQL_CONDITION TIMEOUT_S
  [ "$(fl_q "SELECT flows.wait_until(\$c\$$1\$c\$, interval '$2 seconds')")" = t ] && return 0
  echo "    timed out after $2 s waiting for: $1"
  return 1
}

fl_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }   # this machine's clock, ms

# Waits until a process has exited, polling every 20 ms; false after DEADLINE_S.
fl_wait_exit() {   # PID DEADLINE_S
  local deadline=$((SECONDS + $2))
  while kill -0 "$1" 2>/dev/null; do
    [ $SECONDS -ge $deadline ] && return 1
    sleep 0.02
  done
}

# The time (ms, this machine's clock) when none of these processes runs any
# more, polling /proc every 2 ms; gives up after 5 s.
fl_watch_gone() {   # PID...
  local p st alive t limit=$(($(fl_ms) + 5000))
  while :; do
    alive=0
    for p; do
      { read -r _ _ st _ <"/proc/$p/stat"; } 2>/dev/null || continue
      [ "$st" != Z ] && alive=1
    done
    t=$(fl_ms)
    { [ $alive = 0 ] || [ "$t" -gt "$limit" ]; } && break
    sleep 0.002
  done
  echo "$t"
}

fl_start_worker() {   # NAME: in its own process group
  PGDATABASE=$FL_DB setsid "$PYTHON" "$FL_DIR/worker.py" -n "$1" >"$FL_TMP/$1.log" 2>&1 &
  FL_PID[$1]=$!
}

# SIGTERM, then waits; false if one still runs after DEADLINE_S.  Exit
# statuses land in FL_RC[name].
fl_stop() {   # DEADLINE_S NAME...
  local limit=$1 name rc
  shift
  for name; do kill -TERM "${FL_PID[$name]}" 2>/dev/null || true; done
  for name; do
    fl_wait_exit "${FL_PID[$name]}" "$limit" || { echo "    $name still running $limit s after SIGTERM"; return 1; }
    rc=0; { wait "${FL_PID[$name]}"; } 2>/dev/null || rc=$?
    FL_RC[$name]=$rc
    unset 'FL_PID[$name]'
  done
}

fl_cleanup() {   # EXIT_STATUS: kills what still runs; drops the database, or keeps it and the logs
  local name
  for name in "${!FL_PID[@]}"; do
    kill -KILL -- "-${FL_PID[$name]}" 2>/dev/null || true
  done
  if [ "$1" = 0 ]; then
    rm -rf "$FL_TMP"
    if [ "${FLOWS_KEEP:-0}" != 1 ]; then
      psql -qX -d postgres -c 'SET client_min_messages = warning' \
           -c "DROP DATABASE IF EXISTS $FL_DB WITH (FORCE)" >/dev/null 2>&1 || true
    fi
  else
    echo "  logs kept in $FL_TMP, database $FL_DB kept"
    [ -n "${FL_REPORTED:-}" ] || echo "flows: FAILED, stopped by an error after $FL_CHECKS checks"
  fi
}

flows_demo_run() {
  set -euo pipefail
  FL_DB=${FLOWS_DB:-coord_demo_flows}
  PYTHON=${PYTHON:-/usr/bin/python3}
  FL_TMP=$(mktemp -d /tmp/flows_demo.XXXXXX)
  FL_CHECKS=0 FL_FAILED=0
  declare -gA FL_PID=() FL_RC=()
  trap 'fl_cleanup $?' EXIT
  local agent=$FL_ROOT/agent/coord-agent customers=1000 file=2026-11.csv

  make -s -C "$FL_ROOT/agent" >/dev/null
  psql -qX -v ON_ERROR_STOP=1 -d postgres -c 'SET client_min_messages = warning' \
       -c "DROP DATABASE IF EXISTS $FL_DB WITH (FORCE)" -c "CREATE DATABASE $FL_DB" >/dev/null
  fl_q 'CREATE EXTENSION pg_coord' >/dev/null
  psql -qX -v ON_ERROR_STOP=1 -d "$FL_DB" -f "$FL_DIR/schema.sql" >/dev/null

  # ------------------------------------------------------------ 1. workers
  echo "  1. three workers (worker.py) w1, w2, w3: each claims session-bound from queues import (the flow's nodes),"
  echo "     import_report (the batch's callback) and notify (its notifications); idle, they LISTEN and poll every 0.1 s"
  fl_start_worker w1
  fl_start_worker w2
  fl_start_worker w3
  fl_wait_for "(SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE application_name LIKE 'flows:worker:%'
                                                                 AND state = 'idle') = 3" 20

  # ------------------------------------------------------------ 2. the flow
  echo "  2. the producer (producer.py) enqueues the import of $file with ONE coord.enqueue_flow call:"
  echo "       fetch --+--> clean   --+"
  echo "               +--> geocode --+--> aggregate ==> a batch of $customers notifications ==> its callback: the report"
  echo "               +--> dedupe  --+"
  echo "     (aggregate's handler opens the batch, enqueues the notifications into it and seals it, in the transaction"
  echo "     of its coord.complete); then it coord.await()s the aggregate, and the callback. It says:"
  PGDATABASE=$FL_DB setsid "$PYTHON" "$FL_DIR/producer.py" "$file" "$customers" >"$FL_TMP/producer.log" 2>&1 &
  FL_PID[producer]=$!
  fl_wait_for "(SELECT count(*) FROM flows.nodes) = 5" 20
  local t
  t=$((SECONDS + 10))   # the producer prints its two lines right after its commit
  while [ "$(wc -l <"$FL_TMP/producer.log")" -lt 2 ] && [ $SECONDS -lt $t ]; do sleep 0.02; done
  sed -n '1,2p' "$FL_TMP/producer.log" | sed 's/^/      | /'
  local enq_line
  enq_line=$(sed -n 2p "$FL_TMP/producer.log")

  # ------------------------------------------------------------ 3. SIGKILL
  local victim vjob t_kill rc
  fl_wait_for "EXISTS (SELECT FROM flows.claims WHERE node = 'geocode')" 20
  victim=$(fl_q "SELECT worker FROM flows.claims WHERE node = 'geocode' ORDER BY claimed_at LIMIT 1")
  t_kill=$EPOCHREALTIME
  rc=0
  { kill -KILL -- "-${FL_PID[$victim]}"; wait "${FL_PID[$victim]}"; } 2>/dev/null || rc=$?
  FL_RC[$victim]=$rc
  unset 'FL_PID[$victim]'
  vjob=$(fl_q "SELECT job_id FROM flows.nodes WHERE name = 'geocode'")
  echo "  3. $victim claimed geocode (job $vjob) and was SIGKILLed $(fl_q "
         SELECT round(extract(epoch FROM to_timestamp($t_kill) - claimed_at) * 1000)
           FROM flows.claims WHERE node = 'geocode' ORDER BY claimed_at LIMIT 1") ms later, while it worked on it"
  fl_wait_for "EXISTS (SELECT FROM flows.results WHERE node = 'geocode')" 20 || true
  local retaker reclaim_ms
  IFS='|' read -r retaker reclaim_ms < <(fl_q "
    SELECT worker, round(extract(epoch FROM claimed_at - to_timestamp($t_kill)) * 1000)
      FROM flows.claims WHERE node = 'geocode' AND worker <> '$victim' ORDER BY claimed_at LIMIT 1")
  echo "     its session ended, and so did its claim: ${retaker:-nobody} claimed geocode again" \
       "${reclaim_ms:+$reclaim_ms ms after the kill} (as soon as it was free); coord.jobs:"
  fl_table "SELECT id, state, attempt, claimed_at::time(3) AS claimed_at, last_error FROM coord.jobs WHERE id = $vjob"

  # ------------------------------------------------------------ 4. the producer's awaits
  local producer_ok=0
  fl_wait_exit "${FL_PID[producer]}" 60 ||
    { echo "    the producer still ran after 60 s: SIGKILL"; kill -KILL "${FL_PID[producer]}" 2>/dev/null || true; }
  rc=0; { wait "${FL_PID[producer]}"; } 2>/dev/null || rc=$?
  [ "$rc" = 0 ] && producer_ok=1
  unset 'FL_PID[producer]'
  echo "  4. the producer's coord.await calls (exit status $rc):"
  sed -n '3,$p' "$FL_TMP/producer.log" | sed 's/^/      | /'

  # ------------------------------------------------------------ 5. cancel under coord-agent
  {
    echo "# coord-agent for the flows demo (written by examples/flows/demo_section.sh)"
    echo "dbname = dbname=$FL_DB application_name=coord-agent:flows"
    echo "concurrency = 2"
    echo "poll = 200ms"
    echo "# export.sh records its run with psql, with the agent's PG* settings"
    echo "pass_env = PG*"
    printf '\n[task export]\ncommand = %s\ntimeout = 5m\n' "'$FL_DIR/export.sh'"
  } >"$FL_TMP/agent.conf"
  chmod go-w "$FL_TMP/agent.conf"   # the agent refuses a file others may write
  PGDATABASE=$FL_DB setsid "$agent" -f "$FL_TMP/agent.conf" --queue exports >"$FL_TMP/agent.log" 2>&1 &
  FL_PID[agent]=$!
  fl_wait_for "EXISTS (SELECT FROM pg_catalog.pg_stat_activity WHERE application_name = 'coord-agent:flows')" 20
  local xjob pids cancelled t0 gone cancel_ms=
  xjob=$(fl_q "SELECT coord.enqueue('exports', '{\"task\": \"export\", \"report\": \"import $file\"}')")
  echo "  5. coord-agent (--queue exports) runs an export of the report, job $xjob {\"task\": \"export\"}: export.sh,"
  echo "     a long external command whose work runs in a child of its own; the job is cancelled while it runs:"
  fl_wait_for "EXISTS (SELECT FROM flows.exports WHERE job_id = $xjob)" 20
  pids=$(fl_q "SELECT pid || ' ' || work_pid FROM flows.exports WHERE job_id = $xjob")
  # a watcher, started before the cancel, notes when the process group is gone
  # shellcheck disable=SC2086
  fl_watch_gone $pids >"$FL_TMP/gone" &
  local watcher=$!
  # the cancel commits, then the server's clock is read: the start of the measure
  { read -r cancelled; read -r t0; } < <(psql -qtAX -v ON_ERROR_STOP=1 -d "$FL_DB" \
      -c "SELECT coord.cancel($xjob)" -c "SELECT round(extract(epoch FROM clock_timestamp()) * 1000)")
  wait "$watcher" || true
  gone=$(cat "$FL_TMP/gone")
  cancel_ms=$((gone - t0))
  echo "       SELECT coord.cancel($xjob);   -> $cancelled; export.sh (pid ${pids% *}) and its work (pid ${pids#* }) gone" \
       "$cancel_ms ms after the cancel's commit"
  t=$((SECONDS + 10))
  while ! grep -q "job $xjob end" "$FL_TMP/agent.log" && [ $SECONDS -lt $t ]; do sleep 0.02; done
  echo "     the agent's log (it LISTENs on the job's channel \"coord:job:$xjob\"; the cancel NOTIFYs it at its commit):"
  grep -E "job ${xjob}[ :]" "$FL_TMP/agent.log" | sed 's/^/      | /'

  # ------------------------------------------------------------ 6. stop
  local alive=() name stopped=0
  for name in "${!FL_PID[@]}"; do alive+=("$name"); done
  mapfile -t alive < <(printf '%s\n' "${alive[@]}" | sort)
  fl_stop 10 "${alive[@]}" && stopped=1
  local rcs=""
  for name in "${alive[@]}"; do rcs+="$name ${FL_RC[$name]:-?}, "; done
  echo "  6. SIGTERM to ${alive[*]}: exit statuses ${rcs%, }"

  # ------------------------------------------------------------ report
  echo "     each node: its claims, its end (flows.results, written with its complete) and its parents' latest end,"
  echo "     in ms after the enqueue_flow; the notifications and the callback, whose parents are the aggregate and the"
  echo "     batch's jobs:"
  fl_table "
    WITH t AS (SELECT min(enqueued_at) AS t0 FROM flows.nodes),
    c AS (SELECT c.*, r.ended_at
            FROM flows.claims AS c LEFT JOIN flows.results AS r ON r.job_id = c.job_id AND r.token = c.token),
    agg AS (SELECT r.ended_at FROM flows.results AS r JOIN flows.nodes AS n ON n.job_id = r.job_id
             WHERE n.name = 'aggregate'),
    rows AS (
      SELECT n.name AS node, n.job_id::text AS job, c.attempt::text AS attempt, c.worker,
             c.claimed_at, c.ended_at,
             (SELECT max(r.ended_at) FROM flows.nodes AS p JOIN flows.results AS r ON r.job_id = p.job_id
               WHERE p.name = ANY (n.after)) AS parents_ended,
             array_to_string(n.after, ', ') AS parents
        FROM flows.nodes AS n JOIN c ON c.job_id = n.job_id
      UNION ALL
      SELECT 'notify x ' || count(DISTINCT c.job_id), min(c.job_id) || '..' || max(c.job_id),
             min(c.attempt) || '..' || max(c.attempt),
             (SELECT string_agg(worker || ' ' || n, ', ' ORDER BY worker)
                FROM (SELECT worker, count(*) AS n FROM flows.claims WHERE queue = 'notify' GROUP BY worker) AS w),
             min(c.claimed_at), max(c.ended_at), (SELECT ended_at FROM agg), 'aggregate'
        FROM c WHERE c.queue = 'notify'
      UNION ALL
      SELECT 'callback', c.job_id::text, c.attempt::text, c.worker, c.claimed_at, c.ended_at,
             (SELECT max(ended_at) FROM c AS x WHERE x.queue = 'notify'), 'the batch''s jobs'
        FROM c WHERE c.queue = 'import_report')
    SELECT node, job, attempt, worker, parents,
           round(extract(epoch FROM parents_ended - t0) * 1000) AS \"parents ended\",
           round(extract(epoch FROM claimed_at - t0) * 1000) AS claimed,
           COALESCE(round(extract(epoch FROM ended_at - t0) * 1000)::text, 'killed') AS ended,
           CASE WHEN parents_ended IS NULL THEN '-' WHEN claimed_at > parents_ended THEN 'yes' ELSE 'NO' END
             AS \"claimed after parents ended\"
      FROM rows, t ORDER BY claimed_at, node"
  echo "     the batch (coord.batches):"
  fl_table "SELECT batch, callback_queue, sealed, total, done, dead, cancelled, waiting, callback_job FROM coord.batches"

  # ------------------------------------------------------------ checks
  local once after victim_ok batch_ok notified callback_ok awaits left export_ok
  # every node: one results row, with the token of the claim that completed it
  once=$(fl_q "
    SELECT count(*) || ' ' || count(DISTINCT r.job_id) || ' '
           || count(*) FILTER (WHERE j.state = 'done' AND j.token = r.token AND j.result = r.result)
      FROM flows.nodes AS n JOIN flows.results AS r ON r.job_id = n.job_id JOIN coord.jobs AS j ON j.id = n.job_id")
  # every claim of a node after the latest end of its parents; the
  # notifications' after the aggregate's end, the callback's after the last
  # notification's end
  after=$(fl_q "
    SELECT (SELECT count(*) FROM flows.claims AS c JOIN flows.nodes AS n ON n.job_id = c.job_id,
                   LATERAL (SELECT max(r.ended_at) AS last, count(DISTINCT p.name) AS ended
                              FROM flows.nodes AS p JOIN flows.results AS r ON r.job_id = p.job_id
                             WHERE p.name = ANY (n.after)) AS pe
             WHERE n.after <> '{}' AND (pe.ended < cardinality(n.after) OR c.claimed_at <= pe.last))
           + (SELECT count(*) FROM flows.claims AS c
               WHERE c.queue = 'notify' AND c.claimed_at <= (SELECT r.ended_at FROM flows.results AS r
                                                               WHERE r.node = 'aggregate'))
           + (SELECT count(*) FROM flows.claims AS c
               WHERE c.queue = 'import_report'
                 AND c.claimed_at <= (SELECT max(ended_at) FROM flows.results WHERE queue = 'notify'))
           || ' ' || (SELECT count(*) FROM flows.claims)")
  # the victim's claim of geocode never completed; another worker's did
  victim_ok=$(fl_q "
    SELECT count(*) FILTER (WHERE c.worker = '$victim' AND r.job_id IS NULL) || ' '
           || count(*) FILTER (WHERE c.worker <> '$victim' AND r.job_id IS NOT NULL)
      FROM flows.claims AS c LEFT JOIN flows.results AS r ON r.job_id = c.job_id AND r.token = c.token
     WHERE c.node = 'geocode'")
  batch_ok=$(fl_q "SELECT count(*) || ' ' || string_agg(sealed || ' ' || total || ' ' || done || ' ' || dead || ' '
                                                        || cancelled || ' ' || waiting, ',')
                     FROM coord.batches")
  notified=$(fl_q "SELECT count(*) || ' ' || count(DISTINCT r.job_id) || ' ' || count(DISTINCT r.result ->> 'sent') || ' '
                          || count(*) FILTER (WHERE j.state = 'done' AND j.token = r.token)
                     FROM flows.results AS r JOIN coord.jobs AS j ON j.id = r.job_id WHERE r.queue = 'notify'")
  # one callback job, run once, its payload with the counts
  callback_ok=$(fl_q "
    SELECT count(*) || ' ' || COALESCE(string_agg(j.state || ' ' || (j.id = b.callback_job)
             || ' ' || (j.payload - 'report' - 'rows' - 'batch')::text
             || ' ' || (SELECT count(*) FROM flows.results AS r WHERE r.job_id = j.id), ','), '-')
      FROM coord.jobs AS j, coord.batches AS b WHERE j.queue = 'import_report'")
  # the producer's awaits: done, the job's result, within 1 s of the job's end
  awaits=$(fl_q "
    SELECT string_agg(a.what || ' ' || a.state || ' ' || (a.result = j.result)
                      || ' ' || (a.returned_at - r.ended_at BETWEEN interval '0' AND interval '1 second'), ', '
                      ORDER BY a.asked_at)
      FROM flows.awaits AS a JOIN coord.jobs AS j ON j.id = a.job_id
      JOIN flows.results AS r ON r.job_id = a.job_id")
  local await_ms
  await_ms=$(fl_q "
    SELECT string_agg(a.what || ' ' || round(extract(epoch FROM a.returned_at - a.asked_at) * 1000) || ' ms (answered '
                      || round(extract(epoch FROM a.returned_at - r.ended_at) * 1000) || ' ms after its end)', ', '
                      ORDER BY a.asked_at)
      FROM flows.awaits AS a JOIN flows.results AS r ON r.job_id = a.job_id")
  export_ok=$(fl_q "SELECT j.state || ' ' || (x.ended_at IS NULL) FROM coord.jobs AS j
                      JOIN flows.exports AS x ON x.job_id = j.id WHERE j.id = $xjob")
  left=$(fl_q "SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE datname = current_database()
                 AND (application_name LIKE 'flows:%' OR application_name LIKE 'coord-agent:%')")

  echo "     the producer awaited: $await_ms"
  fl_check "one coord.enqueue_flow enqueued the 5 nodes: in its transaction fetch was ready, the 4 others waiting" \
    '[ "$(grep -o " waiting" <<<"$enq_line" | wc -l)" = 4 ] && grep -qE ": fetch [0-9]+ ready," <<<"$enq_line"'
  fl_check "every node done exactly once: one flows.results row each (written with its complete), the token and result of coord.jobs" \
    '[ "$once" = "5 5 5" ]'
  fl_check "$victim, SIGKILLed while it held geocode, never completed it; ${retaker:-nobody} ran it again ${reclaim_ms:-?} ms after the kill" \
    '[ "$victim_ok" = "1 1" ]'
  fl_check "every node claimed after all its parents had ended; every notification after the aggregate, the callback after the last notification" \
    '[ "${after% *}" = 0 ] && [ "${after#* }" -ge $((customers + 7)) ]'
  fl_check "the batch: sealed, $customers jobs, $customers done, 0 dead, 0 cancelled, 0 waiting (coord.batches)" \
    '[ "$batch_ok" = "1 true $customers $customers 0 0 0" ]'
  fl_check "$customers notifications, each done exactly once, to $customers distinct customers" \
    '[ "$notified" = "$customers $customers $customers $customers" ]'
  fl_check "one callback job, run once, with the counts {done: $customers, dead: 0, cancelled: 0} in its payload" \
    '[ "$callback_ok" = "1 done true {\"dead\": 0, \"done\": $customers, \"cancelled\": 0} 1" ]'
  fl_check "the producer's coord.await calls returned done with the jobs' results, within 1 s of the jobs' ends" \
    '[ $producer_ok = 1 ] && [ "$awaits" = "aggregate done true true, callback done true true" ]'
  fl_check "the export cancelled while it ran under coord-agent: its process group gone ${cancel_ms:-?} ms after the cancel's commit (< 200 ms)" \
    '[ "$cancelled" = t ] && [ -n "$cancel_ms" ] && [ "$cancel_ms" -ge 0 ] && [ "$cancel_ms" -lt 200 ]'
  fl_check "the export never reached its end; its job is cancelled; the agent killed it on the NOTIFY and reported nothing (outcome=lost)" \
    '[ "$export_ok" = "cancelled true" ] && grep -q "job $xjob: cancelled (NOTIFY cancel): killing" "$FL_TMP/agent.log" &&
     grep -q "job $xjob end .*outcome=lost" "$FL_TMP/agent.log"'
  fl_check "the surviving workers and the agent exited 0 on SIGTERM; no session left" \
    '[ $stopped = 1 ] && ! grep -qvE " 0$" <<<"$(tr , "\n" <<<"${rcs%, }")" && [ "$left" = 0 ]'

  FL_REPORTED=1
  if [ "$FL_FAILED" = 0 ]; then
    echo "flows: ok, $FL_CHECKS checks: a flow of 5 nodes done exactly once, parents first, across a SIGKILL;" \
         "$customers notifications and one callback; a cancelled agent job gone in $cancel_ms ms"
  else
    echo "flows: FAILED, $FL_FAILED of $FL_CHECKS checks failed"
    return 1
  fi
}
