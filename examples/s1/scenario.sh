# S1 end to end, with real worker processes: sourced by examples/demo.sh and
# test/crash/s1_exactly_once.sh.
#
#   s1_scenario DB     needs pg_coord in DB; (re)creates schema s1 there, runs
#                      three workers per procedure, SIGKILLs one of each
#                      mid-batch, checks that every batch was processed
#                      exactly once, then shows the store rejecting a stale
#                      fencing token.  Prints a report; returns non-zero if
#                      any check failed.  Run it in a subshell: it sets -e and
#                      an EXIT trap that kills the workers it started.
#
# Settings (environment): S1_BATCHES (batches in the index; every 5th is
# delivered a second time), S1_WORK_MS_P1 / S1_WORK_MS_P2 (time per batch for
# the procedure 1 / procedure 2 component), S1_DEADLINE (seconds for the
# whole run), S1_LOGDIR (worker logs; kept when a check fails),
# S1_SHOW_LOCKS=1 (print coord.locks once while the workers run),
# PYTHON (a python3 with psycopg2).

S1_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$S1_DIR/psql_session.sh"

# The two components, one per procedure, and their workers (name=language).
S1_P1=checksum
S1_P2=histogram
S1_P1_WORKERS=(checksum-w1=python checksum-w2=bash checksum-w3=python)
S1_P2_WORKERS=(histogram-w1=bash histogram-w2=python histogram-w3=bash)
S1_P1_VICTIM=checksum-w2      # procedure 1: kill this one (a bash worker: bash and its psql)
S1_P2_VICTIM='histogram-w%'   # procedure 2: kill whoever holds the index lock

s1_q() { psql -qtAX -v ON_ERROR_STOP=1 -d "$S1_DB" -c "$1"; }

S1_FAILED=0
s1_check() {   # s1_check DESCRIPTION 'SHELL CONDITION': prints ok/FAIL, counts failures
  if eval "$2"; then
    printf '  ok    %s\n' "$1"
  else
    printf '  FAIL  %s\n' "$1"
    S1_FAILED=$((S1_FAILED + 1))
  fi
}

s1_names() {   # checksum-w1=python ... -> "checksum-w1 (python), ..."
  local w out=
  for w; do out+=${out:+, }"${w%%=*} (${w#*=})"; done
  echo "$out"
}

s1_ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) * 1000 }'; }

declare -gA S1_PID=() S1_LANG=() S1_RC=() S1_LIVE=()
S1_WATCHERS=()

# Starts a worker in its own process group, so that a SIGKILL reaches the
# whole component (a bash worker is bash plus its psql).
s1_start() {   # NAME LANGUAGE COMPONENT PROCEDURE WORK_MS
  local name=$1 lang=$2 cmd
  if [ "$lang" = bash ]; then cmd=(bash "$S1_DIR/component.sh"); else cmd=("$PYTHON" "$S1_DIR/component.py"); fi
  PGDATABASE=$S1_DB setsid "${cmd[@]}" -c "$3" -p "$4" -w "$name" -t "$5" -i 60 \
    >"$S1_LOGDIR/$name.log" 2>&1 &
  S1_PID[$name]=$! S1_LANG[$name]=$lang S1_LIVE[$name]=1
}

s1_cleanup() {
  local name
  for name in "${!S1_LIVE[@]}"; do
    kill -KILL -- "-${S1_PID[$name]}" 2>/dev/null || true
  done
  for name in "${S1_WATCHERS[@]}"; do
    # a watcher that saw no kill: stop its query in the server, then psql ends
    if kill -0 "$name" 2>/dev/null; then
      s1_q "SELECT pg_catalog.pg_cancel_backend(pid) FROM pg_catalog.pg_stat_activity
             WHERE application_name LIKE 's1:watch-%'" >/dev/null 2>&1 || true
      break
    fi
  done
  sql_close
}

# Waits for every worker; false if one is still running at the deadline.
s1_wait_workers() {
  local name deadline=$((SECONDS + S1_DEADLINE)) rc
  for name in "${!S1_PID[@]}"; do
    while kill -0 "${S1_PID[$name]}" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
    if kill -0 "${S1_PID[$name]}" 2>/dev/null; then
      echo "  $name still running after ${S1_DEADLINE}s"
      return 1
    fi
    rc=0; { wait "${S1_PID[$name]}"; } 2>/dev/null || rc=$?   # no "Killed" notices
    S1_RC[$name]=$rc
    unset 'S1_LIVE[$name]'
  done
}

# Waits until an SQL condition is true, polled inside the server every
# millisecond, so that the kill below lands within a few ms of an event.
s1_wait_for() {   # SQL_CONDITION TIMEOUT_S
  sql "SELECT s1.wait_until(\$cond\$ $1 \$cond\$, interval '$2 seconds');" && [ "$ROW" = t ] && return 0
  echo "  timed out waiting for: $1"
  return 1
}

