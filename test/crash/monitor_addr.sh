#!/usr/bin/env bash
# Lock holders' client addresses (issue 13, section 2): coord.locks and
# coord.request_lock_status() show a holder's client_addr to coord_admin, to
# a superuser and to the holder's own role, and NULL to a coord_monitor (its
# pid and start stay visible).  Needs a TCP client, so it runs a cluster of
# its own that listens on 127.0.0.1 only.  Exit 0 = pass; the last line says
# what was checked.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
export COORD_PGPORT=${COORD_ADDR_PORT:-$(coord_free_tcp_port 54352)}
coord_cluster_start
coord_cluster_listen_tcp || exit 1

checks=0
holder_pid=
cleanup() { [ -n "$holder_pid" ] && kill "$holder_pid" 2>/dev/null; wait 2>/dev/null; coord_cluster_stop; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
q() { psql -qXAt -v ON_ERROR_STOP=1 -d coord_addr -c "$1"; }
expect() {  # expect SQL WANT WHAT
  local got
  got=$(q "$1") || fail "$3: query failed: $1"
  [ "$got" = "$2" ] || fail "$3: got '$got', want '$2'"
  checks=$((checks + 1))
}

coord_createdb coord_addr
psql -qX -d coord_addr -v ON_ERROR_STOP=1 >/dev/null <<'SQL' || fail "setup"
SET client_min_messages = warning;
CREATE ROLE addr_holder LOGIN IN ROLE coord_worker, coord_monitor;
CREATE ROLE addr_mon IN ROLE coord_monitor;
CREATE ROLE addr_adm IN ROLE coord_admin;
SQL

# the holder: over TCP, a session lock and a request held while it sleeps
psql -qX -h 127.0.0.1 -p "$PGPORT" -U addr_holder -d coord_addr \
  -c "SELECT coord.lock('/addr/held'), coord.request('addr-key')" -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
holder_pid=$!
for _ in $(seq 100); do
  [ "$(q "SELECT count(*) FROM coord.locks WHERE path = '/addr/held'")" = 1 ] && break
  sleep 0.1
done
expect "SELECT client_addr FROM coord.locks WHERE path = '/addr/held'" "127.0.0.1" "a superuser sees the holder's address"

as() {  # as ROLE SQL: the value SQL returns when run as ROLE
  psql -qXAt -v ON_ERROR_STOP=1 -d coord_addr -c "SET ROLE $1" -c "$2"
}
got=$(as addr_mon "SELECT pid IS NOT NULL, backend_start IS NOT NULL, client_addr IS NULL FROM coord.locks WHERE path = '/addr/held'")
[ "$got" = "t|t|t" ] || fail "coord_monitor: want the pid and start but no address, got '$got'"
checks=$((checks + 1))
got=$(as addr_mon "SELECT count(*), count(client_addr) FROM coord.request_lock_status()")
[ "$got" = "1|0" ] || fail "coord_monitor: request holders without addresses, got '$got'"
checks=$((checks + 1))
got=$(as addr_adm "SELECT client_addr FROM coord.locks WHERE path = '/addr/held'")
[ "$got" = "127.0.0.1" ] || fail "coord_admin: want the address, got '$got'"
checks=$((checks + 1))
got=$(as addr_adm "SELECT client_addr FROM coord.request_lock_status()")
[ "$got" = "127.0.0.1" ] || fail "coord_admin: want the request holder's address, got '$got'"
checks=$((checks + 1))
got=$(as addr_holder "SELECT client_addr FROM coord.locks WHERE path = '/addr/held'")
[ "$got" = "127.0.0.1" ] || fail "the holder's own role: want the address, got '$got'"
checks=$((checks + 1))

kill "$holder_pid" 2>/dev/null; wait "$holder_pid" 2>/dev/null; holder_pid=
psql -qX -d postgres -c "DROP DATABASE coord_addr WITH (FORCE)" >/dev/null
echo "monitor_addr: $checks checks passed; a lock or request holder's client_addr is NULL to coord_monitor, shown to coord_admin, a superuser and the holder's role"
