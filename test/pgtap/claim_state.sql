-- pgTAP: coord.claim_state (issue 24): what became of a claim, for a worker
-- whose complete or fail has an unknown outcome.  Every answer it can give
-- in one session ('released' needs the claiming session to end: the agent
-- test test/agent/unknown_outcome.sh sees it), its errors, and its grants:
-- coord_worker only, and a live claim of another role answers NULL, as a
-- stale token does everywhere else.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = warning;
BEGIN;
SELECT plan(20);

SELECT function_returns('coord', 'claim_state', ARRAY['bigint', 'bigint'], 'text');
SELECT throws_ok($$SELECT coord.claim_state(NULL, 1)$$, '22004', 'id must not be null', 'a NULL id is an error');
SELECT throws_ok($$SELECT coord.claim_state(1, NULL)$$, '22004', 'token must not be null', 'a NULL token is an error');
SELECT is(coord.claim_state(-1, 1), NULL, 'no such job: NULL');

CREATE ROLE tap_cs_a IN ROLE coord_worker;
CREATE ROLE tap_cs_b IN ROLE coord_worker;
CREATE ROLE tap_cs_mon IN ROLE coord_monitor;
CREATE ROLE tap_cs_adm IN ROLE coord_admin;
CREATE TABLE tap_cs (what text, id bigint, token bigint);
GRANT ALL ON tap_cs TO PUBLIC;

DO $$ BEGIN PERFORM coord.enqueue('tap-cs', pg_catalog.jsonb_build_object('i', i), max_attempts => 1)
          FROM generate_series(1, 7) AS i; END $$;
SELECT is(coord.claim_state((SELECT min(id) FROM coord.job WHERE queue = 'tap-cs'), 0), NULL,
          'a job never claimed (token 0): NULL');

SET ROLE tap_cs_a;
INSERT INTO tap_cs SELECT 'lease', id, token FROM coord.claim('tap-cs', 1, '1 hour');
INSERT INTO tap_cs SELECT 'session', id, token FROM coord.claim('tap-cs', 1, session_bound => true);
INSERT INTO tap_cs SELECT 'done', id, token FROM coord.claim('tap-cs', 1, '1 hour');
INSERT INTO tap_cs SELECT 'failed', id, token FROM coord.claim('tap-cs', 1, '1 hour');
INSERT INTO tap_cs SELECT 'dead', id, token FROM coord.claim('tap-cs', 1, '1 hour');
INSERT INTO tap_cs SELECT 'cancelled', id, token FROM coord.claim('tap-cs', 1, '1 hour');
INSERT INTO tap_cs SELECT 'reclaimed', id, token FROM coord.claim('tap-cs', 1, '1 hour');
SELECT coord.complete(id, token) FROM tap_cs WHERE what = 'done';
SELECT coord.fail(id, token, 'again', retry_after => '1 hour') FROM tap_cs WHERE what = 'failed';
SELECT coord.fail(id, token, 'no more') FROM tap_cs WHERE what = 'dead';

SELECT is(coord.claim_state(id, token), 'claimed', 'a lease claim: claimed') FROM tap_cs WHERE what = 'lease';
SELECT is(coord.claim_state(id, token), 'claimed', 'a session-bound claim a session holds: claimed')
  FROM tap_cs WHERE what = 'session';
SELECT is(coord.claim_state(id, token), 'done', 'completed under this claim: done') FROM tap_cs WHERE what = 'done';
SELECT is(coord.claim_state(id, token), 'scheduled', 'failed back under this claim: scheduled')
  FROM tap_cs WHERE what = 'failed';
SELECT is(coord.claim_state(id, token), 'dead', 'failed for the last time under this claim: dead')
  FROM tap_cs WHERE what = 'dead';
SELECT is(coord.claim_state(id, token + 1000000), NULL, 'a token the job never had: NULL')
  FROM tap_cs WHERE what = 'lease';
RESET ROLE;

SELECT coord.cancel(id) FROM tap_cs WHERE what = 'cancelled';
-- a later claim of the job, as far as the token goes (a claim in this
-- transaction would skip the rows it has changed already)
UPDATE coord.job SET token = pg_catalog.nextval('coord.job_token_seq')
 WHERE id = (SELECT id FROM tap_cs WHERE what = 'reclaimed');
SELECT is(coord.claim_state(j.id, j.token), 'claimed', 'the later claim: claimed')
  FROM coord.job AS j JOIN tap_cs AS t ON t.id = j.id WHERE t.what = 'reclaimed';
SET ROLE tap_cs_a;
SELECT is(coord.claim_state(id, token), 'cancelled', 'cancelled under this claim: cancelled')
  FROM tap_cs WHERE what = 'cancelled';
SELECT is(coord.claim_state(id, token), NULL, 'claimed again since (another token): NULL')
  FROM tap_cs WHERE what = 'reclaimed';
RESET ROLE;

-- another worker role: a live claim answers as a stale token does; the
-- history (a token that can no longer act) answers anyone who may call it
SET ROLE tap_cs_b;
SELECT is(coord.claim_state(id, token), NULL, 'another role: a live claim answers NULL') FROM tap_cs WHERE what = 'lease';
SELECT is(coord.claim_state(id, token), NULL, 'another role: a failed-back claim answers NULL') FROM tap_cs WHERE what = 'failed';
SELECT is(coord.claim_state(id, token), 'done', 'another role: a finished claim answers') FROM tap_cs WHERE what = 'done';
RESET ROLE;
SET ROLE tap_cs_adm;
SELECT is(coord.claim_state(id, token), 'claimed', 'coord_admin: answers for any claimant') FROM tap_cs WHERE what = 'lease';
RESET ROLE;
SET ROLE tap_cs_mon;
SELECT throws_ok($$SELECT coord.claim_state(1, 1)$$, '42501', NULL, 'coord_monitor may not call it');
RESET ROLE;
SELECT ok(NOT has_function_privilege('public', 'coord.claim_state(bigint, bigint)', 'EXECUTE'),
          'PUBLIC may not call it');

SELECT * FROM finish();
ROLLBACK;