# The kill of one worker mid-batch, in two steps.  s1_watch starts the
# watcher (s1.watch_takeover) in its own session before the workers start,
# so that it sees the lock go however fast things happen.
s1_watch() {   # COMPONENT WORKER_LIKE
  PGAPPNAME=s1:watch-$1 psql -qtAX -v ON_ERROR_STOP=1 -d "$S1_DB" -c "
      SELECT attempt_id, extract(epoch FROM freed_at), extract(epoch FROM taken_at), taker
        FROM s1.watch_takeover(0, '$2', interval '$S1_DEADLINE seconds')" \
      >"$S1_LOGDIR/watch-$1.out" 2>&1 &
  S1_WATCHER=$!
  S1_WATCHERS+=("$S1_WATCHER")
  s1_wait_for "EXISTS (SELECT FROM pg_catalog.pg_stat_activity WHERE application_name = 's1:watch-$1'
                        AND state = 'active' AND query LIKE '%watch_takeover%')" 20
}

# s1_kill, once MIN_DONE batches are stored, SIGKILLs the worker matching
# WORKER_LIKE that has just started a batch (less than FRESH_MS ago, so that
# it is surely still at it), then reads the watcher's times.  Sets K_VICTIM
# K_PATH K_FREED_MS K_TAKEN_MS K_TAKER.
s1_kill() {   # COMPONENT WORKER_LIKE MIN_DONE FRESH_MS
  local comp=$1 like=$2 id victim path t0 out freed taken fresh
  K_VICTIM='' K_PATH='' K_FREED_MS='' K_TAKEN_MS='' K_TAKER=''
  s1_wait_for "(SELECT count(*) >= $3 FROM s1.results WHERE component = '$comp')" "$S1_DEADLINE" || return 1
  fresh="worker LIKE '$like' AND finished_at IS NULL
         AND started_at > clock_timestamp() - interval '$4 milliseconds'"
  ROW=''
  while [ -z "$ROW" ]; do   # (on a busy machine the fresh one may be gone by the second query)
    s1_wait_for "EXISTS (SELECT FROM s1.attempts WHERE $fresh)" "$S1_DEADLINE" || return 1
    sql "SELECT id, worker, path FROM s1.attempts WHERE $fresh ORDER BY id LIMIT 1;" || return 1
  done
  IFS='|' read -r id victim path <<<"$ROW"
  [ -n "${S1_PID[$victim]:-}" ] || { echo "  $victim is not a worker of ours"; return 1; }
  if [ "${S1_VIEW_LOCKS:-0}" = 1 ]; then
    echo "  coord.locks while $victim works on $path:"
    sql "SELECT rpad(path, 32) || rpad(mode, 20) || rpad(CASE WHEN granted THEN 'granted' ELSE 'waiting' END, 9)
                || regexp_replace(application_name, '^s1:', '')
           FROM coord.locks WHERE path LIKE '%$comp%' AND application_name LIKE 's1:%'
          ORDER BY path, granted DESC, application_name;"
    printf '      %s\n' "${ROWS[@]}"
  fi
  t0=$EPOCHREALTIME
  kill -KILL -- "-${S1_PID[$victim]}"
  K_VICTIM=$victim K_PATH=$path
  # (bash would print a "Killed" notice for the victim here)
  { wait "$S1_WATCHER"; } 2>/dev/null || { cat "$S1_LOGDIR/watch-$comp.out"; return 1; }
  IFS='|' read -r out freed taken K_TAKER <"$S1_LOGDIR/watch-$comp.out"
  [ -n "$freed" ] && K_FREED_MS=$(s1_ms "$t0" "$freed")
  [ -n "$taken" ] && K_TAKEN_MS=$(s1_ms "$t0" "$taken")
  # the watcher saw the lock of this very attempt go while it was unfinished
  [ "$out" = "$id" ]
}

s1_report_kill() {   # PROCEDURE
  echo "  SIGKILL $K_VICTIM (${S1_LANG[${K_VICTIM:-?}]:-?}) in the middle of $K_PATH:"
  echo "      lock free after ${K_FREED_MS:-?} ms, batch taken by ${K_TAKER:-nobody} after ${K_TAKEN_MS:-?} ms"
  # what the two workers logged about that batch
  if [ -n "$K_PATH" ]; then
    { grep -h -F "$K_PATH" "$S1_LOGDIR/$K_VICTIM.log" | tail -1 | sed 's/^/      | /; s/$/   <- SIGKILL/'
      grep -h -F "$K_PATH" "$S1_LOGDIR/${K_TAKER:-none}.log" | head -2 | sed 's/^/      | /'
    } 2>/dev/null || true
  fi
  s1_check "procedure $1: the lock of its unfinished batch was free within 1 s" \
    'awk -v ms="${K_FREED_MS:-99999}" "BEGIN { exit !(ms < 1000) }"'
  s1_check "procedure $1: another worker took the batch over" \
    '[ -n "$K_TAKER" ] && [ "$K_TAKER" != "$K_VICTIM" ]'
}

