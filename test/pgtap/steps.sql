-- pgTAP: durable steps (issue 27; docs/durable-steps.md): coord.step and
-- coord.step_done, their errors (NULLs 22004, names 22023, JSON null 22023,
-- sizes and the steps per job 54000, a second result 23505, a lost claim
-- 55000 for step, false for step_done), the first result staying, steps
-- kept across attempts and coord.retry and purged with the history, and the
-- grants: coord_worker for the functions, acting only for its own claims;
-- coord.job_steps for coord_monitor without result, for coord_admin whole.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = warning;
BEGIN;
SELECT plan(43);

SELECT function_returns('coord', 'step', ARRAY['bigint', 'bigint', 'text'], 'jsonb');
SELECT function_returns('coord', 'step_done', ARRAY['bigint', 'bigint', 'text', 'jsonb'], 'boolean');

CREATE ROLE tap_st_a IN ROLE coord_worker;
CREATE ROLE tap_st_b IN ROLE coord_worker;
CREATE ROLE tap_st_mon IN ROLE coord_monitor;
CREATE ROLE tap_st_adm IN ROLE coord_admin;
CREATE ROLE tap_st_none;
CREATE TABLE tap_st (what text, id bigint, token bigint);
GRANT ALL ON tap_st TO PUBLIC;
DO $$ BEGIN PERFORM coord.enqueue('tap-st', pg_catalog.jsonb_build_object('i', i), max_attempts => 3)
          FROM generate_series(1, 3) AS i; END $$;

SET ROLE tap_st_a;
INSERT INTO tap_st SELECT 'a', id, token FROM coord.claim('tap-st', 1, '1 hour');
SELECT throws_ok($$SELECT coord.step(NULL, 1, 'x')$$, '22004', 'id must not be null', 'step: a NULL id is an error');
SELECT throws_ok($$SELECT coord.step(1, NULL, 'x')$$, '22004', 'token must not be null', 'step: a NULL token is an error');
SELECT throws_ok($$SELECT coord.step(1, 1, NULL)$$, '22004', 'name must not be null', 'step: a NULL name is an error');
SELECT throws_ok($$SELECT coord.step_done(NULL, 1, 'x', '1')$$, '22004', 'id must not be null', 'step_done: a NULL id is an error');
SELECT throws_ok($$SELECT coord.step_done(1, NULL, 'x', '1')$$, '22004', 'token must not be null', 'step_done: a NULL token is an error');
SELECT throws_ok($$SELECT coord.step_done(1, 1, NULL, '1')$$, '22004', 'name must not be null', 'step_done: a NULL name is an error');
SELECT throws_ok($$SELECT coord.step_done(1, 1, 'x', NULL)$$, '22004', 'result must not be null', 'step_done: a NULL result is an error');
SELECT throws_ok(format($$SELECT coord.step(%s, %s, '')$$, id, token), '22023', 'step name must have 1 to 256 bytes',
                 'an empty name is an error') FROM tap_st WHERE what = 'a';
SELECT throws_ok(format($$SELECT coord.step_done(%s, %s, repeat('n', 257), '1')$$, id, token), '22023',
                 'step name must have 1 to 256 bytes', 'a name of 257 bytes is an error') FROM tap_st WHERE what = 'a';
SELECT throws_ok(format($$SELECT coord.step_done(%s, %s, 'x', 'null')$$, id, token), '22023',
                 'a step''s result cannot be JSON null', 'a JSON null result is an error') FROM tap_st WHERE what = 'a';
SELECT throws_ok(format($$SELECT coord.step_done(%s, %s, 'x', pg_catalog.to_jsonb(repeat('r', 1024 * 1024)))$$, id, token),
                 '54000', 'step result is too large', 'a result over 1 MB is an error') FROM tap_st WHERE what = 'a';
SELECT throws_ok($$SELECT coord.step(-1, 1, 'x')$$, '55000', 'job -1 is not claimed with this token',
                 'step of a job that does not exist: 55000');
