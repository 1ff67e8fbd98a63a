#!/usr/bin/env bash
# Install-script safety, on the cluster of test/run.sh (PG* environment):
# hostile objects (an = and || on text, now(), nextval(), count(*)) that
# record when they run are planted in a schema that the database puts on
# the search_path before pg_catalog; then pg_coord is installed at 0.2.0,
# and installed at 0.1.0 and updated, and every kind of function is called.
# Nothing of theirs may run.  The install script must also use plain CREATE
# (no OR REPLACE), so that it cannot take over an existing object.
# Exit 0 = pass; the last line says what was checked.
set -uo pipefail
fail() { echo "FAIL: $*"; exit 1; }
db=coord_hostile
psql -qX -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
trap 'psql -qX -d postgres -c "DROP DATABASE IF EXISTS coord_hostile" >/dev/null 2>&1' EXIT

script=$(pg_config --sharedir)/extension/pg_coord--0.2.0.sql
[ -f "$script" ] || fail "no install script at $script"
n=$(grep -ciE 'create[[:space:]]+or[[:space:]]+replace' "$script")
[ "$n" -eq 0 ] || fail "the install script uses OR REPLACE $n times"

psql -qX -v ON_ERROR_STOP=1 -d $db >/dev/null <<'SQL' || fail "planting the hostile objects"
CREATE SCHEMA hostile;
CREATE TABLE hostile.ran (what text, query text);
GRANT ALL ON SCHEMA hostile TO PUBLIC;
GRANT ALL ON hostile.ran TO PUBLIC;
CREATE FUNCTION hostile.texteq(a text, b text) RETURNS boolean LANGUAGE plpgsql AS
  $$BEGIN INSERT INTO hostile.ran VALUES ('=', current_query()); RETURN a OPERATOR(pg_catalog.=) b; END$$;
CREATE OPERATOR hostile.= (LEFTARG = text, RIGHTARG = text, FUNCTION = hostile.texteq);
CREATE FUNCTION hostile.textcat(a text, b text) RETURNS text LANGUAGE plpgsql AS
  $$BEGIN INSERT INTO hostile.ran VALUES ('||', current_query()); RETURN pg_catalog.textcat(a, b); END$$;
CREATE OPERATOR hostile.|| (LEFTARG = text, RIGHTARG = text, FUNCTION = hostile.textcat);
CREATE FUNCTION hostile.now() RETURNS timestamptz LANGUAGE plpgsql AS
  $$BEGIN INSERT INTO hostile.ran VALUES ('now', current_query()); RETURN pg_catalog.now(); END$$;
CREATE FUNCTION hostile.nextval(regclass) RETURNS bigint LANGUAGE plpgsql AS
  $$BEGIN INSERT INTO hostile.ran VALUES ('nextval', current_query()); RETURN pg_catalog.nextval($1); END$$;
CREATE FUNCTION hostile.count_step(bigint) RETURNS bigint LANGUAGE plpgsql AS
  $$BEGIN INSERT INTO hostile.ran VALUES ('count', current_query()); RETURN $1 + 1; END$$;
CREATE AGGREGATE hostile.count(*) (SFUNC = hostile.count_step, STYPE = bigint, INITCOND = '0');
SQL
psql -qX -d postgres -c "ALTER DATABASE $db SET search_path = hostile, pg_catalog, public" >/dev/null
[ "$(psql -qXAt -d $db -c "SELECT 'a'::text = 'a'::text; SELECT count(*) FROM hostile.ran" | tail -1)" -ge 1 ] ||
  fail "the planted = does not run for plain SQL: the test would prove nothing"
psql -qX -d $db -c "TRUNCATE hostile.ran" >/dev/null

run() {  # the extension's functions, as a worker and an admin would call them (qualified: these
         # statements are the caller's, and a caller with that search_path gets the hostile count)
  psql -qX -v ON_ERROR_STOP=1 -d $db >/dev/null <<'SQL'
SELECT coord.enqueue('h', '{}', key => 'k'), coord.enqueue('h', '{}', key => 'k');
SELECT * FROM coord.enqueue_many('h', ARRAY['{"a": 1}', '{"a": 2}']::jsonb[]);
SELECT coord.complete(id, token) FROM coord.claim('h', 2);
SELECT coord.fail(id, token, 'boom') FROM coord.claim('h', 1, session_bound => true);
SELECT coord.lock('/h/x'), coord.fence('/h/x'), coord.fence_ok('/h/x', 1), coord.unlock('/h/x');
SELECT coord.request('h-key'), coord.mark_queued('h-key'), coord.request_state('h-key');
SELECT coord.schedule('h-s', 'h', every => '1 hour'), coord.schedule('h-s', 'h', every => '2 hours');
SELECT coord.schedule('h-c', 'h', cron => '*/5 * * * *');
SELECT coord.define_app('h-up', starts => 'hourly', catchup_from => '2026-01-01'),
       coord.define_app('h-down', depends => '{"h-up": "hourly"}');
SELECT coord.tick('2026-01-01 03:00Z');
SELECT coord.complete(id, token, '{"r": 1}') FROM coord.claim('apps', 5);
SELECT pg_catalog.count(*) FROM coord.jobs; SELECT pg_catalog.count(*) FROM coord.queue_stats; SELECT pg_catalog.count(*) FROM coord.locks;
SELECT pg_catalog.count(*) FROM coord.requests; SELECT pg_catalog.count(*) FROM coord.schedules; SELECT pg_catalog.count(*) FROM coord.runs;
SELECT pg_catalog.count(*) FROM coord.grid('2026-01-01', '2026-01-02');
SELECT coord.unschedule('h-s'), coord.drop_app('h-down'), coord.drop_app('h-up');
SQL
}
ran() { psql -qXAt -d $db -c "SELECT coalesce(string_agg(DISTINCT what, ','), '') FROM hostile.ran"; }

psql -qX -v ON_ERROR_STOP=1 -d $db -c "CREATE EXTENSION pg_coord" >/dev/null || fail "CREATE EXTENSION"
[ -z "$(ran)" ] || fail "CREATE EXTENSION ran hostile objects: $(ran)"
run || fail "calling the functions at 0.2.0"
[ -z "$(ran)" ] || fail "the functions ran hostile objects: $(ran)"
psql -qX -v ON_ERROR_STOP=1 -d $db -c "DROP EXTENSION pg_coord" -c "CREATE EXTENSION pg_coord VERSION '0.1.0'" \
  -c "ALTER EXTENSION pg_coord UPDATE" >/dev/null || fail "install at 0.1.0 and update"
[ -z "$(ran)" ] || fail "the update ran hostile objects: $(ran)"
run || fail "calling the functions after the update"
[ -z "$(ran)" ] || fail "the functions ran hostile objects after the update: $(ran)"
echo "install_safety: hostile =, ||, now(), nextval() and count(*) before pg_catalog: nothing of theirs ran in CREATE EXTENSION, in the 0.1.0 -> 0.2.0 update, or in $(grep -c '^SELECT' <<<"$(declare -f run)") statements calling every kind of function; no OR REPLACE in the install script"