# Every batch delivery stored once, by one attempt, with that attempt's token;
# the only other attempt is the killed worker's, on the batch taken over.
s1_exactly_once() {   # COMPONENT VICTIM
  local comp=$1 victim=$2 n stored attempts open bad killed_ok
  sql "WITH per AS (
         SELECT b.batch, b.roundtrip,
                count(a.id) FILTER (WHERE a.outcome = 'stored') AS stored,
                count(a.id) FILTER (WHERE a.outcome IS NULL) AS open,
                count(a.id) AS attempts,
                bool_and(a.outcome IS DISTINCT FROM 'stored' OR a.token = r.token) AS token_ok
           FROM s1.batches AS b
           LEFT JOIN s1.attempts AS a
                  ON a.component = '$comp' AND a.batch = b.batch AND a.roundtrip = b.roundtrip
           LEFT JOIN s1.results AS r
                  ON r.component = '$comp' AND r.batch = b.batch AND r.roundtrip = b.roundtrip
          GROUP BY b.batch, b.roundtrip)
       SELECT count(*), count(*) FILTER (WHERE stored = 1), sum(attempts), sum(open),
              count(*) FILTER (WHERE stored <> 1 OR attempts <> stored + open OR NOT token_ok),
              (SELECT count(*) = 1 AND bool_and(a.worker = '$victim' AND o.worker <> '$victim')
                 FROM s1.attempts AS a JOIN s1.attempts AS o
                   ON o.path = a.path AND o.outcome = 'stored'
                WHERE a.component = '$comp' AND a.outcome IS NULL)
         FROM per;"
  IFS='|' read -r n stored attempts open bad killed_ok <<<"$ROW"
  sql "SELECT string_agg(regexp_replace(worker, '^.*-', '') || ' ' || n, ', ' ORDER BY worker)
         FROM (SELECT worker, count(*) AS n FROM s1.attempts
                WHERE component = '$comp' AND outcome = 'stored' GROUP BY worker) AS w;"
  echo "  $comp: $stored of $n batch deliveries stored ($ROW); $attempts attempts = $stored + $open killed"
  s1_check "$comp: every batch stored exactly once, by exactly one attempt, with its token" \
    '[ "$stored" = "$n" ] && [ "$bad" = 0 ]'
  s1_check "$comp: the one unfinished attempt is $victim's, finished by another worker" \
    '[ "$open" = 1 ] && [ "$killed_ok" = t ]'
}

