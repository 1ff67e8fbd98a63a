#!/usr/bin/env bash
# Owner-run SQL trusts nothing of the caller's (SECURITY.md, issue 13 part 1),
# on the cluster of test/run.sh (PG* environment).
#
# Three login roles, members of coord_worker, coord_admin and coord_monitor
# only, each plant in their own session what an attacker would:
#   - temporary domains named after every catalog type the statement texts
#     use (jsonb, text, int8, timestamptz, regclass, ...), whose CHECK calls
#     the caller's trap function;
#   - a schema of their own first in search_path, with pg_temp before
#     pg_catalog, holding look-alike operators (= < > <= >= <> + - || ?) and
#     functions (now, statement_timestamp, clock_timestamp, nextval, count,
#     unnest, to_char, timezone, hashtextextended, jsonb_typeof, max) that
#     call the trap;
# then call every function they may call and read every view they may read.
# The trap records current_user and tries ALTER ROLE ... SUPERUSER.  It must
# run only as the caller itself (the test first checks that it does run for
# the caller's own SQL, so that the planted objects are live), and no role
# may end up with a privilege it did not have.
# Exit 0 = pass; the last line says what was checked.
set -uo pipefail
fail() { echo "FAIL: $*"; exit 1; }
db=coord_owner_path
roles=(coord_hack_worker coord_hack_admin coord_hack_monitor)
cleanup() {
  psql -qX -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1
  for r in "${roles[@]}"; do psql -qX -d postgres -c "DROP ROLE IF EXISTS $r" >/dev/null 2>&1; done
}
cleanup
trap cleanup EXIT
psql -qX -v ON_ERROR_STOP=1 -d postgres >/dev/null <<SQL || fail "setting up"
CREATE DATABASE $db;
CREATE ROLE coord_hack_worker LOGIN;
CREATE ROLE coord_hack_admin LOGIN;
CREATE ROLE coord_hack_monitor LOGIN;
SQL
psql -qX -v ON_ERROR_STOP=1 -d $db >/dev/null <<'SQL' || fail "installing"
CREATE EXTENSION pg_coord;
GRANT coord_worker TO coord_hack_worker;
GRANT coord_admin TO coord_hack_admin;
GRANT coord_monitor TO coord_hack_monitor;
CREATE SCHEMA hack_w AUTHORIZATION coord_hack_worker;
CREATE SCHEMA hack_a AUTHORIZATION coord_hack_admin;
CREATE SCHEMA hack_m AUTHORIZATION coord_hack_monitor;
-- state for every kind of code path: app runs to complete, a schedule, a dead job
SELECT coord.define_app('up', starts => 'hourly', catchup_from => '2026-01-01');
SELECT coord.define_app('down', depends => '{"up": "hourly"}', conf => '{"c": 1}');
SELECT coord.schedule('sch', 'sq', every => '1 hour');
SELECT coord.enqueue('deadq', '{}', max_attempts => 1);
SELECT coord.fail(id, token, 'boom') FROM coord.claim('deadq');
SQL

