#!/usr/bin/env bash
# Pushed cancel (issue 27): coord.cancel of a running job, by the role that
# enqueued it, and coord-agent kills the child's process group within
# 200 ms -- it LISTENs on each running job's channel "coord:job:<id>" and
# kills on "cancel", not at its next heartbeat (`check`, 5 s: the old
# worst case).  Two agents, one with session-bound claims (S) and one with
# lease claims (L, 30 s lease: no heartbeat comes before the test ends),
# each running 3 gated jobs of a producer role's (a member of coord_worker,
# not coord_admin).  Two of each agent's jobs are cancelled, one at a
# time; each time the time from the cancel's commit (the server's clock,
# read right after it) to the last process of the child's group gone (seen
# by a watcher started before the cancel, on the same machine's clock) is
# measured.  Then the gate opens.
# Passes when every cancelled child (and its grandchild) was gone within
# 200 ms, never reached its end, its job is cancelled in the history and
# was not reported by the agent (logged as cancelled, lost), while the
# jobs not cancelled ran on and finished done.
set -euo pipefail
export COORD_PGPORT=54356
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/agent_lib.sh"
agent_setup

sql "CREATE ROLE cancel_producer IN ROLE coord_worker"

# watch_gone PID...: prints the time (ms) when none of them runs any more,
# polling every 2 ms, without a fork per look; gives up after 5 s
watch_gone() {
  local p st alive t limit=$(( $(now_ms) + 5000 ))
  while :; do
    alive=0
    for p in "$@"; do
      { read -r _ _ st _ <"/proc/$p/stat"; } 2>/dev/null || continue
      [ "$st" != Z ] && alive=1
    done
    t=${EPOCHREALTIME/./}
    t=$(( t / 1000 ))
    { [ $alive = 0 ] || [ "$t" -gt "$limit" ]; } && break
    sleep 0.002
  done
  echo "$t"
}
for a in S L; do
  cat >"$W/$a.conf" <<EOF
pass_env = PG*
queues = work$a
concurrency = 3
poll = 200ms

[task slow]
command = $W/child.sh
env = GATE=$W/gate
env = AGENT=$a
EOF
done
declare -A IDS
for a in S L; do
  IDS[$a]=$(sql "SET ROLE cancel_producer; SELECT string_agg(coord.enqueue('work$a', '{\"task\": \"slow\"}')::text, ',') FROM generate_series(1, 3)" | tail -1)
done
start_agent S "$W/S.conf"
start_agent L "$W/L.conf" --lease=30s
wait_sql "(SELECT count(*) FROM t.starts) = 6" 30 || true

kill_ms=()
for a in S L; do
  for id in $(echo "${IDS[$a]}" | cut -d, -f1,2 | tr , ' '); do
    victims=$(sql "SELECT pid || ' ' || sleep_pid FROM t.starts WHERE job_id = $id")
    # a watcher, started before the cancel, notes when the group is gone
    rm -f "$W/gone"
    # shellcheck disable=SC2086
    watch_gone $victims >"$W/gone.tmp" &
    watcher=$!
    # the cancel commits, then the server's clock is read: the start of the measure
    out=$(psql -qAtX -v ON_ERROR_STOP=1 -c "SET ROLE cancel_producer" \
      -c "SELECT coord.cancel($id)" -c "SELECT round(extract(epoch FROM clock_timestamp()) * 1000)")
    cancelled=${out%%$'\n'*}
    t0=${out##*$'\n'}
    wait "$watcher" || true
    kill_ms+=("$(( $(cat "$W/gone.tmp") - t0 ))")
    check "agent $a: job $id cancelled by its producer ($cancelled)" eq "$cancelled" t
  done
done
max=0
for k in "${kill_ms[@]}"; do [ "$k" -gt "$max" ] && max=$k; done
check "every cancelled child's process group gone within 200 ms of the cancel's commit (${kill_ms[*]} ms)" \
  between "$max" 0 199
open_gate
all=${IDS[S]},${IDS[L]}
wait_sql "(SELECT count(*) FROM coord.jobs WHERE id IN ($all) AND state IN ('done', 'cancelled')) = 6" 30 || true

check "the counts: 4 cancelled, 2 done" \
  eq "$(sql "SELECT count(*) FILTER (WHERE state = 'cancelled') || '/' || count(*) FILTER (WHERE state = 'done') FROM coord.jobs WHERE id IN ($all)")" "4/2"
check "no cancelled run reached its end; the others did, once each" \
  eq "$(sql "SELECT count(*) FILTER (WHERE j.state = 'cancelled') || '/' || count(*) FILTER (WHERE j.state = 'done') FROM t.results r JOIN coord.jobs j ON j.id = r.job_id")" "0/2"
check "each agent logged its 2 kills on NOTIFY cancel" \
  eq "$(grep -c 'cancelled (NOTIFY cancel): killing' "$W/S.log") $(grep -c 'cancelled (NOTIFY cancel): killing' "$W/L.log")" "2 2"
check "and reported nothing for them (outcome=lost), the rest done" \
  eq "$(cat "$W/S.log" "$W/L.log" | grep -c 'outcome=lost') $(cat "$W/S.log" "$W/L.log" | grep -c 'outcome=done')" "4 2"

finish "cancel: 4 running jobs cancelled by their producer under two agents (session-bound, lease): children gone in ${kill_ms[*]} ms (< 200); the other 2 done; $CHECKS checks passed"
