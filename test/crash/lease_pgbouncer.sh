#!/usr/bin/env bash
# Lease locks through a real PgBouncer (Debian's pgbouncer) in pool_mode =
# transaction with one server connection, in front of the cluster of
# test/run.sh (PG* environment), on a unix socket in a temporary directory
# only; and a lease holder killed with SIGKILL, whose lease is free at its
# TTL and not before (lease_pgbouncer.py).
# Exit 0 = pass; the last line says what was checked.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
PGB=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)
[ -x "$PGB" ] || { echo "FAIL: pgbouncer not found (Debian: pgbouncer)"; exit 1; }
T=$(mktemp -d /tmp/pg_coord_lpgb.XXXXXX)
chmod 755 "$T"
[ "$(id -u)" -eq 0 ] && chown postgres: "$T"
PGB_PORT=${COORD_LEASE_PGB_PORT:-54475}
stop_pgb() {
  [ -f "$T/pgbouncer.pid" ] && kill "$(cat "$T/pgbouncer.pid")" 2>/dev/null || true
  sleep 0.2
  psql -qX -d postgres -c "DROP DATABASE IF EXISTS coord_lpgb WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$T"
}
trap stop_pgb EXIT
psql -qX -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS coord_lpgb" \
     -c "CREATE DATABASE coord_lpgb" >/dev/null
psql -qX -d coord_lpgb -c "CREATE EXTENSION pg_coord" >/dev/null
cat >"$T/pgbouncer.ini" <<INI
[databases]
coord_lpgb = host=$PGHOST port=$PGPORT dbname=coord_lpgb user=${PGUSER:-postgres}
[pgbouncer]
listen_addr =
listen_port = $PGB_PORT
unix_socket_dir = $T
auth_type = any
pool_mode = transaction
default_pool_size = 1
max_client_conn = 50
logfile = $T/pgbouncer.log
pidfile = $T/pgbouncer.pid
INI
[ "$(id -u)" -eq 0 ] && chown postgres: "$T/pgbouncer.ini"
as_pg "$PGB" -d -q "$T/pgbouncer.ini"
for i in $(seq 1 50); do [ -S "$T/.s.PGSQL.$PGB_PORT" ] && break; sleep 0.1; done
[ -S "$T/.s.PGSQL.$PGB_PORT" ] || { cat "$T/pgbouncer.log"; echo "FAIL: pgbouncer did not start"; exit 1; }
PGB_HOST=$T PGB_PORT=$PGB_PORT "${PYTHON:-/usr/bin/python3}" "$(dirname "$0")/lease_pgbouncer.py"
