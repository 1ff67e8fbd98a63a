-- pgTAP: least privilege.  PUBLIC gets nothing; coord_worker, coord_monitor
-- and coord_admin can each do their part and nothing more; no function is
-- SECURITY DEFINER; a hostile search_path at call time runs nothing of its own.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = warning;
BEGIN;
SELECT plan(41);

-- the roles and what PUBLIC has
SELECT has_role('coord_worker');
SELECT has_role('coord_monitor');
SELECT has_role('coord_admin');
SELECT is((SELECT count(*)::int FROM pg_proc p, aclexplode(p.proacl) a
            WHERE p.pronamespace = 'coord'::regnamespace AND a.grantee = 0), 0,
          'PUBLIC may execute no coord function');
SELECT is((SELECT count(*)::int FROM pg_proc p
            WHERE p.pronamespace = 'coord'::regnamespace AND p.proacl IS NULL), 0,
          'no coord function keeps the default (PUBLIC) privileges');
SELECT is((SELECT count(*)::int FROM pg_class c, aclexplode(c.relacl) a
            WHERE c.relnamespace = 'coord'::regnamespace AND a.grantee = 0), 0,
          'PUBLIC may read no coord table or view');
SELECT is((SELECT count(*)::int FROM pg_class c, aclexplode(c.relacl) a
            WHERE c.relnamespace = 'coord'::regnamespace AND c.relkind IN ('r', 'S')
              AND a.grantee <> c.relowner), 0,
          'tables and sequences are granted to nobody: functions reach them as the owner');
SELECT is((SELECT count(*)::int FROM pg_proc WHERE pronamespace = 'coord'::regnamespace AND prosecdef), 0,
          'no coord function is SECURITY DEFINER');
SELECT ok(has_schema_privilege('public', 'coord', 'USAGE'), 'PUBLIC keeps USAGE on schema coord');

CREATE ROLE tap_worker IN ROLE coord_worker;
CREATE ROLE tap_monitor IN ROLE coord_monitor;
CREATE ROLE tap_admin IN ROLE coord_admin;
CREATE ROLE tap_nobody;
-- a job the owner enqueued: a worker may not cancel it
CREATE TEMP TABLE tap_owners_job AS SELECT coord.enqueue('tap-roles-owner') AS id;
GRANT SELECT ON tap_owners_job TO PUBLIC;

-- a worker: jobs, locks, requests; not the views, schedules, purges or tables
SET ROLE tap_worker;
SELECT lives_ok($$SELECT coord.enqueue('tap-roles', '{"n": 1}')$$, 'worker: enqueue');
SELECT lives_ok($$CREATE TEMP TABLE tap_claim AS SELECT id, token FROM coord.claim('tap-roles')$$, 'worker: claim');
SELECT ok((SELECT coord.complete(id, token) FROM tap_claim), 'worker: complete');
SELECT lives_ok($$SELECT coord.lock('/tap/roles'), coord.unlock('/tap/roles')$$, 'worker: lock and unlock');
SELECT lives_ok($$SELECT coord.lock('/tap/fenced'), coord.fence('/tap/fenced'), coord.unlock('/tap/fenced')$$, 'worker: fence');
SELECT lives_ok($$SELECT coord.request('tap-roles-key'), coord.release('tap-roles-key')$$, 'worker: request');
SELECT throws_ok($$SELECT count(*) FROM coord.jobs$$, '42501', NULL, 'worker: no views');
SELECT throws_ok($$SELECT coord.schedule('tap-r', 'q', every => '1 hour')$$, '42501', NULL, 'worker: no schedules');
SELECT throws_ok($$SELECT coord.tick()$$, '42501', NULL, 'worker: no tick');
SELECT throws_ok($$SELECT coord.purge_jobs()$$, '42501', NULL, 'worker: no purge');
SELECT throws_ok(format('SELECT coord.cancel(%s)', (SELECT id FROM tap_owners_job)), '42501', NULL,
                 'worker: no cancel of a job another role enqueued');
SELECT throws_ok($$SELECT count(*) FROM coord.job$$, '42501', NULL, 'worker: no table');
SELECT throws_ok($$UPDATE coord.job SET token = 0$$, '42501', NULL, 'worker: no writing tables');
RESET ROLE;

-- a monitor: the views; nothing that writes
SET ROLE tap_monitor;
SELECT lives_ok($$SELECT count(*) FROM coord.jobs$$, 'monitor: coord.jobs');
SELECT lives_ok($$SELECT count(*) FROM coord.queue_stats$$, 'monitor: coord.queue_stats');
SELECT lives_ok($$SELECT count(*) FROM coord.locks$$, 'monitor: coord.locks');
SELECT lives_ok($$SELECT count(*) FROM coord.requests$$, 'monitor: coord.requests');
SELECT lives_ok($$SELECT count(*) FROM coord.schedules$$, 'monitor: coord.schedules');
SELECT throws_ok($$SELECT coord.enqueue('tap-roles')$$, '42501', NULL, 'monitor: no enqueue');
SELECT throws_ok($$SELECT * FROM coord.claim('tap-roles')$$, '42501', NULL, 'monitor: no claim');
SELECT throws_ok($$SELECT coord.lock('/tap/m')$$, '42501', NULL, 'monitor: no locks');
SELECT throws_ok($$SELECT count(*) FROM coord.job_history$$, '42501', NULL, 'monitor: no tables');
RESET ROLE;

