-- pgTAP: job control (issue 27): enqueued_by, coord.progress, coord.cancel
-- by the enqueuer, coord.await, coord.my_jobs -- their errors and grants.
-- A producer (a coord_worker role) may cancel and await the jobs it
-- enqueued, and read them in coord.my_jobs; another worker role gets 42501
-- from cancel and await and sees none of them; coord_monitor may await any
-- job but cancel none; coord_admin may do both.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = warning;
BEGIN;
SELECT plan(46);

CREATE ROLE tap_jc_p IN ROLE coord_worker;
CREATE ROLE tap_jc_p2 IN ROLE tap_jc_p;
CREATE ROLE tap_jc_o IN ROLE coord_worker;
CREATE ROLE tap_jc_mon IN ROLE coord_monitor;
CREATE ROLE tap_jc_adm IN ROLE coord_admin;
CREATE TABLE tap_jc (k text PRIMARY KEY, id bigint, token bigint);
GRANT ALL ON tap_jc TO PUBLIC;

-- ---- enqueued_by
SET ROLE tap_jc_p;
INSERT INTO tap_jc SELECT 'a', coord.enqueue('tap-jc', '{"n": 1}'), NULL;
INSERT INTO tap_jc SELECT 'b', coord.enqueue('tap-jc', '{"n": 2}'), NULL;
INSERT INTO tap_jc SELECT 'm' || ord, id, NULL
  FROM coord.enqueue_many('tap-jc-many', ARRAY['{}', '{}']::jsonb[]) WITH ORDINALITY AS e(id, ord);
RESET ROLE;
SET ROLE tap_jc_o;
INSERT INTO tap_jc SELECT 'o', coord.enqueue('tap-jc', '{"n": 3}'), NULL;
RESET ROLE;
SELECT is((SELECT enqueued_by::text FROM coord.jobs WHERE id = (SELECT id FROM tap_jc WHERE k = 'a')),
          'tap_jc_p', 'enqueue records the calling role, not the owner it runs as');
SELECT is((SELECT string_agg(DISTINCT enqueued_by::text, ',') FROM coord.jobs
            WHERE id IN (SELECT id FROM tap_jc WHERE k LIKE 'm%')),
          'tap_jc_p', 'enqueue_many records it too');
SELECT is((SELECT enqueued_by FROM coord.job WHERE id = (SELECT id FROM tap_jc WHERE k = 'o')),
          'tap_jc_o'::regrole::oid, 'coord.job.enqueued_by is the role''s oid');

-- ---- my_jobs
SET ROLE tap_jc_p;
SELECT is((SELECT count(*)::int FROM coord.my_jobs), 4, 'my_jobs: a producer sees its own 4 jobs');
SELECT is((SELECT payload FROM coord.my_jobs WHERE id = (SELECT id FROM tap_jc WHERE k = 'a')), '{"n": 1}'::jsonb,
          'my_jobs: with the payload, without coord_monitor');
SELECT throws_ok('SELECT count(*) FROM coord.jobs', '42501', NULL, 'a producer still cannot read coord.jobs');
RESET ROLE;
SET ROLE tap_jc_p2;
SELECT is((SELECT count(*)::int FROM coord.my_jobs), 4, 'my_jobs: a member of the producer''s role sees its jobs');
RESET ROLE;
SET ROLE tap_jc_o;
SELECT is((SELECT count(*)::int FROM coord.my_jobs), 1, 'my_jobs: another worker sees only its own job');
-- a leaky function of the reader's runs only on its own rows (security_barrier)
CREATE FUNCTION pg_temp.leak(jsonb) RETURNS boolean LANGUAGE plpgsql COST 0.0000001 AS
  $$ BEGIN RAISE NOTICE 'leak %', $1; RETURN true; END $$;
SET client_min_messages = notice;
SELECT is((SELECT count(*)::int FROM coord.my_jobs WHERE pg_temp.leak(payload)), 1,
          'my_jobs: a reader''s function sees only the reader''s rows');
SET client_min_messages = warning;
RESET ROLE;
SET ROLE tap_jc_mon;
SELECT is((SELECT count(*)::int FROM coord.my_jobs), 0, 'my_jobs: coord_monitor enqueued nothing');
SELECT throws_ok('SELECT progress FROM coord.jobs', '42501', NULL, 'coord_monitor does not read coord.jobs.progress');
SELECT is((SELECT count(*)::int FROM coord.jobs WHERE enqueued_by = 'tap_jc_p'::regrole), 4,
          'coord_monitor reads coord.jobs.enqueued_by');
RESET ROLE;

-- ---- progress
SELECT throws_ok('SELECT coord.progress(NULL, 1, ''{}'')', '22004', 'id must not be null', 'progress: NULL id');
SELECT throws_ok('SELECT coord.progress(1, NULL, ''{}'')', '22004', 'token must not be null', 'progress: NULL token');
SELECT throws_ok('SELECT coord.progress(1, 1, NULL)', '22004', 'progress must not be null', 'progress: NULL progress');
SELECT throws_ok($$SELECT coord.progress(1, 1, jsonb_build_object('x', repeat('y', 70000)))$$, '54000', NULL,
                 'progress: larger than 64 kB');
SET ROLE tap_jc_o;
UPDATE tap_jc SET token = c.token FROM coord.claim('tap-jc', 1, '1 hour') AS c WHERE tap_jc.id = c.id;
SELECT is((SELECT count(*)::int FROM tap_jc WHERE token IS NOT NULL), 1, 'a worker claimed one job');
SELECT is(coord.progress(id, token, '{"pct": 50}'), true, 'progress: the holder reports') FROM tap_jc WHERE token IS NOT NULL;
SELECT is(coord.progress(id, token - 1, '{"pct": 60}'), false, 'progress: a stale token is refused') FROM tap_jc WHERE token IS NOT NULL;
SELECT is(coord.progress(-1, 1, '{}'), false, 'progress: an unknown job is false');
RESET ROLE;
SELECT is((SELECT progress FROM coord.jobs WHERE id = (SELECT id FROM tap_jc WHERE token IS NOT NULL)), '{"pct": 50}'::jsonb,
          'progress: shown in coord.jobs.progress');
