#!/usr/bin/env bash
# Tables that only grew (issue 23, section 2): each growth loop a worker (or
# an admin, for signals) can run is run for a bounded time, then coord.tick()
# with a short coord.retention must leave none of its rows, while what is
# live (a member, a leader, a held lock, a live lease, a signal an app
# depends on) stays; a tick with the default retention removes nothing that
# young; the per-call caps refuse what a worker may not ask for (segments,
# an election's value), and coord_admin's drop_group / drop_election refuse
# a group with live members and an election with a leader.  Exit 0 = pass;
# the last line says what was checked.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
COORD_PGPORT=${COORD_GROWTH_PGPORT:-54377} coord_cluster_start

checks=0
holder_pid=
cleanup() { [ -n "$holder_pid" ] && kill "$holder_pid" 2>/dev/null; wait 2>/dev/null; coord_cluster_stop; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
q() { psql -qXAt -v ON_ERROR_STOP=1 -d coord_growth -c "$1"; }
as() { psql -qXAt -v ON_ERROR_STOP=1 -d coord_growth -U "$1" -c "$2"; }
expect() {  # expect SQL WANT WHAT
  local got
  got=$(q "$1") || fail "$3: query failed: $1"
  [ "$got" = "$2" ] || fail "$3: got '$got', want '$2'"
  checks=$((checks + 1))
}
refused() {  # refused ROLE SQL SQLSTATE WHAT
  local out
  out=$(psql -qXAt -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -d coord_growth -U "$1" -c "$2" 2>&1) &&
    fail "$4: succeeded, want $3"
  case $out in *"$3"*) ;; *) fail "$4: want $3, got: $out" ;; esac
  checks=$((checks + 1))
}

coord_createdb coord_growth
q "SET client_min_messages = warning;
   CREATE ROLE gw LOGIN IN ROLE coord_worker;
   CREATE ROLE ga LOGIN IN ROLE coord_admin;
   SELECT coord.set_limit('growq', concurrency => 2, rate => 1000, per_key => true);
   SELECT coord.define_app('growapp', depends => '{\"@growused\": \"daily\"}');
   SELECT coord.signal('growused', '2026-01-01');" >/dev/null || fail "setup"

# What stays: a session that is a live member, leader, lock holder, lease
# holder and request owner for the whole test.
psql -qXAt -d coord_growth -U gw \
  -c "SELECT coord.join('live-g', 'm'), coord.campaign('live-e', 'v'), coord.lock('/live/n'),
             coord.fence('/live/n'), coord.lease_lock('/live/l', '1 hour'), coord.request('live-r')" \
  -c "SELECT pg_sleep(120)" >/dev/null 2>&1 &
holder_pid=$!
for _ in $(seq 100); do
  [ "$(q "SELECT count(*) FROM coord.lease WHERE path = '/live/l'")" = 1 ] && break
  sleep 0.1
done
expect "SELECT count(*) FROM coord.members WHERE alive" "1" "the live member is there"

# ---- the growth loops, 2 s each, one transaction per round ----
loop() {  # loop ROLE BODY: BODY runs with i = 0, 1, ... for 2 seconds
  psql -qX -v ON_ERROR_STOP=1 -d coord_growth -U "$1" >/dev/null <<SQL || fail "loop as $1: $2"
DO \$\$
DECLARE i integer := 0; stop timestamptz := clock_timestamp() + interval '2 seconds';
BEGIN
  WHILE clock_timestamp() < stop LOOP
    $2
    COMMIT;
    i := i + 1;
  END LOOP;
END
\$\$;
SQL
}
loop gw "PERFORM coord.join('grow-' || i, 'm', segments => 4096); PERFORM coord.leave('grow-' || i);"
loop gw "PERFORM coord.campaign('grow-e-' || i, repeat('x', 8000)); PERFORM coord.resign('grow-e-' || i);"
loop gw "PERFORM coord.lease_lock('/grow/l/' || i, '10 milliseconds');"
loop gw "PERFORM coord.lock('/grow/n/' || i); PERFORM coord.fence('/grow/n/' || i); PERFORM coord.unlock('/grow/n/' || i);"
# claims one statement each (inside a DO block that commits, a claim of a
# queue with limits finds work only once)
for i in $(seq 0 299); do
  echo "SELECT coord.enqueue('growq', limit_key => 'k$i');"
  if [ $((i % 2)) = 0 ]; then
    echo "SELECT coord.complete(id, token) FROM coord.claim('growq');"
  else
    echo "SELECT coord.fail(id, token, 'busy', retry_after => '10 milliseconds', pause_key => true) FROM coord.claim('growq');"
  fi
done | psql -qX -v ON_ERROR_STOP=1 -d coord_growth -U gw >/dev/null || fail "claim loop"
# the jobs failed for a pause wait for their retry: cancelled, they finish
q "SELECT count(coord.cancel(id)) FROM coord.job WHERE queue = 'growq'" >/dev/null || fail "cancel"
loop ga "PERFORM coord.signal('grow-unused-' || i, '2026-01-01');"
# requested keys whose owner ends: at most 500 (each is a lock of the session)
loop gw "EXIT WHEN i >= 500; PERFORM coord.request('grow-r-' || i);"