SELECT is(coord.step_done(-1, 1, 'x', '1'), false, 'step_done of a job that does not exist: false');

SELECT is(coord.step(id, token, 'fetch'), NULL, 'a step not done: NULL') FROM tap_st WHERE what = 'a';
SELECT is(coord.step_done(id, token, 'fetch', '{"rows": 3}'), true, 'step_done records it') FROM tap_st WHERE what = 'a';
SELECT is(coord.step(id, token, 'fetch'), '{"rows": 3}'::jsonb, 'step reads it back') FROM tap_st WHERE what = 'a';
SELECT is(coord.step_done(id, token, 'fetch', '{"rows": 3}'), true, 'the same result again: true')
  FROM tap_st WHERE what = 'a';
SELECT throws_ok(format($$SELECT coord.step_done(%s, %s, 'fetch', '{"rows": 4}')$$, id, token), '23505',
                 format('step "fetch" of job %s is recorded already, with another result', id),
                 'another result for a recorded step: 23505') FROM tap_st WHERE what = 'a';
SELECT is(coord.step(id, token, 'fetch'), '{"rows": 3}'::jsonb, 'the first result stays') FROM tap_st WHERE what = 'a';
SELECT is(coord.step_done(id, token, 'load', 'true'), true, 'a second step') FROM tap_st WHERE what = 'a';
SELECT is(coord.step_done(id, token + 1, 'other', '1'), false, 'a wrong token records nothing: false')
  FROM tap_st WHERE what = 'a';
SELECT throws_ok(format($$SELECT coord.step(%s, %s, 'fetch')$$, id, token + 1), '55000', NULL,
                 'a wrong token cannot read steps: 55000') FROM tap_st WHERE what = 'a';

-- another worker role, with the right token: answered as a wrong token
SET ROLE tap_st_b;
SELECT is(coord.step_done(id, token, 'b-step', '1'), false, 'another worker role cannot record a step of the claim')
  FROM tap_st WHERE what = 'a';
SELECT throws_ok(format($$SELECT coord.step(%s, %s, 'fetch')$$, id, token), '55000', NULL,
                 'nor read one') FROM tap_st WHERE what = 'a';
RESET ROLE;

-- the views: the monitor without result, the admin whole; no grant for others
SET ROLE tap_st_mon;
SELECT results_eq($$SELECT name, step_no, attempt FROM coord.job_steps ORDER BY step_no$$,
                  $$VALUES ('fetch'::text, 1, 1), ('load'::text, 2, 1)$$, 'coord_monitor reads the steps');
SELECT throws_ok($$SELECT result FROM coord.job_steps$$, '42501', NULL, 'but not their results');
SELECT throws_ok($$SELECT coord.step(1, 1, 'x')$$, '42501', NULL, 'coord_monitor cannot call coord.step');
RESET ROLE;
SET ROLE tap_st_adm;
SELECT is((SELECT result FROM coord.job_steps WHERE name = 'load'), 'true'::jsonb, 'coord_admin reads the results');
RESET ROLE;
SET ROLE tap_st_none;
SELECT throws_ok($$SELECT coord.step_done(1, 1, 'x', '1')$$, '42501', NULL, 'a role without pg_coord''s roles cannot record');
SELECT throws_ok($$SELECT * FROM coord.job_steps$$, '42501', NULL, 'nor read the steps');
RESET ROLE;

-- the next attempt reads what the first recorded; the attempt is recorded
SET ROLE tap_st_a;
SELECT coord.fail(id, token, 'crashed', retry_after => '1 second') FROM tap_st WHERE what = 'a';
RESET ROLE;
UPDATE coord.job SET run_at = now() - interval '1 second' WHERE id = (SELECT id FROM tap_st WHERE what = 'a');
UPDATE coord.job SET token = pg_catalog.nextval('coord.job_token_seq'), attempt = 2, lease_until = now() + interval '1 hour',
       claimed_by = 'tap_st_a'::regrole WHERE id = (SELECT id FROM tap_st WHERE what = 'a');