# plant ROLE SCHEMA: the attacker's objects, in the attacker's session (stdin prefix)
plant() {
  local role=$1 s=$2
  cat <<SQL
CREATE TABLE IF NOT EXISTS $s.ran (who name, what text, query text);
GRANT ALL ON $s.ran TO PUBLIC;
CREATE OR REPLACE FUNCTION $s.trap(what text) RETURNS boolean LANGUAGE plpgsql AS \$f\$
BEGIN
  INSERT INTO $s.ran VALUES (current_user, what, pg_catalog.left(pg_catalog.current_query(), 200));
  BEGIN
    EXECUTE 'ALTER ROLE $role SUPERUSER';
  EXCEPTION WHEN OTHERS THEN NULL;
  END;
  RETURN true;
END
\$f\$;
DO \$d\$
DECLARE
  t text;
  o record;
BEGIN
  FOREACH t IN ARRAY ARRAY['jsonb', 'text', 'int8', 'int4', 'int2', 'bool', 'timestamptz', 'timestamp',
                           'interval', 'regclass', 'name', 'oid', 'float8', 'numeric', 'inet', 'bytea'] LOOP
    EXECUTE pg_catalog.format('CREATE DOMAIN pg_temp.%I AS pg_catalog.%I CHECK ($s.trap(%L))', t, t, 'domain ' || t);
  END LOOP;
  FOR o IN SELECT * FROM (VALUES ('=', 'text', 'texteq', 'bool'), ('=', 'int8', 'int8eq', 'bool'),
                                 ('=', 'int4', 'int4eq', 'bool'), ('<', 'int8', 'int8lt', 'bool'),
                                 ('>', 'int8', 'int8gt', 'bool'), ('<=', 'int8', 'int8le', 'bool'),
                                 ('>=', 'int8', 'int8ge', 'bool'), ('<>', 'text', 'textne', 'bool'),
                                 ('<>', 'int8', 'int8ne', 'bool'), ('+', 'int8', 'int8pl', 'int8'),
                                 ('-', 'int8', 'int8mi', 'int8'), ('||', 'text', 'textcat', 'text'),
                                 ('=', 'timestamptz', 'timestamptz_eq', 'bool'),
                                 ('<', 'timestamptz', 'timestamptz_lt', 'bool'),
                                 ('>', 'timestamptz', 'timestamptz_gt', 'bool'),
                                 ('<=', 'timestamptz', 'timestamptz_le', 'bool'),
                                 ('>=', 'timestamptz', 'timestamptz_ge', 'bool')) AS v(op, typ, fn, ret) LOOP
    EXECUTE pg_catalog.format(
      'CREATE FUNCTION $s.%I(a pg_catalog.%I, b pg_catalog.%I) RETURNS pg_catalog.%I LANGUAGE plpgsql AS '
      '\$x\$BEGIN PERFORM $s.trap(%L); RETURN pg_catalog.%I(a, b); END\$x\$',
      'h_' || o.fn, o.typ, o.typ, o.ret, 'operator ' || o.op || ' ' || o.typ, o.fn);
    EXECUTE pg_catalog.format('CREATE OPERATOR $s.%s (LEFTARG = pg_catalog.%I, RIGHTARG = pg_catalog.%I, FUNCTION = $s.%I)',
                              o.op, o.typ, o.typ, 'h_' || o.fn);
  END LOOP;
END
\$d\$;
CREATE FUNCTION $s.h_ts_pl(a pg_catalog.timestamptz, b pg_catalog.interval) RETURNS pg_catalog.timestamptz
  LANGUAGE plpgsql AS \$x\$BEGIN PERFORM $s.trap('operator + timestamptz'); RETURN a OPERATOR(pg_catalog.+) b; END\$x\$;
CREATE OPERATOR $s.+ (LEFTARG = pg_catalog.timestamptz, RIGHTARG = pg_catalog.interval, FUNCTION = $s.h_ts_pl);
CREATE FUNCTION $s.h_ts_mi(a pg_catalog.timestamptz, b pg_catalog.interval) RETURNS pg_catalog.timestamptz
  LANGUAGE plpgsql AS \$x\$BEGIN PERFORM $s.trap('operator - timestamptz'); RETURN a OPERATOR(pg_catalog.-) b; END\$x\$;
CREATE OPERATOR $s.- (LEFTARG = pg_catalog.timestamptz, RIGHTARG = pg_catalog.interval, FUNCTION = $s.h_ts_mi);
CREATE FUNCTION $s.h_exists(a pg_catalog.jsonb, b pg_catalog.text) RETURNS pg_catalog.bool
  LANGUAGE plpgsql AS \$x\$BEGIN PERFORM $s.trap('operator ?'); RETURN pg_catalog.jsonb_exists(a, b); END\$x\$;
CREATE OPERATOR $s.? (LEFTARG = pg_catalog.jsonb, RIGHTARG = pg_catalog.text, FUNCTION = $s.h_exists);
CREATE FUNCTION $s.now() RETURNS pg_catalog.timestamptz LANGUAGE plpgsql AS
  \$x\$BEGIN PERFORM $s.trap('now'); RETURN pg_catalog.now(); END\$x\$;
CREATE FUNCTION $s.statement_timestamp() RETURNS pg_catalog.timestamptz LANGUAGE plpgsql AS
  \$x\$BEGIN PERFORM $s.trap('statement_timestamp'); RETURN pg_catalog.statement_timestamp(); END\$x\$;
CREATE FUNCTION $s.clock_timestamp() RETURNS pg_catalog.timestamptz LANGUAGE plpgsql AS
  \$x\$BEGIN PERFORM $s.trap('clock_timestamp'); RETURN pg_catalog.clock_timestamp(); END\$x\$;
CREATE FUNCTION $s.nextval(pg_catalog.regclass) RETURNS pg_catalog.int8 LANGUAGE plpgsql AS
  \$x\$BEGIN PERFORM $s.trap('nextval'); RETURN pg_catalog.nextval(\$1); END\$x\$;
CREATE FUNCTION $s.unnest(anyarray) RETURNS SETOF anyelement LANGUAGE plpgsql AS
  \$x\$BEGIN PERFORM $s.trap('unnest'); RETURN QUERY SELECT pg_catalog.unnest(\$1); END\$x\$;
CREATE FUNCTION $s.to_char(pg_catalog.timestamp, pg_catalog.text) RETURNS pg_catalog.text LANGUAGE plpgsql AS
  \$x\$BEGIN PERFORM $s.trap('to_char'); RETURN pg_catalog.to_char(\$1, \$2); END\$x\$;
CREATE FUNCTION $s.timezone(pg_catalog.text, pg_catalog.timestamptz) RETURNS pg_catalog.timestamp LANGUAGE plpgsql AS
  \$x\$BEGIN PERFORM $s.trap('timezone'); RETURN pg_catalog.timezone(\$1, \$2); END\$x\$;
CREATE FUNCTION $s.hashtextextended(pg_catalog.text, pg_catalog.int8) RETURNS pg_catalog.int8 LANGUAGE plpgsql AS
  \$x\$BEGIN PERFORM $s.trap('hashtextextended'); RETURN pg_catalog.hashtextextended(\$1, \$2); END\$x\$;
CREATE FUNCTION $s.jsonb_typeof(pg_catalog.jsonb) RETURNS pg_catalog.text LANGUAGE plpgsql AS
  \$x\$BEGIN PERFORM $s.trap('jsonb_typeof'); RETURN pg_catalog.jsonb_typeof(\$1); END\$x\$;
CREATE FUNCTION $s.count_step(pg_catalog.int8) RETURNS pg_catalog.int8 LANGUAGE plpgsql AS
  \$x\$BEGIN PERFORM $s.trap('count'); RETURN \$1 OPERATOR(pg_catalog.+) 1; END\$x\$;
CREATE AGGREGATE $s.count(*) (SFUNC = $s.count_step, STYPE = pg_catalog.int8, INITCOND = '0');
CREATE FUNCTION $s.max_step(pg_catalog.timestamptz, pg_catalog.timestamptz) RETURNS pg_catalog.timestamptz
  LANGUAGE plpgsql AS \$x\$BEGIN PERFORM $s.trap('max'); RETURN pg_catalog.timestamptz_larger(\$1, \$2); END\$x\$;
CREATE AGGREGATE $s.max(pg_catalog.timestamptz) (SFUNC = $s.max_step, STYPE = pg_catalog.timestamptz);
CREATE COLLATION $s."C" FROM pg_catalog."POSIX";
SET search_path = $s, pg_temp, pg_catalog, public;
SQL
}