-- an admin: schedules, tick, cancel, and what the others can do
SET ROLE tap_admin;
SELECT lives_ok($$SELECT coord.schedule('tap-r', 'tap-roles', every => '1 hour')$$, 'admin: schedule');
SELECT lives_ok($$SELECT coord.tick()$$, 'admin: tick');
SELECT ok((SELECT coord.cancel(job_id) FROM coord.schedules WHERE name = 'tap-r'), 'admin: cancel');
SELECT ok(coord.unschedule('tap-r'), 'admin: unschedule');
SELECT lives_ok($$SELECT count(*) FROM coord.jobs$$, 'admin: views');
SELECT lives_ok($$SELECT coord.enqueue('tap-roles')$$, 'admin: enqueue');
RESET ROLE;

-- a role with nothing granted
SET ROLE tap_nobody;
SELECT throws_ok($$SELECT coord.enqueue('tap-roles')$$, '42501', NULL, 'nobody: no enqueue');
SELECT throws_ok($$SELECT count(*) FROM coord.locks$$, '42501', NULL, 'nobody: no views');
RESET ROLE;

-- A hostile search_path at call time: an = operator on text and a now()
-- that log when they run, in a schema searched before pg_catalog.
CREATE SCHEMA tap_evil;
CREATE TABLE tap_evil.ran (what text);
GRANT ALL ON SCHEMA tap_evil TO PUBLIC;
GRANT ALL ON tap_evil.ran TO PUBLIC;
CREATE FUNCTION tap_evil.texteq(a text, b text) RETURNS boolean LANGUAGE plpgsql AS
  $$BEGIN INSERT INTO tap_evil.ran VALUES ('='); RETURN a OPERATOR(pg_catalog.=) b; END$$;
CREATE OPERATOR tap_evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = tap_evil.texteq);
CREATE FUNCTION tap_evil.now() RETURNS timestamptz LANGUAGE plpgsql AS
  $$BEGIN INSERT INTO tap_evil.ran VALUES ('now'); RETURN pg_catalog.now(); END$$;
-- (plain PL/pgSQL: pgTAP's own functions would use the hostile = themselves)
SET search_path = tap_evil, pg_catalog;
DO $evil$
BEGIN
  PERFORM coord.enqueue('tap-evil', '{}', key => 'k');
  PERFORM coord.enqueue('tap-evil', '{}', key => 'k');
  PERFORM coord.complete(id, token) FROM coord.claim('tap-evil', 5);
  PERFORM coord.schedule('tap-evil', 'tap-evil', every => '1 hour');
  PERFORM coord.schedule('tap-evil', 'tap-evil', every => '2 hours');
  PERFORM coord.unschedule('tap-evil');
  PERFORM coord.request('tap-evil-key'), coord.mark_done('tap-evil-key');
  PERFORM coord.lock('/tap/evil'), coord.fence('/tap/evil'), coord.unlock('/tap/evil');
  PERFORM coord.tick();
  PERFORM coord.define_app('tap-evil-up', starts => 'hourly', host => 'tap-evil-host', conf => '{"a": 1}');
  PERFORM coord.define_app('tap-evil-up', starts => 'hourly', host => 'tap-evil-host', conf => '{"a": 2}');
  PERFORM coord.define_app('tap-evil-down', depends => '{"tap-evil-up": "hourly"}', host => 'tap-evil-host',
                           timeout => '1 minute');
  PERFORM coord.tick();
  PERFORM coord.complete(id, token, '{"ok": true}') FROM coord.claim('apps', 5, host => 'tap-evil-host');
  PERFORM coord.tick(pg_catalog.now() OPERATOR(pg_catalog.+) '2 hours'::pg_catalog.interval);
  PERFORM count(*) FROM coord.runs;
  PERFORM count(*) FROM coord.grid(pg_catalog.now() OPERATOR(pg_catalog.-) '1 day'::pg_catalog.interval, pg_catalog.now(), NULL);
  PERFORM coord.drop_app('tap-evil-down');
  PERFORM coord.drop_app('tap-evil-up');
  PERFORM count(*) FROM coord.jobs;
  PERFORM count(*) FROM coord.queue_stats;
  PERFORM count(*) FROM coord.schedules;
  PERFORM count(*) FROM coord.locks;
  PERFORM count(*) FROM coord.requests;
END
$evil$;
RESET search_path;
SELECT is((SELECT count(*)::int FROM coord.job_history WHERE queue IN ('tap-evil', 'apps')), 2,
          'the calls under the hostile search_path did their work');
SELECT is((SELECT string_agg(DISTINCT what, ',') FROM tap_evil.ran), NULL, 'no hostile operator or function ran');

SELECT * FROM finish();
ROLLBACK;
