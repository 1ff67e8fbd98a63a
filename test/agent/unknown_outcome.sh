#!/usr/bin/env bash
# Unknown outcomes (issue 24, item 2): a result that the server sent, but
# whose commit it never confirmed, is not a success.  With the extended
# protocol the row of coord.complete comes before the commit; at a planned
# failover PostgreSQL cancels the commit's wait for the synchronous standby
# ("committed locally, but might not have been replicated") and drops the
# connection, and the completion may be missing on the new primary.  No
# failover manager here: a synchronous standby that does not exist
# (synchronous_standby_names = 'coord_test_nosuch', so every commit that
# writes waits for it, and the test ends the wait), and a proxy between the
# agents and the server that, once armed, sends the server a Flush instead
# of the Sync of the next coord.complete, passes the row and CommandComplete
# on, and closes both connections: the row came, the commit never happened
# (the server rolls back).  Agent S is session-bound, agent L has 10 s
# leases; both connect through the proxy; every task waits at its own gate,
# and writes its rows with synchronous_commit = local.
#   A  complete; the backend is terminated in the commit's wait: the row
#      came, the connection went.  Committed: the agent logs the outcome as
#      unknown, resolves it after the reconnect (coord.claim_state): done.
#   C  complete; the wait is cancelled (the connection stays): committed
#      on the primary only.  The agent resolves it at once, in a transaction
#      that writes, so its answer waits for the standby too: no end line
#      while the standby is missing; done once it is not.
#   E  fail (the last attempt); terminated in the wait: resolved, dead.
#   B  complete; the proxy cuts it after the row: nothing committed.  The
#      agent must not log done: the claim was released with the session
#      (outcome=lost), the job runs again.
#   F  claim; the wait is cancelled: the agent does not start what it may
#      not hold, drops the session, and the job runs once, from a new claim.
#   L  lease: as B, but the claim outlives the session: the agent resolves
#      it (claimed), completes again with the same token: one run.
#   H  lease heartbeat; the wait is cancelled: logged, the lease is not
#      counted as renewed.
# The agent before the change logged outcome=done at once in A, C and B
# (B: a completion that never committed), started F's job from its
# uncommitted claim, and ran L's job twice.
set -euo pipefail
export COORD_PGPORT=54363
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/agent_lib.sh"
agent_setup

# writes that must not wait for the missing standby (the test's own)
sqll() { psql -qAtX -v ON_ERROR_STOP=1 -c "SET synchronous_commit = local" -c "$1"; }

# waits until the backend of agent NAME waits on EVENT (SyncRep)
wait_event() {
  wait_sql "EXISTS (SELECT FROM pg_stat_activity WHERE application_name = '$1' AND wait_event = '$2')" "${3:-20}"
}
backend_of() {
  sql "SELECT pid FROM pg_stat_activity WHERE application_name = '$1' AND backend_type = 'client backend'"
}

# The missing synchronous standby, in effect once a probe's commit waits for it.
syncrep_on() {
  local limit p
  sql "ALTER SYSTEM SET synchronous_standby_names = 'coord_test_nosuch'"
  sql "SELECT pg_reload_conf()" >/dev/null
  limit=$(( $(now_ms) + 20000 ))
  while [ "$(now_ms)" -lt "$limit" ]; do
    PGAPPNAME=probe psql -qAtX -c "SELECT pg_logical_emit_message(true, 'probe', 'x')" >/dev/null 2>&1 &
    p=$!
    if wait_event probe SyncRep 2; then
      sql "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'probe'" >/dev/null
      wait "$p" || true
      return 0
    fi
    wait "$p" || true
  done
  return 1
}
syncrep_off() {
  sql "ALTER SYSTEM RESET synchronous_standby_names"
  sql "SELECT pg_reload_conf()" >/dev/null
}

# end_lines NAME JOB: the agent's end lines of a job
end_lines() { grep -- "job $2 end " "$W/$1.log" || true; }

task() {
  printf '[task %s]\ncommand = %s/child.sh\nenv = GATE=%s/gate_%s\nenv = PGOPTIONS=-c synchronous_commit=local\nenv = PGHOST=%s\n%s\n' \
    "$1" "$W" "$W" "$1" "$PGHOST" "${2:-}"
}
{
  cat <<EOF
pass_env = PG*
concurrency = 1
poll = 200ms
check = 500ms
statement_timeout = 20s
EOF
  task a; task c; task e "env = EXIT=3"; task b; task l; task h
  printf '[task f]\ncommand = %s/child.sh\nenv = PGOPTIONS=-c synchronous_commit=local\nenv = PGHOST=%s\n' "$W" "$PGHOST"
} >"$W/agent.conf"

# The proxy (see the header); armed by the file $W/cut, which it removes.
cat >"$W/pgproxy.py" <<'PY'
import os, socket, struct, sys, threading

# pgproxy LISTEN_SOCKET SERVER_SOCKET ARM_FILE
listen_path, server_path, arm_path = sys.argv[1:4]


