#!/usr/bin/env bash
# Pre-existing roles named coord_worker / coord_monitor / coord_admin (issue
# 13, section 7).  CREATE EXTENSION adopts such a role only if it is a plain
# NOLOGIN group role that is a member of no other role; otherwise it refuses,
# and nothing is installed.  Its own cluster (the roles are cluster-wide),
# port 54351.  Exit 0 = pass; the last line says what was checked.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
COORD_PGPORT=54351 coord_cluster_start

q() { psql -qXAt -v ON_ERROR_STOP=1 -d postgres "$@"; }
# refused SETUP WHAT: after SETUP, CREATE EXTENSION must fail saying WHAT, and leave nothing
refused() {
  q -c "$1" >/dev/null || fail "setup: $1"
  out=$(psql -qXAt -v ON_ERROR_STOP=1 -d postgres -c "CREATE EXTENSION pg_coord" 2>&1) &&
    fail "CREATE EXTENSION adopted a hostile role after: $1"
  grep -q "$2" <<<"$out" || fail "after '$1' the error was: $out"
  [ "$(q -c "SELECT count(*) FROM pg_extension WHERE extname = 'pg_coord'")" = 0 ] ||
    fail "the extension is installed after a refusal"
  checked=$((checked + 1))
}
checked=0

refused "CREATE ROLE coord_worker LOGIN" 'role "coord_worker" already exists with attributes'
q -c "ALTER ROLE coord_worker NOLOGIN CREATEDB" >/dev/null
refused "SELECT 1" 'It has CREATEDB'
q -c "DROP ROLE coord_worker" >/dev/null
refused "CREATE ROLE coord_monitor NOLOGIN SUPERUSER" 'role "coord_monitor" already exists with attributes'
q -c "ALTER ROLE coord_monitor NOSUPERUSER BYPASSRLS" >/dev/null
refused "SELECT 1" 'It has BYPASSRLS'
q -c "DROP ROLE coord_monitor" >/dev/null
refused "CREATE ROLE coord_admin NOLOGIN CREATEROLE" 'role "coord_admin" already exists with attributes'
q -c "ALTER ROLE coord_admin NOCREATEROLE" -c "GRANT pg_read_server_files TO coord_admin" >/dev/null
refused "SELECT 1" 'role "coord_admin" already exists as a member of other roles'
q -c "REVOKE pg_read_server_files FROM coord_admin" -c "CREATE ROLE coord_worker NOLOGIN REPLICATION" >/dev/null
refused "SELECT 1" 'It has REPLICATION'
q -c "DROP ROLE coord_worker" -c "CREATE ROLE boss SUPERUSER NOLOGIN" -c "CREATE ROLE coord_worker NOLOGIN IN ROLE boss" >/dev/null
refused "SELECT 1" 'role "coord_worker" already exists as a member of other roles'

# plain group roles are adopted, with the members an administrator gave them
q -c "REVOKE boss FROM coord_worker" -c "CREATE ROLE alice LOGIN IN ROLE coord_worker" >/dev/null
q -c "CREATE EXTENSION pg_coord" >/dev/null || fail "CREATE EXTENSION with plain pre-existing roles"
[ "$(q -c "SELECT pg_has_role('alice', 'coord_worker', 'MEMBER')")" = t ] || fail "alice lost coord_worker"
[ "$(q -c "SELECT pg_has_role('coord_admin', 'coord_worker', 'MEMBER') AND pg_has_role('coord_admin', 'coord_monitor', 'MEMBER')")" = t ] ||
  fail "coord_admin is not a member of coord_worker and coord_monitor"
# a second database adopts the roles the first one created (coord_admin's memberships are its own)
q -c "CREATE DATABASE second" >/dev/null
psql -qXAt -v ON_ERROR_STOP=1 -d second -c "CREATE EXTENSION pg_coord" >/dev/null ||
  fail "CREATE EXTENSION in a second database"
# the upgrade path runs the same checks and passes on roles it made itself
psql -qXAt -v ON_ERROR_STOP=1 -d second -c "DROP EXTENSION pg_coord" -c "CREATE EXTENSION pg_coord VERSION '0.1.0'" \
  -c "ALTER EXTENSION pg_coord UPDATE" >/dev/null || fail "install at 0.1.0 and update with the roles present"
echo "role_adoption: $checked hostile pre-existing roles refused (LOGIN, CREATEDB, SUPERUSER, BYPASSRLS, CREATEROLE, REPLICATION, memberships); plain ones adopted with their members, in a second database and by the update"
