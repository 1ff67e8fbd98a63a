#!/usr/bin/env bash
# Hot standby and failover (issue 8): a primary (port 54337) and a streaming
# replica made with pg_basebackup (port 54347), both private, unix sockets
# only.  The primary runs synchronous_commit = remote_apply with the replica
# as its synchronous standby, so a commit the client saw is on the replica.
#
#   1. the state (jobs, requests, fences, schedules) replicates and reads back
#      through coord's views on the standby;
#   2. every writing function called on the standby fails with a clear ERROR
#      (SQLSTATE table printed), never crashes, and leaks no lock;
#   3. 3 worker processes and a producer work on the primary; the primary is
#      stopped with pg_ctl -m immediate, the standby is promoted, the workers
#      reconnect (libpq multi-host, target_session_attrs=read-write) and finish:
#      every job is done exactly once, no acknowledged commit is lost, and
#      every fencing token issued after the promotion is larger than every
#      token issued before.
#
# Starts and stops its own two servers (it does not use the cluster in the
# PG* environment).  Exit 0 = pass; the last line is a one-line summary.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../lib.sh"
set -euo pipefail

PRIMARY_PORT=${COORD_FAILOVER_PORT:-54337}
STANDBY_PORT=${COORD_FAILOVER_STANDBY_PORT:-54347}

# Stops the standby (if any), then the primary, and removes the directory.
standby_stop() {
  if [ -n "${STANDBY_DATA:-}" ] && [ -f "$STANDBY_DATA/postmaster.pid" ]; then
    as_pg "$PGBIN/pg_ctl" -D "$STANDBY_DATA" -m immediate -w stop >/dev/null 2>&1 || true
  fi
}
cleanup() {
  local rc=$?
  if [ "$rc" -ne 0 ] && [ -n "${COORD_TMP:-}" ]; then
    for f in "$COORD_TMP/server.log" "$COORD_TMP/standby.log"; do
      [ -f "$f" ] && { log "--- last lines of $(basename "$f")"; tail -15 "$f" >&2; }
    done
  fi
  standby_stop
  if [ -n "${COORD_TMP:-}" ] && [ -n "${PGDATA:-}" ] && [ -f "$PGDATA/postmaster.pid" ]; then
    as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  coord_cluster_stop
  exit "$rc"
}

t0=$(date +%s.%N)
COORD_PGPORT=$PRIMARY_PORT coord_cluster_start
trap cleanup EXIT
PRIMARY_HOST=$COORD_TMP
STANDBY_DATA=$COORD_TMP/standby
STANDBY_HOST=$COORD_TMP/standby_sock

# The primary: replication settings (the PG 15 defaults, spelled out) and a
# local (unix socket) replication entry; then a restart.
cat >>"$PGDATA/postgresql.conf" <<CONF
wal_level = replica
max_wal_senders = 4
hot_standby = on
wal_sender_timeout = 5s
CONF
grep -qE '^local[[:space:]]+replication[[:space:]]+all[[:space:]]+trust' "$PGDATA/pg_hba.conf" ||
  echo 'local replication all trust' >>"$PGDATA/pg_hba.conf"
as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -l "$COORD_TMP/server.log" -w -t 60 restart >/dev/null

# The standby: a base backup streamed over the unix socket, -R writes
# primary_conninfo and standby.signal.  Its own port and socket directory;
# cluster_name is the application_name the primary's synchronous_standby_names
# names.
as_pg mkdir -m 700 "$STANDBY_HOST"
t_primary=$(date +%s.%N)
# --no-sync: a throwaway copy (no OS crash in this test), and fsyncing it is
# most of the base backup's time here
as_pg "$PGBIN/pg_basebackup" -D "$STANDBY_DATA" -R -X stream -c fast --no-sync \
  -h "$PRIMARY_HOST" -p "$PRIMARY_PORT" -U postgres
cat >>"$STANDBY_DATA/postgresql.conf" <<CONF
# standby overrides
port = $STANDBY_PORT
unix_socket_directories = '$STANDBY_HOST'
cluster_name = 'coord_standby'
hot_standby = on
wal_receiver_status_interval = 1s
CONF
t_backup=$(date +%s.%N)
as_pg "$PGBIN/pg_ctl" -D "$STANDBY_DATA" -l "$COORD_TMP/standby.log" -w -t 60 start >/dev/null

# Wait until the primary sees the standby streaming, then make it synchronous
# (ALTER SYSTEM after the base backup: the standby's copy has no
# synchronous_standby_names, so it commits alone once promoted).
for _ in $(seq 1 100); do
  st=$(psql -qXAt -h "$PRIMARY_HOST" -p "$PRIMARY_PORT" -d postgres \
        -c "SELECT state FROM pg_stat_replication WHERE application_name = 'coord_standby'")
  [ "$st" = streaming ] && break
  sleep 0.1
done
[ "${st:-}" = streaming ] || { log "FAIL: the standby is not streaming (state '${st:-}')"; exit 1; }
psql -qXAt -v ON_ERROR_STOP=1 -h "$PRIMARY_HOST" -p "$PRIMARY_PORT" -d postgres \
  -c "ALTER SYSTEM SET synchronous_standby_names = 'coord_standby'" \
  -c "ALTER SYSTEM SET synchronous_commit = 'remote_apply'" \
  -c "SELECT pg_reload_conf()" >/dev/null
for _ in $(seq 1 50); do
  ss=$(psql -qXAt -h "$PRIMARY_HOST" -p "$PRIMARY_PORT" -d postgres \
        -c "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'coord_standby'")
  [ "$ss" = sync ] && break
  sleep 0.1
done
[ "${ss:-}" = sync ] || { log "FAIL: the standby did not become synchronous (sync_state '${ss:-}')"; exit 1; }
t_ready=$(date +%s.%N)
log "primary :$PRIMARY_PORT, standby :$STANDBY_PORT streaming and synchronous (remote_apply) after $(awk \
  "BEGIN {printf \"%.1fs (primary %.1fs, base backup %.1fs, standby %.1fs)\", $t_ready - $t0, $t_primary - $t0, $t_backup - $t_primary, $t_ready - $t_backup}")"

export PRIMARY_HOST PRIMARY_PORT STANDBY_HOST STANDBY_PORT STANDBY_DATA PGBIN
"$PYTHON" "$HERE/standby_failover.py"