SET ROLE tap_jc_p;
SELECT is(coord.progress(id, token, '{"pct": 70}'), false, 'progress: another role with the right token is refused')
  FROM tap_jc WHERE token IS NOT NULL;
RESET ROLE;
SET ROLE tap_jc_adm;
SELECT is(coord.progress(id, token, '{"pct": 80}'), true, 'progress: coord_admin may report for any claim')
  FROM tap_jc WHERE token IS NOT NULL;
RESET ROLE;

-- ---- cancel
SELECT throws_ok('SELECT coord.cancel(NULL)', '22004', 'id must not be null', 'cancel: NULL id');
SET ROLE tap_jc_o;
SELECT throws_ok(format('SELECT coord.cancel(%s)', (SELECT id FROM tap_jc WHERE k = 'b')), '42501', NULL,
                 'cancel: another worker role may not cancel a producer''s job');
SELECT is(coord.cancel(-1), false, 'cancel: an unknown job is false, for anyone');
RESET ROLE;
SET ROLE tap_jc_mon;
SELECT throws_ok(format('SELECT coord.cancel(%s)', (SELECT id FROM tap_jc WHERE k = 'b')), '42501', NULL,
                 'cancel: coord_monitor may not cancel');
RESET ROLE;
SET ROLE tap_jc_p2;
SELECT is(coord.cancel((SELECT id FROM tap_jc WHERE k = 'b')), true, 'cancel: a member of the enqueuing role may');
RESET ROLE;
SET ROLE tap_jc_p;
SELECT is(coord.cancel((SELECT id FROM tap_jc WHERE k = 'b')), false, 'cancel: a finished job is false');
-- the running job (claimed by tap_jc_o) was enqueued by tap_jc_p or tap_jc_o
RESET ROLE;
SELECT is((SELECT enqueued_by::text FROM coord.jobs WHERE id = (SELECT id FROM tap_jc WHERE token IS NOT NULL)),
          'tap_jc_p', 'the claimed job is the producer''s');
SET ROLE tap_jc_p;
SELECT is(coord.cancel(id), true, 'cancel: the enqueuer cancels its running job') FROM tap_jc WHERE token IS NOT NULL;
RESET ROLE;
SET ROLE tap_jc_o;
SELECT is(coord.heartbeat(id, token), NULL, 'after cancel: the holder''s heartbeat is NULL') FROM tap_jc WHERE token IS NOT NULL;
SELECT is(coord.progress(id, token, '{}'), false, 'after cancel: progress is false') FROM tap_jc WHERE token IS NOT NULL;
SELECT is(coord.complete(id, token), false, 'after cancel: complete is false') FROM tap_jc WHERE token IS NOT NULL;
RESET ROLE;
SET ROLE tap_jc_adm;
SELECT is(coord.cancel((SELECT id FROM tap_jc WHERE k = 'o')), true, 'cancel: coord_admin cancels any job');
RESET ROLE;

-- ---- await
SELECT throws_ok('SELECT coord.await(NULL)', '22004', 'id must not be null', 'await: NULL id');
SELECT throws_ok('SELECT coord.await(-1)', 'P0002', 'job -1 does not exist', 'await: an unknown job');
SELECT throws_ok('SELECT coord.await(1, ''-1 second'')', '22023', NULL, 'await: a negative timeout');
SELECT throws_ok(format('SELECT coord.await(%s, ''0'')', (SELECT id FROM tap_jc WHERE k = 'm1')), '55000', NULL,
                 'await: a job this transaction enqueued would never finish');
SET ROLE tap_jc_p;
SELECT is((SELECT row(state, result, error)::text FROM coord.await((SELECT id FROM tap_jc WHERE k = 'b'))),
          '(cancelled,,)', 'await: the enqueuer awaits its finished job');
RESET ROLE;
SET ROLE tap_jc_o;
SELECT throws_ok(format('SELECT coord.await(%s)', (SELECT id FROM tap_jc WHERE k = 'b')), '42501', NULL,
                 'await: another worker role may not');
RESET ROLE;
SET ROLE tap_jc_mon;
SELECT is((SELECT state FROM coord.await((SELECT id FROM tap_jc WHERE k = 'o'))), 'cancelled',
          'await: coord_monitor may await any job');
RESET ROLE;
SET ROLE tap_jc_adm;
SELECT is((SELECT state FROM coord.await((SELECT id FROM tap_jc WHERE k = 'b'))), 'cancelled',
          'await: coord_admin may await any job');
RESET ROLE;

-- ---- grants
SELECT ok(has_function_privilege('coord_worker', 'coord.progress(bigint, bigint, jsonb)', 'EXECUTE'),
          'grants: coord_worker may call progress');
SELECT ok(NOT has_function_privilege('coord_monitor', 'coord.progress(bigint, bigint, jsonb)', 'EXECUTE'),
          'grants: coord_monitor may not call progress');
SELECT ok(NOT has_function_privilege('public', 'coord.await(bigint, interval)', 'EXECUTE')
          AND NOT has_function_privilege('public', 'coord.cancel(bigint)', 'EXECUTE')
          AND NOT has_table_privilege('public', 'coord.my_jobs', 'SELECT'),
          'grants: PUBLIC gets none of them');

SELECT * FROM finish();
ROLLBACK;
