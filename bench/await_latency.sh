#!/usr/bin/env bash
# bench/await_latency.sh [runs]: coord.await's wake-up latency and its CPU
# use while waiting (default 100 runs).
#
# A private cluster (fsync and synchronous_commit as test/lib.sh sets them,
# track_commit_timestamp on).  Each run: an awaiter session calls
# coord.await on a claimed job and waits (seen waiting in pg_stat_activity,
# wait_event Extension); another session completes the job.  Latency is
# the awaiter's clock_timestamp() right after coord.await returned minus
# the finishing transaction's commit timestamp (pg_xact_commit_timestamp:
# taken as the commit record is written, so the WAL flush is included),
# both the server's clock.  Then one await of 2 seconds that nothing
# finishes: the CPU time its backend used meanwhile (/proc, clock ticks).
# Two series: the completer with synchronous_commit on (the latency then
# includes its WAL flush) and off (the wake-up path alone).  Prints p50,
# p99 and max in ms, and the ticks.
set -eu
RUNS=${1:-100}
export COORD_PGPORT=${COORD_PGPORT:-54358}
. "$(dirname "$0")/../test/lib.sh"
coord_cluster_start
echo "track_commit_timestamp = on" >>"$PGDATA/postgresql.conf"
as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -w restart -l "$COORD_TMP/server.log" >/dev/null
coord_createdb await_bench
export PGDATABASE=await_bench
q() { psql -qAtX -v ON_ERROR_STOP=1 -c "$1"; }
now_ms() { local t=${EPOCHREALTIME/./}; echo $(( t / 1000 )); }

# one series: $1 = the completer's synchronous_commit; prints p50 p99 max
series() {
  local sc=$1 i id token awaiter limit woke committed n
  : >"$COORD_TMP/lat.txt"
  for i in $(seq "$RUNS"); do
    q "SELECT coord.enqueue('aw')" >/dev/null
    read -r id token < <(q "SELECT id, token FROM coord.claim('aw', 1, '1 hour')" | tr '|' ' '; echo)
    q "SELECT round(extract(epoch FROM clock_timestamp()) * 1000000) FROM coord.await($id, '10 seconds') AS a
        WHERE a.state IS NOT NULL" >"$COORD_TMP/woke" &
    awaiter=$!
    limit=$(( $(now_ms) + 5000 ))
    until [ "$(q "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Extension' AND query LIKE '%coord.await($id,%'")" = 1 ]; do
      [ "$(now_ms)" -lt "$limit" ] || { echo "the awaiter never waited" >&2; exit 1; }
      sleep 0.005
    done
    psql -qAtX -v ON_ERROR_STOP=1 -c "SET synchronous_commit = $sc" -c "SELECT coord.complete($id, $token)" >/dev/null
    wait "$awaiter"
    woke=$(cat "$COORD_TMP/woke")
    committed=$(q "SELECT round(extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000000) FROM coord.job_history WHERE id = $id")
    echo "scale=3; ($woke - $committed) / 1000" | bc >>"$COORD_TMP/lat.txt"
  done
  sort -n "$COORD_TMP/lat.txt" >"$COORD_TMP/lat.sorted"
  n=$(wc -l <"$COORD_TMP/lat.sorted")
  echo "$(sed -n "$(( (n + 1) / 2 ))p" "$COORD_TMP/lat.sorted") $(sed -n "$(( (n * 99 + 99) / 100 ))p" "$COORD_TMP/lat.sorted") $(tail -1 "$COORD_TMP/lat.sorted")"
}
read -r on50 on99 onmax < <(series on)
read -r off50 off99 offmax < <(series off)

# CPU while waiting: 2 seconds of an await that nothing ends
q "SELECT coord.enqueue('idle')" >/dev/null
idle=$(q "SELECT max(id) FROM coord.job")
q "SELECT * FROM coord.await($idle, '2 seconds')" >/dev/null &
awaiter=$!
until pid=$(q "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Extension' AND query LIKE '%coord.await($idle,%'") && [ -n "$pid" ]; do sleep 0.005; done
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
t0=$(ticks "$pid")
sleep 1.5
t1=$(ticks "$pid")
wait "$awaiter"
echo "await wake-up latency, $RUNS runs each, ms from the finishing commit's timestamp:"
echo "  completer synchronous_commit on (its WAL flush included): p50 $on50, p99 $on99, max $onmax"
echo "  completer synchronous_commit off (the wake-up alone):     p50 $off50, p99 $off99, max $offmax"
echo "CPU of a backend awaiting for 1.5 s: $(( t1 - t0 )) clock ticks ($(getconf CLK_TCK)/s)"
