# S4 end to end, with real runner processes: sourced by examples/demo.sh and
# test/crash/s4_runners.sh.
#
#   s4_demo [quick]    needs the cluster in the PG* environment with pg_coord
#                      installed in the server; (re)creates database $S4_DB
#                      (default coord_demo_s4) with pg_coord and schema s4.
#
# Part 1, session-bound claims: 300 mails on queue 'mail'; 2 Python and 2
# Node runners (runner.py, runner.js) send them at once, each claiming a few
# at a time.  One runner is SIGKILLed while it holds claimed, unsent mails:
# those must be claimed by another runner within a second (its session ended,
# so its claims did).  Part 2, leases: 40 more mails; a lease-mode runner
# claims one with a 1 s lease and stalls for 4 s; another runner claims it
# once the lease has expired and sends it, and the stalled runner's
# coord.complete returns false (it rolls its send record back).  At the end
# Part 3, a partition group over a mail table of the runners' own (s4.mail,
# not pg_coord jobs): three group_runner.py runners with weights 3:2:1 send
# the mails of the segments they own (coord.owned, coord.segment_of), fenced
# by coord.segment_token; one is SIGKILLed mid-run and the others take its
# segments.  At the end every mail must have been sent exactly once: 0
# duplicates, 0 lost.
#
# `quick` (or no node on PATH) runs Python runners only, for the test suite
# (CI has no Node).  Prints a report with its checks and a last line starting
# with "S4:"; returns non-zero if a check failed.  Worker logs go to a
# temporary directory, kept when a check fails.  Settings (environment):
# S4_DB, PYTHON (a python3 with psycopg2), S4_NODE=0 (Python only).

# shellcheck shell=bash disable=SC2016,SC2034  # s4_check evals its condition strings later
S4_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

s4_demo() {
  # a subshell: its own set -e, EXIT trap and globals, whoever sourced us
  ( s4_demo_run "$@" )
}

s4_q() { psql -qtAX -v ON_ERROR_STOP=1 -d "$S4_DB" -c "$1"; }

s4_check() {   # DESCRIPTION 'SHELL CONDITION': prints ok/FAIL, counts failures
  S4_CHECKS=$((S4_CHECKS + 1))
  if eval "$2"; then
    printf '  ok    %s\n' "$1"
  else
    printf '  FAIL  %s\n' "$1"
    S4_FAILED=$((S4_FAILED + 1))
  fi
}

s4_wait_for() {   # SQL_CONDITION TIMEOUT_S
  [ "$(s4_q "SELECT s4.wait_until(\$c\$$1\$c\$, interval '$2 seconds')")" = t ] && return 0
  echo "  timed out after $2 s waiting for: $1"
  return 1
}

# Starts a runner in its own process group.
s4_start() {   # NAME python|node [runner options]
  local name=$1 lang=$2 cmd
  shift 2
  case $lang in
    python) cmd=("$PYTHON" "$S4_DIR/runner.py" -n "$name" "$@") ;;
    node)   cmd=(node "$S4_DIR/runner.js" -n "$name" "$@") ;;
  esac
  PGDATABASE=$S4_DB setsid "${cmd[@]}" >"$S4_LOGDIR/$name.log" 2>&1 &
  S4_PID[$name]=$!
}

# Waits for the named runners; false if one is still running at the
# deadline.  Exit codes land in S4_RC[name].
s4_wait() {   # DEADLINE_S NAME...
  local limit=$1 name deadline=$((SECONDS + $1)) rc
  shift
  for name; do
    [ -n "${S4_PID[$name]:-}" ] || continue
    while kill -0 "${S4_PID[$name]}" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
    if kill -0 "${S4_PID[$name]}" 2>/dev/null; then
      echo "  $name still running after $limit s"
      return 1
    fi
    rc=0; { wait "${S4_PID[$name]}"; } 2>/dev/null || rc=$?
    S4_RC[$name]=$rc
    unset 'S4_PID[$name]'
  done
}