counts="SELECT (SELECT count(*) FROM coord.partition_groups WHERE partition_group LIKE 'grow-%')
          || ' ' || (SELECT count(*) FROM coord.partition_segments WHERE partition_group LIKE 'grow-%')
          || ' ' || (SELECT count(*) FROM coord.elections WHERE election LIKE 'grow-%')
          || ' ' || (SELECT count(*) FROM coord.lease WHERE path LIKE '/grow/%')
          || ' ' || (SELECT count(*) FROM coord.fences WHERE path LIKE '/grow/%')
          || ' ' || (SELECT count(*) FROM coord.lock_names WHERE path LIKE '/grow/%')
          || ' ' || (SELECT count(*) FROM coord.job_bucket WHERE queue = 'growq')
          || ' ' || (SELECT count(*) FROM coord.job_pause WHERE queue = 'growq')
          || ' ' || (SELECT count(*) FROM coord.job_running WHERE queue = 'growq')
          || ' ' || (SELECT count(*) FROM coord.app_signals WHERE name LIKE 'grow-unused-%')
          || ' ' || (SELECT count(*) FROM coord.request_keys WHERE key LIKE 'grow-r-%')"
made=$(q "$counts") || fail "counting"
echo "rows made (groups segments elections leases fences lock_names buckets pauses slots signals requests): $made"
for n in $made; do [ "$n" -gt 0 ] || fail "a loop made no rows: $made"; done

# a tick with the default retention (1 day) removes none of these young rows
q "SELECT coord.tick()" >/dev/null || fail "tick"
expect "$counts" "$made" "the default retention keeps young rows"

# ticks with a retention of 1 s: everything dead goes (a group once it has
# been seen empty for 1 s), within a deadline; each tick does a bounded share
t0=$(date +%s)
ticks=0
while :; do
  q "SET coord.retention = '1s'; SET coord.job_history_retention = '1s'; SELECT coord.tick()" >/dev/null || fail "tick"
  ticks=$((ticks + 1))
  left=$(q "$counts")
  [ "$left" = "0 0 0 0 0 0 0 0 0 0 0" ] && break
  [ $(( $(date +%s) - t0 )) -gt 40 ] && fail "rows left after 40 s of ticks: $left"
  sleep 0.2
done
echo "purged in $ticks ticks, $(( $(date +%s) - t0 )) s"
checks=$((checks + 1))

# what is live stays
expect "SELECT count(*) FROM coord.members WHERE partition_group = 'live-g' AND alive" "1" "the live member's group stays"
expect "SELECT count(*) FROM coord.leader('live-e')" "1" "the live leader's election stays"
expect "SELECT count(*) FROM coord.lock_names WHERE path = '/live/n'" "1" "a held lock's name stays"
expect "SELECT count(*) FROM coord.fences WHERE path IN ('/live/n', '/live/l')" "2" "fences of a held lock and a live lease stay"
expect "SELECT count(*) FROM coord.leases WHERE path = '/live/l' AND live" "1" "the live lease stays"
expect "SELECT count(*) FROM coord.app_signals WHERE name = 'growused'" "1" "a signal an app depends on stays"
expect "SELECT count(*) FROM coord.job_limit WHERE queue = 'growq'" "1" "the limit itself stays"
expect "SELECT state FROM coord.request_keys WHERE key = 'live-r'" "requested" "a live owner's request stays"

# per-call caps: a worker's group has at most 4096 segments, its leader
# value at most 8 kB; coord_admin may ask for more
refused gw "SELECT coord.join('big', 'm', segments => 4097)" 54000 "a worker's group of 4097 segments"
expect "SELECT count(*) FROM coord.partition_groups WHERE partition_group = 'big'" "0" "the refused group was never made"
refused gw "SELECT coord.campaign('big-e', repeat('x', 8193))" 54000 "a worker's 8193-byte leader value"
expect "SELECT count(*) FROM coord.elections WHERE election = 'big-e'" "0" "the refused election was never made"
as ga "SELECT coord.join('big', 'm', segments => 65536), coord.leave('big')" >/dev/null || fail "admin's group of 65536 segments"
as ga "SELECT coord.campaign('big-e', repeat('x', 65536)), coord.resign('big-e')" >/dev/null || fail "admin's 64 kB value"
checks=$((checks + 2))

# drop_group / drop_election: coord_admin's, refused while live
refused ga "SELECT coord.drop_group('live-g')" 55000 "dropping a group with a live member"
refused ga "SELECT coord.drop_election('live-e')" 55000 "dropping an election with a leader"
refused gw "SELECT coord.drop_group('big')" 42501 "a worker dropping a group"
expect "SELECT coord.drop_group('big')" "t" "dropping an empty group"
expect "SELECT count(*) FROM coord.partition_segments WHERE partition_group = 'big'" "0" "its segments go with it"
expect "SELECT coord.drop_group('big')" "f" "dropping it again"
expect "SELECT coord.drop_election('big-e')" "t" "dropping a resigned election"
expect "SELECT coord.drop_election('big-e')" "f" "dropping it again"

echo "ok: $checks checks: growth loops (partition groups, elections, leases, fences, lock names, token buckets, pauses, slots, signals, requests) purged by the tick, live state kept, per-call caps, drop_group / drop_election"