# the calls each role may make; errors other than the role's own are failures
calls_worker='
SELECT coord.enqueue($$w$$, $${}$$, key => $$k$$, run_at => pg_catalog.now()), coord.enqueue($$w$$, $${}$$, key => $$k$$);
SELECT * FROM coord.enqueue_many($$w$$, ARRAY[$${"a": 1}$$, $${"a": 2}$$]::pg_catalog.jsonb[]);
SELECT coord.heartbeat(id, token, $$1 minute$$), coord.complete(id, token, $${"r": 1}$$) FROM coord.claim($$w$$, 1);
SELECT coord.complete_many(ARRAY[id], ARRAY[token]) FROM coord.claim($$w$$, 1);
SELECT coord.fail(id, token, $$boom$$, $$1 second$$) FROM coord.claim($$w$$, 1, session_bound => true);
SELECT coord.claim($$w$$, 1, partition => 0, partitions => 2);
SELECT coord.job_state(1), coord.job_claimed(1), coord.job_part($$k$$, 1);
SELECT coord.lock($$/h/x$$), coord.try_lock($$/h/y$$, shared => true), coord.fence($$/h/x$$), coord.fence_ok($$/h/x$$, 1),
       coord.unlock($$/h/x$$), coord.unlock_all();
BEGIN; SELECT coord.xact_lock($$/h/z$$), coord.try_xact_lock($$/h/z2$$), coord.lock_first(ARRAY[$$/h/a$$, $$/h/b$$]); COMMIT;
SELECT coord.path_key($$/h/x$$), coord.key_hash($$k$$);
SELECT coord.request($$@R@-h-key$$), coord.mark_queued($$@R@-h-key$$), coord.request_state($$@R@-h-key$$), coord.mark_done($$@R@-h-key$$);
SELECT coord.request($$@R@-h-key2$$), coord.release($$@R@-h-key2$$);
SELECT coord.request($$@R@-h-key3$$), coord.mark_queued($$@R@-h-key3$$, $$w$$, $${}$$);
SELECT coord.cron_next($$*/5 * * * *$$, pg_catalog.now());
'
calls_admin="$calls_worker"'
SELECT coord.schedule($$h-s$$, $$h$$, every => $$1 hour$$), coord.schedule($$h-s$$, $$h$$, every => $$2 hours$$);
SELECT coord.schedule($$h-c$$, $$h$$, cron => $$*/5 * * * *$$, payload => $${"p": 1}$$);
SELECT coord.define_app($$h-up$$, starts => $$hourly$$, catchup_from => $$2026-01-01$$),
       coord.define_app($$h-down$$, depends => $${"h-up": "hourly"}$$);