s4_all_rc0() {
  local n
  for n; do [ "${S4_RC[$n]:-x}" = 0 ] || return 1; done
}

s4_cleanup() {   # EXIT_STATUS
  local name
  for name in "${!S4_PID[@]}"; do
    kill -KILL -- "-${S4_PID[$name]}" 2>/dev/null || true
  done
  if [ "$1" = 0 ]; then
    rm -rf "$S4_LOGDIR"
  elif [ -z "${S4_REPORTED:-}" ]; then
    echo "  worker logs kept in $S4_LOGDIR"
    echo "S4: FAILED, stopped by an error after $S4_CHECKS checks"
  fi
}

s4_psql_table() {   # SQL: psql's aligned output, indented
  psql -qX -P footer=off -d "$S4_DB" -c "$1" | sed '/^$/d; s/^/      /'
}

s4_demo_run() {
  set -euo pipefail
  local quick=0
  [ "${1:-}" = quick ] && quick=1
  S4_DB=${S4_DB:-coord_demo_s4}
  PYTHON=${PYTHON:-/usr/bin/python3}
  S4_LOGDIR=$(mktemp -d /tmp/s4_demo.XXXXXX)
  S4_CHECKS=0 S4_FAILED=0
  declare -gA S4_PID=() S4_RC=()
  trap 's4_cleanup $?' EXIT

  local use_node=1
  if [ $quick = 1 ] || [ "${S4_NODE:-1}" = 0 ]; then
    use_node=0
  elif ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "  (node/npm not found: Python runners only)"
    use_node=0
  elif [ ! -d "$S4_DIR/node_modules/pg" ]; then
    echo "  installing the pg package for the Node runners (npm install)"
    (cd "$S4_DIR" && npm install --no-audit --no-fund --silent --no-package-lock) >/dev/null
  fi

  local n_mails=300 n_lease=40 deadline=30
  [ $quick = 1 ] && n_mails=150 n_lease=20
  local -A lang
  local runners victim
  if [ $use_node = 1 ]; then
    runners=(py1 py2 js1 js2) victim=js1
    lang=([py1]=python [py2]=python [js1]=node [js2]=node [py-stall]=python [py-lease]=python [js-lease]=node)
  else
    runners=(py1 py2 py3 py4) victim=py3
    lang=([py1]=python [py2]=python [py3]=python [py4]=python [py-stall]=python [py-lease]=python [py-lease2]=python)
  fi

  psql -qX -v ON_ERROR_STOP=1 -d postgres -c 'SET client_min_messages = warning' \
       -c "DROP DATABASE IF EXISTS $S4_DB WITH (FORCE)" -c "CREATE DATABASE $S4_DB" >/dev/null
  s4_q 'CREATE EXTENSION pg_coord' >/dev/null
  psql -qX -v ON_ERROR_STOP=1 -d "$S4_DB" -f "$S4_DIR/schema.sql" >/dev/null

  # ------------------------------------------------------------ part 1
  s4_q "SELECT count(*) FROM coord.enqueue_many('mail',
          ARRAY(SELECT jsonb_build_object('n', i, 'to', 'user' || i || '@example.org', 'subject', 'Your invoice #' || i)
                  FROM generate_series(1, $n_mails) AS i))" >/dev/null
  echo "  part 1: $n_mails mails on queue 'mail'; session-bound runners ${runners[*]}" \
       "($(if [ $use_node = 1 ]; then echo '2 Python, 2 Node'; else echo '4 Python'; fi)), each claiming 4 at a time,"
  echo "    30 ms a mail ($victim: 500 ms, a slow mail server)"
  local r
  # the victim talks to a slow mail server (500 ms a mail), so that it always
  # holds claimed mails it has not sent yet
  for r in "${runners[@]}"; do
    if [ "$r" = "$victim" ]; then
      s4_start "$r" "${lang[$r]}" -m session -b 4 -s 500 -e -p 1
    else
      s4_start "$r" "${lang[$r]}" -m session -b 4 -s 30 -e -p 1
    fi
  done
  # the victim: well under way, and holding claimed mails it has not sent
  local held_sql="SELECT c.job_id FROM s4.claims AS c WHERE c.runner = '$victim'
                    AND NOT EXISTS (SELECT FROM s4.sent AS s WHERE s.job_id = c.job_id AND s.runner = '$victim')"
  s4_wait_for "(SELECT count(*) FROM s4.sent WHERE runner = '$victim') >= 1
               AND (SELECT count(*) FROM ($held_sql) AS h) >= 3" 20
  local vbackend
  vbackend=$(s4_q "SELECT pid FROM pg_stat_activity WHERE application_name = 's4:runner:$victim'")
  echo "    before the kill, coord.queue_stats and the jobs $victim holds (claimed, not sent yet):"
  psql -qX -P footer=off -d "$S4_DB" \
       -c "SELECT queue, ready, running, done_last_hour FROM coord.queue_stats WHERE queue = 'mail'" \
       -c "SELECT id, state, token, payload->>'to' AS mail_to, claimed_at::time(3) FROM coord.jobs
            WHERE id IN ($held_sql) AND state = 'running' ORDER BY id" | sed '/^$/d; s/^/      /'
  local vpid=${S4_PID[$victim]} t_kill=$EPOCHREALTIME rc=0
  { kill -KILL -- "-${S4_PID[$victim]}"; wait "${S4_PID[$victim]}"; } 2>/dev/null || rc=$?
  S4_RC[$victim]=$rc
  unset 'S4_PID[$victim]'
  # the held set, exactly, once the victim's backend is gone (a statement
  # under way when the client died has committed or aborted by then): the
  # victim's claims without a send of its own
  s4_wait_for "NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $vbackend)" 5
  local held n_held
  held=$(s4_q "SELECT string_agg(job_id::text, ',' ORDER BY job_id) FROM ($held_sql) AS h")
  n_held=$(awk -F, '{ print NF }' <<<"$held")
  echo "    SIGKILL $victim (pid $vpid, backend $vbackend) while it holds jobs $held"
  s4_wait_for "NOT EXISTS (SELECT FROM unnest('{$held}'::bigint[]) AS h(id)
                            WHERE NOT EXISTS (SELECT FROM s4.claims AS c WHERE c.job_id = h.id AND c.runner <> '$victim'))" 5 || true
  local reclaim reclaim_max
  reclaim=$(s4_q "SELECT string_agg(format('job %s by %s after %s ms', h.id, c.runner,
                                           round(((extract(epoch FROM c.claimed_at) - $t_kill) * 1000)::numeric, 1)), '; ' ORDER BY h.id)
                    FROM unnest('{$held}'::bigint[]) AS h(id)
                    CROSS JOIN LATERAL (SELECT runner, claimed_at FROM s4.claims AS c
                                         WHERE c.job_id = h.id AND c.runner <> '$victim' ORDER BY c.claimed_at LIMIT 1) AS c")
  reclaim_max=$(s4_q "SELECT round(max((extract(epoch FROM c.claimed_at) - $t_kill) * 1000)::numeric, 1)
                        FROM unnest('{$held}'::bigint[]) AS h(id)
                        CROSS JOIN LATERAL (SELECT claimed_at FROM s4.claims AS c
                                             WHERE c.job_id = h.id AND c.runner <> '$victim' ORDER BY c.claimed_at LIMIT 1) AS c
                      HAVING count(*) = $n_held")
  echo "    claimed again: ${reclaim:-none}"
  local others=()
  for r in "${runners[@]}"; do [ "$r" = "$victim" ] || others+=("$r"); done
  local waited_ok=0
  s4_wait "$deadline" "${others[@]}" && waited_ok=1
  echo "    sent per runner: $(s4_q "SELECT string_agg(runner || ' ' || n, ', ' ORDER BY runner)
                                     FROM (SELECT runner, count(*) AS n FROM s4.sent GROUP BY runner) AS s")"
  local p1
  p1=$(s4_q "SELECT count(DISTINCT mail_no) || ' ' || count(*) || ' ' || (count(*) - count(DISTINCT job_id)) FROM s4.sent")
  s4_check "$victim was SIGKILLed while it held $n_held claimed, unsent jobs" \
    '[ "${S4_RC[$victim]}" = 137 ] && [ "$n_held" -ge 1 ]'
  s4_check "another runner claimed each of them within 1 s of the kill (the last after ${reclaim_max:-?} ms)" \
    'awk -v ms="${reclaim_max:-99999}" "BEGIN { exit !(ms >= 0 && ms < 1000) }"'
  s4_check "the other runners emptied the queue and exited 0" '[ $waited_ok = 1 ] && s4_all_rc0 "${others[@]}"'
  s4_check "part 1: $n_mails mails sent exactly once ($n_mails sends, 0 duplicates)" '[ "$p1" = "$n_mails $n_mails 0" ]'

  # ------------------------------------------------------------ part 2
  local lease_runners stall_job stall_token
  if [ $use_node = 1 ]; then lease_runners=(py-lease js-lease); else lease_runners=(py-lease py-lease2); fi
  echo "  part 2: $n_lease more mails; lease-mode runner py-stall claims one with a 1 s lease and stalls 4 s;" \
       "lease-mode runners ${lease_runners[*]} (1 s leases) send the rest"
  s4_q "SELECT count(*) FROM coord.enqueue_many('mail',
          ARRAY(SELECT jsonb_build_object('n', i, 'to', 'user' || i || '@example.org', 'subject', 'Your invoice #' || i)
                  FROM generate_series($n_mails + 1, $n_mails + $n_lease) AS i))" >/dev/null
  s4_start py-stall python -m lease -l '1 second' -c 1 -S 4 -s 10
  s4_wait_for "EXISTS (SELECT FROM s4.claims WHERE runner = 'py-stall')" 10
  IFS='|' read -r stall_job stall_token < <(s4_q "SELECT job_id, token FROM s4.claims WHERE runner = 'py-stall'")
  for r in "${lease_runners[@]}"; do
    s4_start "$r" "${lang[$r]}" -m lease -l '1 second' -b 2 -s 20 -e -p 0.25
  done
  waited_ok=0
  s4_wait "$deadline" py-stall "${lease_runners[@]}" && waited_ok=1
  echo "    the claims of job $stall_job, and what each runner's complete said:"
  s4_psql_table "SELECT c.runner, c.token, c.claimed_at::time(3) AS claimed_at, c.lease_until::time(3) AS lease_until,
                        s.sent_at::time(3) AS sent_committed_at
                   FROM s4.claims AS c LEFT JOIN s4.sent AS s ON s.job_id = c.job_id AND s.token = c.token
                  WHERE c.job_id = $stall_job ORDER BY c.token"
  local taker
  { grep -h -E "(job $stall_job \(|job $stall_job,|job $stall_job:)" "$S4_LOGDIR"/*.log | sort | sed 's/^/      | /'; } || true
  taker=$(s4_q "SELECT string_agg(runner || ' ' || token, ',') FROM s4.sent WHERE job_id = $stall_job")
  echo "    sent per runner: $(s4_q "SELECT string_agg(runner || ' ' || n, ', ' ORDER BY runner)
                                     FROM (SELECT runner, count(*) AS n FROM s4.sent WHERE mail_no > $n_mails GROUP BY runner) AS s")"
  local p2
  p2=$(s4_q "SELECT count(DISTINCT mail_no) || ' ' || count(*) || ' ' || (count(*) - count(DISTINCT job_id))
               FROM s4.sent WHERE mail_no > $n_mails")
  s4_check "job $stall_job was claimed again by another runner after py-stall's lease expired, and sent by it once" \
    '[[ "$taker" =~ ^(py-lease|js-lease|py-lease2)\ ([0-9]+)$ ]] && [ "${BASH_REMATCH[2]}" -gt "$stall_token" ]'
  s4_check "py-stall's complete(job $stall_job, token $stall_token) returned false and it rolled its send back" \
    'grep -q "job $stall_job (mail [0-9]*, token $stall_token): complete -> false" "$S4_LOGDIR/py-stall.log"'
  s4_check "the lease runners exited 0 within ${deadline}s" '[ $waited_ok = 1 ] && s4_all_rc0 py-stall "${lease_runners[@]}"'
  s4_check "part 2: $n_lease mails sent exactly once" '[ "$p2" = "$n_lease $n_lease 0" ]'

  # ------------------------------------------------------------ part 3
  # the original's own design, done by pg_coord: a mail table of the
  # runners' own, split by weight among the live runners of a partition group
  local n_group=300 grp=s4-mail g_victim=g2
  [ $quick = 1 ] && n_group=150
  local -A gweight=([g1]=3 [g2]=2 [g3]=1)
  echo "  part 3: $n_group mails in a table of their own (s4.mail, not pg_coord jobs); runners g1, g2, g3 join partition"
  echo "    group $grp with weights 3:2:1; each sends only the mails whose coord.segment_of($grp, rcpt) is in its"
  echo "    coord.owned($grp), and marks them sent only while coord.segment_token still gives the token it took the segment with"
  for r in g1 g2 g3; do
    PGDATABASE=$S4_DB setsid "$PYTHON" "$S4_DIR/group_runner.py" -n "$r" -w "${gweight[$r]}" -N "$n_group" \
      -g "$grp" -b 5 -s 20 >"$S4_LOGDIR/$r.log" 2>&1 &
    S4_PID[$r]=$!
  done
  # all three joined and synced (a newcomer takes its segments once their
  # first owner has let them go at its next coord.owned); then the mails come
  s4_wait_for "(SELECT count(*) = 3 AND sum(owned) = 1024 AND bool_and(abs(owned_share - target_share) < 0.06)
                  FROM coord.members WHERE partition_group = '$grp' AND alive)" 20
  s4_q "CREATE TABLE s4.shares AS
          SELECT m.member, m.weight, m.target_share, m.owned AS segments,
                 (SELECT array_agg(s.segment) FROM coord.partition_segments AS s
                   WHERE s.partition_group = '$grp' AND s.owner_pid = m.pid) AS segs
            FROM coord.members AS m WHERE m.partition_group = '$grp' AND m.alive" >/dev/null
  s4_q "INSERT INTO s4.mail (rcpt) SELECT 'rcpt' || i || '@example.org' FROM generate_series(1, $n_group) AS i" >/dev/null
  local mine_sql="SELECT m.* FROM s4.mail AS m JOIN s4.shares AS h ON coord.segment_of('$grp', m.rcpt) = ANY (h.segs)
                   WHERE h.member = '$g_victim'"
  # g2 mid-run: a third of its mails sent
  s4_wait_for "(SELECT count(*) FROM s4.mail WHERE sent_by = '$g_victim') >= (SELECT count(*) FROM ($mine_sql) AS v) / 3" 20
  local gvbackend gvpid=${S4_PID[$g_victim]} t_gkill rc=0
  gvbackend=$(s4_q "SELECT pid FROM pg_stat_activity WHERE application_name = 's4:group:$g_victim'")
  t_gkill=$EPOCHREALTIME
  { kill -KILL -- "-${S4_PID[$g_victim]}"; wait "${S4_PID[$g_victim]}"; } 2>/dev/null || rc=$?
  S4_RC[$g_victim]=$rc
  unset 'S4_PID[$g_victim]'
  s4_wait_for "NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $gvbackend)" 5
  local g_before g_left g_segs
  g_before=$(s4_q "SELECT count(*) FROM s4.mail WHERE sent_by = '$g_victim'")
  g_left=$(s4_q "SELECT count(*) FROM ($mine_sql) AS v WHERE sent_by IS NULL")
  g_segs=$(s4_q "SELECT segments FROM s4.shares WHERE member = '$g_victim'")
  echo "    SIGKILL $g_victim (pid $gvpid, backend $gvbackend) after it sent $g_before of its mails; $g_left not sent yet"
  # the survivors take g2's segments at their next coord.owned, and each
  # runner logs the segments it finds newly its own (s4.owned_log): read
  # from that log, the takeover is still there after they have exited
  local g_kill_ts
  g_kill_ts="to_timestamp($t_gkill)"
  s4_wait_for "(SELECT count(DISTINCT l.segment) FROM s4.owned_log AS l JOIN s4.shares AS h ON l.segment = ANY (h.segs)
                 WHERE h.member = '$g_victim' AND l.runner IN ('g1', 'g3') AND l.at > $g_kill_ts) = $g_segs" 10 || true
  s4_q "CREATE TABLE s4.owners_after AS
          SELECT DISTINCT ON (l.segment) l.segment, l.runner AS member, l.token, l.at AS taken_at
            FROM s4.owned_log AS l WHERE l.at > $g_kill_ts ORDER BY l.segment, l.at" >/dev/null
  local takeover takeover_n
  takeover=$(s4_q "SELECT string_agg(format('%s took %s', member, n), ', ' ORDER BY member)
                          || format(', the last %s ms after the kill', round(max(ms)::numeric, 1))
                     FROM (SELECT a.member, count(*) AS n, max((extract(epoch FROM a.taken_at) - $t_gkill) * 1000) AS ms
                             FROM s4.owners_after AS a JOIN s4.shares AS h ON a.segment = ANY (h.segs)
                            WHERE h.member = '$g_victim' GROUP BY a.member) AS t")
  takeover_n=$(s4_q "SELECT count(*) FROM s4.owners_after AS a JOIN s4.shares AS h ON a.segment = ANY (h.segs)
                      WHERE h.member = '$g_victim' AND a.member IN ('g1', 'g3')")
  echo "    its $g_segs segments: ${takeover:-not taken over}"
  waited_ok=0
  s4_wait "$deadline" g1 g3 && waited_ok=1
  echo "    each runner's share, against its weight:"
  s4_psql_table "SELECT h.member AS runner, h.weight, round((100 * h.target_share)::numeric)::text || '%' AS weight_share,
                        h.segments || ' (' || round(100.0 * h.segments / 1024, 1) || '%)' AS segments,
                        count(m.id) || ' (' || round(100.0 * count(m.id) / $n_group, 1) || '%)' AS mails_in_them,
                        (SELECT count(*) FROM s4.mail_sends AS x WHERE x.runner = h.member) AS sent,
                        (SELECT count(*) FROM s4.mail_sends AS x JOIN s4.shares AS v ON x.segment = ANY (v.segs)
                          WHERE x.runner = h.member AND v.member = '$g_victim' AND h.member <> '$g_victim') AS of_${g_victim}s
                   FROM s4.shares AS h LEFT JOIN s4.mail AS m ON coord.segment_of('$grp', m.rcpt) = ANY (h.segs)
                  GROUP BY h.member, h.weight, h.target_share, h.segments ORDER BY h.member"
  local seg_dev mail_dev wrong p3
  seg_dev=$(s4_q "SELECT round(max(abs(100.0 * segments / 1024 - 100 * target_share))::numeric, 1) FROM s4.shares")
  mail_dev=$(s4_q "SELECT round(max(abs(100.0 * n / $n_group - 100 * target_share))::numeric, 1)
                     FROM (SELECT h.target_share, count(m.id) AS n FROM s4.shares AS h
                             LEFT JOIN s4.mail AS m ON coord.segment_of('$grp', m.rcpt) = ANY (h.segs)
                            GROUP BY h.member, h.target_share) AS t")
  # each mark: by a runner that owned its segment, with the token it took it with
  wrong=$(s4_q "SELECT count(*) FROM s4.mail_sends AS x
                  WHERE NOT EXISTS (SELECT FROM s4.owned_log AS l
                                     WHERE l.runner = x.runner AND l.segment = x.segment AND l.token = x.seg_token)")
  p3=$(s4_q "SELECT count(*) || ' ' || count(DISTINCT mail_id) || ' ' ||
                    (SELECT count(*) FROM s4.mail WHERE sent_by IS NULL) FROM s4.mail_sends")
  s4_check "the runners' segments follow the weights 3:2:1 within 5 points (worst: $seg_dev)" \
    'awk -v d="${seg_dev:-99}" "BEGIN { exit !(d <= 5) }"'
  s4_check "so do their mails, within 8 points (worst: $mail_dev; $n_group mails hash less evenly than 1024 segments)" \
    'awk -v d="${mail_dev:-99}" "BEGIN { exit !(d <= 8) }"'
  s4_check "$g_victim was SIGKILLed mid-run ($g_before of its mails sent, $g_left not)" \
    '[ "${S4_RC[$g_victim]}" = 137 ] && [ "$g_before" -ge 1 ] && [ "$g_left" -ge 1 ]'
  s4_check "g1 and g3 took all $g_segs of its segments, sent the rest and exited 0" \
    '[ "$takeover_n" = "$g_segs" ] && [ $waited_ok = 1 ] && s4_all_rc0 g1 g3'
  s4_check "every mail was marked by the owner of its segment ($wrong otherwise)" '[ "$wrong" = 0 ]'
  s4_check "part 3: $n_group mails sent exactly once ($n_group marks, 0 duplicates, 0 unsent)" '[ "$p3" = "$n_group $n_group 0" ]'

  # ------------------------------------------------------------ totals
  local total=$((n_mails + n_lease)) all stats
  all=$(s4_q "SELECT count(DISTINCT mail_no) || ' ' || count(*) || ' ' || (count(*) - count(DISTINCT job_id))
                     || ' ' || ($total - count(DISTINCT mail_no)) FROM s4.sent")
  stats=$(s4_q "SELECT ready + scheduled + running || ' ' || dead || ' ' || done_last_hour FROM coord.queue_stats WHERE queue = 'mail'")
  local dups lost
  read -r _ _ dups lost <<<"$all"
  echo "  parts 1 and 2 in all: $(cut -d' ' -f2 <<<"$all") sends of $total mails, $dups duplicates, $lost lost;" \
       "coord.queue_stats: $(cut -d' ' -f1 <<<"$stats") live, $(cut -d' ' -f2 <<<"$stats") dead, $(cut -d' ' -f3 <<<"$stats") done"
  s4_check "every mail sent exactly once (0 duplicates, 0 lost); the queue is empty, $total jobs done, none dead" \
    '[ "$all" = "$total $total 0 0" ] && [ "$stats" = "0 0 $total" ]'

  if [ "$S4_FAILED" = 0 ]; then
    echo "S4: ok, $S4_CHECKS checks: $total mails, ${#runners[@]} runners ($(if [ $use_node = 1 ]; then echo 'Python and Node'; else echo 'Python'; fi)), each sent exactly once;" \
         "SIGKILLed $victim's $n_held jobs claimed again within $reclaim_max ms; a stalled lease holder's complete returned false;" \
         "$n_group table mails split 3:2:1 by a partition group, $g_victim SIGKILLed, its share taken over, each sent once"
  else
    echo "  worker logs kept in $S4_LOGDIR"
    S4_REPORTED=1
    echo "S4: FAILED, $S4_FAILED of $S4_CHECKS checks failed"
    return 1
  fi
}