def messages(buf):
    """Splits complete typed messages off the front of buf: (list, rest)."""
    out = []
    while len(buf) >= 5:
        n = struct.unpack('!I', buf[1:5])[0]
        if len(buf) < 1 + n:
            break
        out.append(buf[:1 + n])
        buf = buf[1 + n:]
    return out, buf


def relay(client):
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.connect(server_path)
    state = {'cut': False}
    lock = threading.Lock()

    def close_both():
        for s in (client, server):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def up():
        # the startup packet has no type byte
        buf = b''
        started = False
        try:
            while True:
                data = client.recv(65536)
                if not data:
                    break
                buf += data
                if not started:
                    if len(buf) < 4:
                        continue
                    n = struct.unpack('!I', buf[:4])[0]
                    if len(buf) < n:
                        continue
                    server.sendall(buf[:n])
                    buf = buf[n:]
                    started = True
                msgs, buf = messages(buf)
                out = b''
                for m in msgs:
                    if m[:1] == b'P' and (b'coord.complete(' in m or b'coord.complete_and_claim(' in m) and os.path.exists(arm_path):
                        os.unlink(arm_path)
                        with lock:
                            state['cut'] = True
                    if m[:1] == b'S' and state['cut']:
                        # a Flush instead of the Sync: the rows come, the commit never
                        m = b'H' + struct.pack('!I', 4)
                    out += m
                server.sendall(out)
        except OSError:
            pass
        close_both()

    def down():
        buf = b''
        try:
            while True:
                data = server.recv(65536)
                if not data:
                    break
                buf += data
                msgs, buf = messages(buf)
                out = b''
                done = False
                for m in msgs:
                    out += m
                    if m[:1] == b'C' and state['cut']:
                        done = True
                        break
                client.sendall(out)
                if done:
                    break
        except OSError:
            pass
        close_both()

    threading.Thread(target=up, daemon=True).start()
    threading.Thread(target=down, daemon=True).start()


if os.path.exists(listen_path):
    os.unlink(listen_path)
ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
ls.bind(listen_path)
os.chmod(listen_path, 0o777)
ls.listen(16)
print('listening', flush=True)
while True:
    c, _ = ls.accept()
    relay(c)
PY
mkdir -p "$W/px"
/usr/bin/python3 "$W/pgproxy.py" "$W/px/.s.PGSQL.$PGPORT" "$PGHOST/.s.PGSQL.$PGPORT" "$W/cut" >"$W/proxy.log" 2>&1 &
PROXY_PID=$!
trap 'kill $PROXY_PID 2>/dev/null || true; agent_teardown' EXIT
limit=$(( $(now_ms) + 10000 ))
while [ ! -S "$W/px/.s.PGSQL.$PGPORT" ] && [ "$(now_ms)" -lt "$limit" ]; do sleep 0.05; done

PGHOST=$W/px start_agent S "$W/agent.conf" -q sq
PGHOST=$W/px start_agent L "$W/agent.conf" -q lq --lease 10s
wait_log S 'connected to database' 30 || true
wait_log L 'connected to database' 30 || true

# enqueue_started AGENT_QUEUE TASK [ARGS]: enqueues, waits for the child to start
enqueue_started() {
  local id
  id=$(sqll "SELECT coord.enqueue('$1', '{\"task\": \"$2\"}'${3:+, $3})")
  wait_sql "EXISTS (SELECT FROM t.starts WHERE job_id = $id)" 30 || true
  echo "$id"
}

echo "== A: complete, terminated in the wait for the standby (committed)"
a=$(enqueue_started sq a)
syncrep_on
touch "$W/gate_a"
check "A: the complete waits for the standby" wait_event S SyncRep
sql "SELECT pg_terminate_backend($(backend_of S))" >/dev/null
syncrep_off
wait_log S "job $a end " 30 || true
check "A: the outcome was logged as unknown" \
  eq "$(grep -c "job $a: the outcome of coord.complete is unknown" "$W/S.log")" 1
check "A: one end line: done, resolved by coord.claim_state" \
  eq "$(end_lines S "$a" | grep -c 'outcome=done result=json state=done .*coord.claim_state: done, so it committed')" 1
check "A: done with the token of its claim" \
  eq "$(sql "SELECT j.state FROM coord.jobs j JOIN t.starts s ON s.job_id = j.id AND s.token = j.token WHERE j.id = $a")" done

echo "== C: complete, the wait for the standby cancelled (committed on the primary only)"
c=$(enqueue_started sq c)
syncrep_on
touch "$W/gate_c"
check "C: the complete waits for the standby" wait_event S SyncRep
sql "SELECT pg_cancel_backend($(backend_of S))" >/dev/null
wait_log S "job $c: the outcome of coord.complete is unknown" 10 || true
check "C: the outcome was logged as unknown" \
  eq "$(grep -c "job $c: the outcome of coord.complete is unknown" "$W/S.log")" 1