SELECT coord.tick($$2026-01-01 03:00Z$$);
SELECT coord.complete(id, token, $${"r": 1}$$) FROM coord.claim($$apps$$, 5);
SELECT coord.tick($$2026-01-01 04:00Z$$);
SELECT coord.define_app($$h-sig$$, depends => $${"@h-feed": "hourly", "h-up": "hourly"}$$, catchup_from => $$2026-01-01$$);
SELECT coord.signal($$h-feed$$, $$2026-01-01 00:00Z$$, $${"f": 1}$$), coord.signal($$h-feed$$, $$2026-01-01 00:00Z$$);
SELECT coord.fail(id, token, $$bad$$) FROM coord.claim($$apps$$, 5);
SELECT coord.tick();
SELECT coord.cancel(id) FROM coord.jobs WHERE queue OPERATOR(pg_catalog.=) $$w$$;
SELECT coord.retry(id) FROM coord.jobs WHERE queue OPERATOR(pg_catalog.=) $$deadq$$;
SELECT coord.purge_jobs($$0 seconds$$), coord.purge_requests($$0 seconds$$), coord.purge_lock_names();
SELECT coord.unschedule($$h-s$$), coord.drop_app($$h-sig$$), coord.drop_app($$h-down$$), coord.drop_app($$h-up$$);
'
calls_monitor='
SELECT pg_catalog.count(*) FROM coord.jobs; SELECT pg_catalog.count(*) FROM coord.queue_stats;
SELECT pg_catalog.count(*) FROM coord.locks; SELECT pg_catalog.count(*) FROM coord.requests;
SELECT pg_catalog.count(*) FROM coord.schedules; SELECT pg_catalog.count(*) FROM coord.runs;
SELECT pg_catalog.count(*) FROM coord.grid($$2026-01-01$$, $$2026-01-02$$);
SELECT pg_catalog.count(*) FROM coord.signals;
SELECT coord.job_state(1), coord.request_state($$@R@-h-key$$), coord.cron_next($$0 * * * *$$, pg_catalog.now());
'
calls_admin="$calls_admin$calls_monitor"

checked=0
attack() {  # ROLE SCHEMA CALLS
  local role=$1 s=$2 calls=$3 out
  # the trap is live: the caller's own cast to the domain "jsonb" runs it, as the caller
  out=$({ plant "$role" "$s"; echo "SELECT '{}'::jsonb; SELECT now(); SELECT 1::int8 = 1::int8;"
          echo "${calls//@R@/$role}"; } | psql -X -U "$role" -d $db 2>&1)
  local errs
  errs=$(grep -E '^ERROR' <<<"$out" | grep -v 'permission denied for function' | sort | uniq -c)
  [ -z "$errs" ] || fail "$role: unexpected errors: $errs"
  local own
  own=$(psql -qXAt -d $db -c "SELECT pg_catalog.count(DISTINCT what) FROM $s.ran WHERE who OPERATOR(pg_catalog.=) '$role'")
  [ "$own" -ge 3 ] || fail "$role: the planted domain and functions did not run for the caller's own SQL ($own kinds): the test would prove nothing"
  local other
  other=$(psql -qXAt -d $db -c "SELECT pg_catalog.string_agg(DISTINCT who || ': ' || what || ' in ' || query, E'\n') FROM $s.ran WHERE who OPERATOR(pg_catalog.<>) '$role'")
  [ -z "$other" ] || fail "$role: the caller's objects ran as another role:
$other"
  local su
  su=$(psql -qXAt -d $db -c "SELECT rolsuper OR rolcreaterole OR rolcreatedb OR rolbypassrls OR rolreplication FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) '$role'")
  [ "$su" = f ] || fail "$role gained a privilege"
  checked=$((checked + $(grep -c 'coord\.' <<<"$calls")))
}
attack coord_hack_worker hack_w "$calls_worker"
attack coord_hack_admin hack_a "$calls_admin"
attack coord_hack_monitor hack_m "$calls_monitor"
# the admin's calls really reached app runs and the tick (the original escalation's path)
n=$(psql -qXAt -d $db -c "SELECT pg_catalog.count(*) FROM coord.runs WHERE state = 'done'")
[ "$n" -ge 1 ] || fail "no app run of the admin's was completed: the attack did not reach the finish hooks"
echo "owner_search_path: temporary domains over 16 catalog types, 24 look-alike operators, 12 functions, 2 aggregates and a collation first in search_path; $checked statements as coord_worker, coord_admin and coord_monitor members: nothing of the caller's ran as another role, no role gained a privilege"