# A writer that lost its lock keeps going and writes late: the store refuses
# its token, both before and after the new owner wrote.
s1_stale_token() {
  local path t_old t_new before locked stored after row
  sql "INSERT INTO s1.batches (batch, roundtrip)
       SELECT max(batch) + 1, 1 FROM s1.batches
       RETURNING s1.batch_path('$S1_P1', batch, roundtrip);"
  path=$ROW
  # the old owner: takes the lock and a token, then its session ends (a
  # network cut, say) while the process carries on with the batch
  t_old=$(PGAPPNAME=s1:checksum-old s1_q "SELECT coord.lock('$path');
            SELECT t FROM coord.fence('$path') AS t, s1.begin_attempt('$path', t, 'checksum-old') AS a;" | tail -1)
  # the new owner, a live session: the lock is free again, with a newer token
  sql "SELECT coord.lock('$path', interval '5 seconds');"; locked=$ROW
  sql "SELECT t FROM coord.fence('$path') AS t, s1.begin_attempt('$path', t, 'checksum-new') AS a;"
  t_new=$ROW
  before=$(s1_q "SELECT s1.store_result('$path', $t_old, 'checksum-old', 'late result')")
  sql "SELECT s1.store_result('$path', $t_new, 'checksum-new', 'result');"; stored=$ROW
  sql "SELECT coord.unlock('$path');"
  after=$(s1_q "SELECT s1.store_result('$path', $t_old, 'checksum-old', 'late result')")
  row=$(s1_q "SELECT worker || ' token ' || token FROM s1.results WHERE (component, batch, roundtrip) =
                (SELECT component, batch, roundtrip FROM s1.parse_path('$path'))")
  echo "  stale fencing token on $path:"
  echo "      checksum-old took it with token $t_old, then lost its session;"
  echo "      checksum-new took it over with token $t_new"
  echo "      write with $t_old before checksum-new stored: $( [ "$before" = f ] && echo rejected || echo ACCEPTED )"
  echo "      write with $t_new by checksum-new:          $( [ "$stored" = t ] && echo accepted || echo REJECTED )"
  echo "      write with $t_old after it:                 $( [ "$after" = f ] && echo rejected || echo ACCEPTED )"
  echo "      the store holds: $row"
  s1_check "the store rejects the stale token and keeps the new owner's result" \
    '[ "$before" = f ] && [ "$locked$stored" = tt ] && [ "$after" = f ] && [ "$row" = "checksum-new token $t_new" ]'
}

s1_scenario() {
  set -euo pipefail
  S1_DB=$1
  S1_BATCHES=${S1_BATCHES:-20} S1_WORK_MS_P1=${S1_WORK_MS_P1:-300} S1_WORK_MS_P2=${S1_WORK_MS_P2:-120}
  S1_DEADLINE=${S1_DEADLINE:-45} PYTHON=${PYTHON:-/usr/bin/python3}
  S1_LOGDIR=${S1_LOGDIR:-$(mktemp -d /tmp/pg_coord-s1.XXXXXX)}
  mkdir -p "$S1_LOGDIR"
  trap s1_cleanup EXIT

  psql -qX -v ON_ERROR_STOP=1 -d "$S1_DB" -c 'SET client_min_messages = warning' \
       -c 'DROP SCHEMA IF EXISTS s1 CASCADE' >/dev/null
  psql -qX -v ON_ERROR_STOP=1 -d "$S1_DB" -f "$S1_DIR/schema.sql" >/dev/null
  # newspaper batches: 12-digit ids; every 5th was rejected once and came back as roundtrip 2
  s1_q "INSERT INTO s1.batches (batch, roundtrip)
        SELECT 400022028240 + i, rt FROM generate_series(1, $S1_BATCHES) AS i, generate_series(1, 2) AS rt
         WHERE rt = 1 OR i % 5 = 0"
  local n w
  n=$(s1_q "SELECT count(*) FROM s1.batches")
  echo "  index: $n batch deliveries ($S1_BATCHES batches, $((n - S1_BATCHES)) of them twice)"
  echo "  $S1_P1 = procedure 1 (index lock only while picking a batch), workers $(s1_names "${S1_P1_WORKERS[@]}")"
  echo "  $S1_P2 = procedure 2 (index lock for the whole run), workers $(s1_names "${S1_P2_WORKERS[@]}")"

  sql_open -d "$S1_DB"
  # Procedure 1, then procedure 2 while procedure 1 may still be running.
  s1_watch "$S1_P1" "$S1_P1_VICTIM" || true
  for w in "${S1_P1_WORKERS[@]}"; do s1_start "${w%=*}" "${w#*=}" "$S1_P1" 1 "$S1_WORK_MS_P1"; done
  s1_kill "$S1_P1" "$S1_P1_VICTIM" 3 $((S1_WORK_MS_P1 / 2)) || K_FREED_MS=''
  s1_report_kill 1
  local victim1=$K_VICTIM

  s1_watch "$S1_P2" "$S1_P2_VICTIM" || true
  for w in "${S1_P2_WORKERS[@]}"; do s1_start "${w%=*}" "${w#*=}" "$S1_P2" 2 "$S1_WORK_MS_P2"; done
  S1_VIEW_LOCKS=${S1_SHOW_LOCKS:-0} s1_kill "$S1_P2" "$S1_P2_VICTIM" 3 $((S1_WORK_MS_P2 / 2)) || K_FREED_MS=''
  s1_report_kill 2
  local victim2=$K_VICTIM

  s1_check "every worker ended within ${S1_DEADLINE}s" s1_wait_workers
  local bad=0
  for w in "${!S1_RC[@]}"; do
    if [ "$w" = "$victim1" ] || [ "$w" = "$victim2" ]; then
      [ "${S1_RC[$w]}" = 137 ] || bad=1
    else
      [ "${S1_RC[$w]}" = 0 ] || bad=1
    fi
  done
  s1_check "the killed workers died of SIGKILL (137), the others exited with 0" '[ "$bad" = 0 ]'

  s1_exactly_once "$S1_P1" "$victim1"
  s1_exactly_once "$S1_P2" "$victim2"
  s1_stale_token
  sql "SELECT count(*) FROM coord.locks;"
  s1_check "no pg_coord lock left behind" '[ "$ROW" = 0 ]'
  sql_close

  if [ "$S1_FAILED" -gt 0 ]; then
    echo "  worker logs: $S1_LOGDIR"
    return 1
  fi
  rm -rf "$S1_LOGDIR"
}