check "C: its resolution waits for the standby too" wait_event S SyncRep 10
check "C: no end line while the standby is missing" eq "$(end_lines S "$c" | wc -l)" 0
syncrep_off
wait_log S "job $c end " 30 || true
check "C: then one end line: done, resolved" \
  eq "$(end_lines S "$c" | grep -c 'outcome=done .*coord.claim_state: done, so it committed')" 1

echo "== E: fail (the last attempt), terminated in the wait (committed)"
e=$(enqueue_started sq e "max_attempts => 1")
syncrep_on
touch "$W/gate_e"
check "E: the fail waits for the standby" wait_event S SyncRep
sql "SELECT pg_terminate_backend($(backend_of S))" >/dev/null
syncrep_off
wait_log S "job $e end " 30 || true
check "E: the outcome was logged as unknown" \
  eq "$(grep -c "job $e: the outcome of coord.fail is unknown" "$W/S.log")" 1
check "E: one end line: failed, dead, resolved" \
  eq "$(end_lines S "$e" | grep -c 'outcome=failed exit=3 state=dead .*coord.claim_state: dead, so it committed')" 1
check "E: dead" eq "$(sql "SELECT coord.job_state($e)")" dead

echo "== B: complete, cut after the row by the proxy (not committed)"
b=$(enqueue_started sq b)
touch "$W/cut" "$W/gate_b"
wait_sql "coord.job_state($b) = 'done'" 30 || true
check "B: the proxy cut the complete after its row" test ! -e "$W/cut"
check "B: the outcome was logged as unknown" \
  eq "$(grep -c "job $b: the outcome of coord.complete is unknown (the connection was lost after the result" "$W/S.log")" 1
check "B: the first end line is lost (released, nothing committed), not done" \
  eq "$(end_lines S "$b" | head -1 | grep -c 'outcome=lost .*coord.claim_state: released')" 1
check "B: it ran again, and that run completed it" \
  eq "$(sql "SELECT count(*) || ' ' || (SELECT j.state FROM coord.jobs j WHERE j.id = $b AND j.token = max(s.token))
               FROM t.starts s WHERE s.job_id = $b")" "2 done"
check "B: one done end line, the second run's" eq "$(end_lines S "$b" | grep -c 'outcome=done')" 1

echo "== F: claim, the wait for the standby cancelled"
syncrep_on
check "F: S is idle (its backend waits for nothing)" \
  eq "$(sql "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'S' AND wait_event = 'SyncRep'")" 0
f=$(sqll "SELECT coord.enqueue('sq', '{\"task\": \"f\"}')")
check "F: the claim waits for the standby" wait_event S SyncRep
sql "SELECT pg_cancel_backend($(backend_of S))" >/dev/null
wait_log S "the outcome of a claim from queue sq is unknown" 10 || true
syncrep_off
wait_sql "coord.job_state($f) = 'done'" 30 || true
check "F: the claim's outcome was logged as unknown" \
  eq "$(grep -c 'the outcome of a claim from queue sq is unknown' "$W/S.log")" 1
check "F: one run, from a later claim (attempt 2), done" \
  eq "$(sql "SELECT count(*) || ' ' || max(attempt) || ' ' || coord.job_state($f) FROM t.starts WHERE job_id = $f")" "1 2 done"

echo "== L: lease; complete cut after the row by the proxy (not committed)"
l=$(enqueue_started lq l)
touch "$W/cut" "$W/gate_l"
wait_sql "coord.job_state($l) = 'done'" 30 || true
check "L: the proxy cut the complete after its row" test ! -e "$W/cut"
check "L: the outcome was logged as unknown, then reported again" \
  eq "$(grep -c "job $l: the outcome of coord.complete is unknown" "$W/L.log") $(grep -c "job $l: coord.claim_state: claimed: its report did not commit; reporting again" "$W/L.log")" "1 1"
check "L: one run, done with the token of its claim, one end line" \
  eq "$(sql "SELECT count(*) FROM t.starts s JOIN coord.jobs j ON j.id = s.job_id AND j.token = s.token AND j.state = 'done' WHERE s.job_id = $l") $(end_lines L "$l" | grep -c 'outcome=done')" "1 1"

echo "== H: lease heartbeat, the wait for the standby cancelled"
h=$(enqueue_started lq h)
syncrep_on
check "H: a heartbeat waits for the standby" wait_event L SyncRep
sql "SELECT pg_cancel_backend($(backend_of L))" >/dev/null
syncrep_off
wait_log L "job $h: the outcome of its heartbeat is unknown" 10 || true
check "H: logged: the lease is not counted as renewed" \
  eq "$(grep -c "job $h: the outcome of its heartbeat is unknown .*the lease is not counted as renewed" "$W/L.log")" 1
touch "$W/gate_h"
wait_sql "coord.job_state($h) = 'done'" 30 || true
check "H: then done, one run" eq "$(sql "SELECT count(*) || ' ' || coord.job_state($h) FROM t.starts WHERE job_id = $h")" "1 done"

finish "unknown_outcome: a result without a confirmed commit is logged as unknown and resolved exactly (committed, released, reported again) for complete, fail, claim and heartbeat; $CHECKS checks passed"