INSERT INTO tap_st SELECT 'a2', id, token FROM coord.job WHERE id = (SELECT id FROM tap_st WHERE what = 'a');
SET ROLE tap_st_a;
SELECT is(coord.step(id, token, 'fetch'), '{"rows": 3}'::jsonb, 'the next attempt reads the recorded step') FROM tap_st WHERE what = 'a2';
SELECT is(coord.step_done(id, token, 'report', '"sent"'), true, 'and records its own') FROM tap_st WHERE what = 'a2';
SELECT is(coord.step_done(id, (SELECT token FROM tap_st WHERE what = 'a'), 'zombie', '1'), false,
          'the first attempt''s token records nothing') FROM tap_st WHERE what = 'a2';
SELECT coord.complete(id, token) FROM tap_st WHERE what = 'a2';
RESET ROLE;
SELECT results_eq($$SELECT name, step_no, attempt FROM coord.job_steps ORDER BY step_no$$,
                  $$VALUES ('fetch'::text, 1, 1), ('load'::text, 2, 1), ('report'::text, 3, 2)$$,
                  'steps are numbered in order, with the attempt that recorded each');

-- purged with the job's history
UPDATE coord.job_history SET finished_at = finished_at - interval '1 hour';
SELECT coord.purge_jobs('0 seconds');
SELECT is((SELECT count(*) FROM coord.job_steps), 0::bigint, 'purging the job''s history deletes its steps');

-- a job removed without a history row (an unclaimed job of a dropped app,
-- between two attempts): the tick deletes its steps once older than
-- coord.job_history_retention, not before
DO $$ BEGIN PERFORM coord.enqueue('tap-st-orphan', '{}'); END $$;
INSERT INTO tap_st SELECT 'o', id, token FROM coord.claim('tap-st-orphan', 1, '1 hour');
SELECT coord.step_done(id, token, 'old', '1') FROM tap_st WHERE what = 'o';
SELECT coord.step_done(id, token, 'young', '1') FROM tap_st WHERE what = 'o';
DELETE FROM coord.job WHERE id = (SELECT id FROM tap_st WHERE what = 'o');
UPDATE coord.job_step SET recorded_at = now() - interval '8 days' WHERE name = 'old';
SELECT coord.tick();
SELECT results_eq($$SELECT name FROM coord.job_steps$$, $$VALUES ('young'::text)$$,
                  'the tick deletes the old steps of a vanished job, not its young ones');

-- at most 10,000 steps per job
DO $$ BEGIN PERFORM coord.enqueue('tap-st-many', '{}'); END $$;
INSERT INTO tap_st SELECT 'm', id, token FROM coord.claim('tap-st-many', 1, '1 hour');
SELECT is(bool_and(coord.step_done(t.id, t.token, 's' || i, 'true')), true, '10,000 steps are recorded')
  FROM tap_st AS t, generate_series(1, 10000) AS i WHERE t.what = 'm';
SELECT throws_ok(format($$SELECT coord.step_done(%s, %s, 'one more', 'true')$$, id, token), '54000',
                 format('job %s has too many steps', id), 'the 10,001st is an error') FROM tap_st WHERE what = 'm';
SELECT is(coord.step(id, token, 's10000'), 'true'::jsonb, 'the last one recorded reads back') FROM tap_st WHERE what = 'm';

-- a session-bound claim: its session records and reads
DO $$ BEGIN PERFORM coord.enqueue('tap-st-sb', '{}'); END $$;
INSERT INTO tap_st SELECT 'sb', id, token FROM coord.claim('tap-st-sb', 1, session_bound => true);
SELECT is(coord.step_done(id, token, 'sb', '"x"'), true, 'a session-bound claim records a step') FROM tap_st WHERE what = 'sb';
SELECT is(coord.step(id, token, 'sb'), '"x"'::jsonb, 'and reads it') FROM tap_st WHERE what = 'sb';

SELECT * FROM finish();
ROLLBACK;
