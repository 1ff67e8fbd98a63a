#!/usr/bin/env bash
# A library never serves a catalog it cannot (docs/install.md), on the cluster of
# test/run.sh (PG* environment).  Both directions of a mismatch between the
# installed library and a database's pg_coord catalog:
#   - older catalog (what `make install` of a new release leaves behind until
#     ALTER EXTENSION UPDATE): the first call of any function that reads or
#     writes pg_coord's tables is a clear error (55000) naming both versions,
#     with the hint ALTER EXTENSION pg_coord UPDATE; after the update it works;
#   - newer catalog (an older library installed over a newer release): the
#     same error, whose hint is to install the newer library.
# A session that failed before the update works after it.  Exit 0 = pass; the last line says what was checked.
set -uo pipefail
checks=0
fail() { echo "FAIL: $*"; exit 1; }
db=coord_versions
psql -qX -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
trap 'psql -qX -d postgres -c "DROP DATABASE IF EXISTS coord_versions" >/dev/null 2>&1' EXIT

library=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$(pg_config --sharedir)/extension/pg_coord.control")
old=$(ls "$(pg_config --sharedir)/extension/" | sed -n "s/^pg_coord--\([0-9.]*\)--${library//./\\.}\.sql$/\1/p" | sort -V | tail -1)
[ -n "$old" ] || fail "no update script to $library is installed"

# expect_error SQL SUBSTRING...: the call fails with 55000 and each substring in its message
expect_error() {
  local sql=$1 out; shift
  out=$(psql -qXAt -d $db -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -c "\\set VERBOSITY verbose" -c "$sql" 2>&1) &&
    fail "'$sql' succeeded on a mismatched catalog: $out"
  grep -q "55000" <<<"$out" || fail "'$sql': not SQLSTATE 55000: $out"
  local want
  for want in "$@"; do
    grep -qF -- "$want" <<<"$out" || fail "'$sql': the error does not say '$want': $out"
  done
  checks=$((checks + 1))
}

psql -qX -v ON_ERROR_STOP=1 -d $db -c "CREATE EXTENSION pg_coord VERSION '$old'" >/dev/null || fail "CREATE EXTENSION at $old"
for call in "SELECT coord.enqueue('v')" "SELECT * FROM coord.claim('v')" "SELECT coord.fence_ok('/v', 1)" "SELECT coord.lock('/v')" \
            "SELECT coord.request('v')" "SELECT coord.complete(1, 1)" "SELECT coord.heartbeat(1, 1)"; do
  expect_error "$call" "at version $old" "library is version $library" "ALTER EXTENSION pg_coord UPDATE"
done
# a session that failed, then sees the update made by another session
psql -qX -d $db >/tmp/coord_versions.$$ 2>&1 <<SQL
SELECT coord.enqueue('v');
\! psql -qX -d $db -c "ALTER EXTENSION pg_coord UPDATE"
SELECT 'after:' || coord.enqueue('v');
SQL
grep -q "after:1" /tmp/coord_versions.$$ || fail "the session did not work after the update: $(cat /tmp/coord_versions.$$)"
rm -f /tmp/coord_versions.$$
checks=$((checks + 1))
[ "$(psql -qXAt -d $db -c "SELECT count(*) FROM coord.claim('v', 5)")" = 1 ] || fail "a new session after the update"
checks=$((checks + 1))

# newer catalog than the library (an older library installed over a newer
# release; new sessions load it): pretend the catalog was updated past it
psql -qX -v ON_ERROR_STOP=1 -d $db -c "UPDATE pg_catalog.pg_extension SET extversion = '99.0.0' WHERE extname = 'pg_coord'" >/dev/null ||
  fail "setting the catalog version"
for call in "SELECT coord.tick()" "SELECT coord.enqueue('v')" "SELECT * FROM coord.claim('v')"; do
  expect_error "$call" "at version 99.0.0" "library is version $library" "this catalog is newer" "Install the library of pg_coord 99.0.0"
done
echo "version_mismatch: $checks checks passed; a $old catalog under the $library library and a 99.0.0 one are refused with 55000 on the first call, naming both versions and the way out; the update makes a failed session and a new one work"
