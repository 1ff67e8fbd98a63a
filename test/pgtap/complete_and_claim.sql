-- pgTAP: coord.complete_and_claim and coord.fail_and_claim (issue 28): one
-- commit per job.  The result shape (one row per job claimed, each with the
-- finish's answer; one row with NULL job columns when nothing was claimed),
-- the fencing rule of complete and fail (a stale token or another role's
-- claim finishes nothing and still claims), claims of the finished job's
-- queue only, lease and session-bound claims, host, pause_key, errors and
-- grants.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = warning;
BEGIN;
SELECT plan(66);

SELECT has_function('coord', 'complete_and_claim',
                    ARRAY['bigint', 'bigint', 'jsonb', 'integer', 'interval', 'boolean', 'text', 'text']);
SELECT has_function('coord', 'fail_and_claim',
                    ARRAY['bigint', 'bigint', 'text', 'interval', 'boolean', 'integer', 'interval', 'boolean', 'text', 'text']);
SELECT is(pg_catalog.pg_get_function_result('coord.complete_and_claim'::regproc), 'SETOF coord.claimed_after_complete',
          'complete_and_claim returns rows of coord.claimed_after_complete');
SELECT is(pg_catalog.pg_get_function_result('coord.fail_and_claim'::regproc), 'SETOF coord.claimed_after_fail',
          'fail_and_claim returns rows of coord.claimed_after_fail');
SELECT is((SELECT pg_catalog.string_agg(a.attname || ' ' || pg_catalog.format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
             FROM pg_catalog.pg_attribute AS a WHERE a.attrelid = 'coord.claimed_after_complete'::regclass AND a.attnum > 0),
          'completed boolean, ' || (SELECT pg_catalog.string_agg(a.attname || ' ' || pg_catalog.format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
             FROM pg_catalog.pg_attribute AS a WHERE a.attrelid = 'coord.claimed_job'::regclass AND a.attnum > 0),
          'completed, then the columns of coord.claimed_job in their order');
SELECT is((SELECT pg_catalog.string_agg(a.attname || ' ' || pg_catalog.format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
             FROM pg_catalog.pg_attribute AS a WHERE a.attrelid = 'coord.claimed_after_fail'::regclass AND a.attnum > 0),
          'state text, ' || (SELECT pg_catalog.string_agg(a.attname || ' ' || pg_catalog.format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
             FROM pg_catalog.pg_attribute AS a WHERE a.attrelid = 'coord.claimed_job'::regclass AND a.attnum > 0),
          'state, then the columns of coord.claimed_job in their order');

-- errors: the caller's, before any work
SELECT throws_ok($$SELECT * FROM coord.complete_and_claim(NULL, 1)$$, '22004', 'id must not be null', 'a NULL id');
SELECT throws_ok($$SELECT * FROM coord.complete_and_claim(1, NULL)$$, '22004', 'token must not be null', 'a NULL token');
SELECT throws_ok($$SELECT * FROM coord.complete_and_claim(1, 1, n => -1)$$, '22023', 'n must be between 0 and 10000',
                 'n below 0');
SELECT throws_ok($$SELECT * FROM coord.complete_and_claim(1, 1, n => 10001)$$, '22023', NULL, 'n above 10000');
SELECT throws_ok($$SELECT * FROM coord.complete_and_claim(1, 1, n => NULL)$$, '22004', 'n must not be null', 'a NULL n');
SELECT throws_ok($$SELECT * FROM coord.complete_and_claim(1, 1, lease => '-1 second')$$, '22023', NULL, 'a negative lease');
SELECT throws_ok($$SELECT * FROM coord.complete_and_claim(1, 1, lease => NULL)$$, '22004', 'lease must not be null',
                 'a NULL lease of a lease claim');
SELECT throws_ok($$SELECT * FROM coord.complete_and_claim(1, 1, session_bound => NULL)$$, '22004',
                 'session_bound must not be null', 'a NULL session_bound');
SELECT throws_ok($$SELECT * FROM coord.complete_and_claim(1, 1, ('{"big": "' || pg_catalog.repeat('x', 2000000) || '"}')::jsonb)$$,
                 '54000', NULL, 'a result over the size limit');
SELECT throws_ok($$SELECT * FROM coord.complete_and_claim(1, 1, host => pg_catalog.repeat('h', 300))$$, '22023', NULL,
                 'a host name too long');
SELECT throws_ok($$SELECT * FROM coord.fail_and_claim(NULL, 1)$$, '22004', 'id must not be null', 'fail: a NULL id');
SELECT throws_ok($$SELECT * FROM coord.fail_and_claim(1, 1, pause_key => true)$$, '22004', 'pause_key needs retry_after',
                 'fail: pause_key without retry_after');
SELECT throws_ok($$SELECT * FROM coord.fail_and_claim(1, 1, retry_after => '100 years')$$, '22023',
                 'retry_after is longer than coord.max_retry_after', 'fail: retry_after too long');
SELECT throws_ok($$SELECT * FROM coord.fail_and_claim(1, 1, n => -1)$$, '22023', 'n must be between 0 and 10000',
                 'fail: n below 0');

-- an id no one ever had: not completed, and no queue to claim from
SELECT results_eq($$SELECT completed, id FROM coord.complete_and_claim(-1, 1)$$,
                  $$VALUES (false, NULL::bigint)$$, 'an unknown job: one row, completed false, no job');
SELECT results_eq($$SELECT state, id FROM coord.fail_and_claim(-1, 1)$$,
                  $$VALUES (NULL::text, NULL::bigint)$$, 'fail: an unknown job: one row, state NULL, no job');

CREATE ROLE tap_cc_a IN ROLE coord_worker;
CREATE ROLE tap_cc_b IN ROLE coord_worker;
CREATE ROLE tap_cc_mon IN ROLE coord_monitor;
CREATE TABLE tap_cc (what text, id bigint, token bigint, lease_until timestamptz, completed boolean);
GRANT ALL ON tap_cc TO PUBLIC;
-- the test reads the queue's tables under these roles (rolled back at the end)
GRANT SELECT ON coord.job, coord.job_history TO tap_cc_a, tap_cc_b;

DO $$ BEGIN PERFORM coord.enqueue('tap-cc', pg_catalog.jsonb_build_object('i', i), priority => 100 - i)
          FROM generate_series(1, 12) AS i;
            PERFORM coord.enqueue('tap-cc-other', '{"other": true}', priority => 1000); END $$;

SET ROLE tap_cc_a;
INSERT INTO tap_cc (what, id, token) SELECT 'first', id, token FROM coord.claim('tap-cc', 1, '1 hour');
-- complete the first, claim the next (the one of the highest priority left)
INSERT INTO tap_cc (what, completed, id, token, lease_until)
  SELECT 'second', c.completed, c.id, c.token, c.lease_until
    FROM tap_cc AS t, coord.complete_and_claim(t.id, t.token, '{"r": 1}', lease => '1 hour') AS c
   WHERE t.what = 'first';
SELECT is(completed, true, 'complete_and_claim: completed') FROM tap_cc WHERE what = 'second';
SELECT is(coord.job_state(id), 'done', 'the finished job is done') FROM tap_cc WHERE what = 'first';
SELECT is((SELECT payload->>'i' FROM coord.job WHERE id = t.id), '2',
          'the claimed job is the next of the queue in claim order, not the other queue''s')
  FROM tap_cc AS t WHERE what = 'second';
SELECT is(coord.job_state(id), 'running', 'the claimed job is running') FROM tap_cc WHERE what = 'second';
SELECT ok(lease_until BETWEEN now() + interval '59 minutes' AND now() + interval '61 minutes',
          'a lease claim: lease_until is now + lease') FROM tap_cc WHERE what = 'second';
SELECT ok(token > (SELECT token FROM tap_cc WHERE what = 'first'), 'a new token') FROM tap_cc WHERE what = 'second';
SELECT is(coord.heartbeat(id, token, '1 hour') IS NOT NULL, true, 'the claim is the caller''s: heartbeat works')
  FROM tap_cc WHERE what = 'second';
RESET ROLE;
SELECT is((SELECT result FROM coord.job_history WHERE id = t.id), '{"r": 1}'::jsonb, 'the result is recorded')
  FROM tap_cc AS t WHERE what = 'first';

-- n jobs: a row each, completed in every row
SET ROLE tap_cc_a;
CREATE TEMP TABLE tap_cc_n AS
  SELECT c.* FROM tap_cc AS t, coord.complete_and_claim(t.id, t.token, n => 3) AS c WHERE t.what = 'second';
GRANT SELECT ON tap_cc_n TO PUBLIC;
SELECT is((SELECT count(*) FROM tap_cc_n), 3::bigint, 'n => 3: three rows');
SELECT is((SELECT bool_and(completed) FROM tap_cc_n), true, 'each row says completed');
SELECT results_eq($$SELECT (payload->>'i')::int FROM tap_cc_n$$, $$VALUES (3), (4), (5)$$,
                  'in claim order');
SELECT is((SELECT count(DISTINCT queue) FROM tap_cc_n WHERE queue = 'tap-cc'), 1::bigint, 'all of the finished job''s queue');

-- stale token: nothing finished, and it still claims
SELECT results_eq($$SELECT c.completed, (SELECT payload->>'i' FROM coord.job WHERE id = c.id)
                     FROM (SELECT id, token FROM tap_cc_n ORDER BY id LIMIT 1) AS t,
                          coord.complete_and_claim(t.id, t.token + 1000000) AS c$$,
                  $$VALUES (false, '6')$$, 'a stale token: completed false, and the next job claimed');
SELECT is(coord.job_state(id), 'running', 'a stale token finishes nothing: the job is still running')
  FROM (SELECT id FROM tap_cc_n ORDER BY id LIMIT 1) AS t;
SELECT is(coord.complete(id, token), true, 'and the live claim still completes it')
  FROM (SELECT id, token FROM tap_cc_n ORDER BY id LIMIT 1) AS t;
RESET ROLE;

-- another role's lease claim: answered as a stale token is, nothing finished
SET ROLE tap_cc_b;
SELECT results_eq($$SELECT c.completed, c.id IS NOT NULL
                     FROM (SELECT id, token FROM tap_cc_n ORDER BY id OFFSET 1 LIMIT 1) AS t,
                          coord.complete_and_claim(t.id, t.token, n => 0) AS c$$,
                  $$VALUES (false, false)$$, 'another role''s claim: completed false; n => 0 claims nothing');
RESET ROLE;
SELECT is(coord.job_state(id), 'running', 'another role''s call finishes nothing')
  FROM (SELECT id FROM tap_cc_n ORDER BY id OFFSET 1 LIMIT 1) AS t;

-- a cancelled job: not completed; the queue comes from its history row
SELECT coord.cancel(id) FROM (SELECT id FROM tap_cc_n ORDER BY id OFFSET 1 LIMIT 1) AS t;
SET ROLE tap_cc_a;
SELECT results_eq($$SELECT c.completed, c.queue
                     FROM (SELECT id, token FROM tap_cc_n ORDER BY id OFFSET 1 LIMIT 1) AS t,
                          coord.complete_and_claim(t.id, t.token) AS c$$,
                  $$VALUES (false, 'tap-cc'::text)$$, 'a cancelled job: completed false, and a job of its queue claimed');

-- session-bound
INSERT INTO tap_cc (what, completed, id, token, lease_until)
  SELECT 'session', c.completed, c.id, c.token, c.lease_until
    FROM (SELECT id, token FROM tap_cc_n ORDER BY id OFFSET 2 LIMIT 1) AS t,
         coord.complete_and_claim(t.id, t.token, session_bound => true) AS c;
SELECT is(completed, true, 'session_bound: the finished job completed') FROM tap_cc WHERE what = 'session';
SELECT is(lease_until, NULL, 'a session-bound claim has no lease') FROM tap_cc WHERE what = 'session';
SELECT is(coord.job_claimed(id), true, 'a session-bound claim holds its claim lock') FROM tap_cc WHERE what = 'session';
SELECT is((SELECT lease_until FROM coord.job WHERE id = t.id), NULL, 'and its row has no lease')
  FROM tap_cc AS t WHERE what = 'session';

-- fail_and_claim: snoozed (retry_after), then claims the next
INSERT INTO tap_cc (what, completed, id, token)
  SELECT 'after-fail', c.state = 'scheduled', c.id, c.token
    FROM tap_cc AS t, coord.fail_and_claim(t.id, t.token, 'busy', retry_after => '1 hour') AS c
   WHERE t.what = 'session';
SELECT is(completed, true, 'fail_and_claim: state scheduled') FROM tap_cc WHERE what = 'after-fail';
SELECT ok((SELECT run_at > now() + interval '59 minutes' FROM coord.job WHERE id = t.id),
          'the failed job is scheduled again, after retry_after') FROM tap_cc AS t WHERE what = 'session';
SELECT is((SELECT last_error FROM coord.job WHERE id = t.id), 'busy', 'with its error')
  FROM tap_cc AS t WHERE what = 'session';
SELECT isnt(id, NULL::bigint, 'and a job of the queue is claimed') FROM tap_cc WHERE what = 'after-fail';
SELECT is((SELECT queue FROM coord.job WHERE id = t.id), 'tap-cc', 'of the failed job''s queue')
  FROM tap_cc AS t WHERE what = 'after-fail';
SELECT is((SELECT lease_until FROM coord.job WHERE id = t.id) > now(), true, 'a lease claim by default')
  FROM tap_cc AS t WHERE what = 'after-fail';
-- a stale fail
SELECT results_eq($$SELECT c.state, c.id IS NULL FROM tap_cc AS t,
                          coord.fail_and_claim(t.id, t.token + 1000000, n => 0) AS c WHERE t.what = 'after-fail'$$,
                  $$VALUES (NULL::text, true)$$, 'a stale fail: state NULL, nothing claimed with n => 0');
SELECT is(coord.job_state(id), 'running', 'a stale fail changes nothing') FROM tap_cc WHERE what = 'after-fail';
RESET ROLE;

-- the last attempt: dead; nothing left to claim: one row, NULL job
DO $$ BEGIN PERFORM coord.enqueue('tap-cc-dead', '{}', max_attempts => 1); END $$;
SET ROLE tap_cc_a;
INSERT INTO tap_cc (what, id, token) SELECT 'dying', id, token FROM coord.claim('tap-cc-dead');
SELECT results_eq($$SELECT c.state, c.id FROM tap_cc AS t, coord.fail_and_claim(t.id, t.token, 'no') AS c
                     WHERE t.what = 'dying'$$,
                  $$VALUES ('dead'::text, NULL::bigint)$$, 'the last attempt: dead; an empty queue: one row, no job');
SELECT is(coord.job_state(id), 'dead', 'the job is dead') FROM tap_cc WHERE what = 'dying';
RESET ROLE;

-- host: a host-targeted job only for a claim with that host
DO $$ BEGIN PERFORM coord.enqueue('tap-cc-host', '{"h": 0}');
            PERFORM coord.enqueue('tap-cc-host', '{"h": 1}', host => 'h1', priority => 10); END $$;
SET ROLE tap_cc_a;
INSERT INTO tap_cc (what, id, token) SELECT 'host0', id, token FROM coord.claim('tap-cc-host', host => 'h2');
SELECT is((SELECT payload FROM coord.job WHERE id = t.id), '{"h": 0}'::jsonb, 'host h2 gets the untargeted job')
  FROM tap_cc AS t WHERE what = 'host0';
SELECT is(c.host, 'h1', 'complete_and_claim with host => h1 claims the job for h1')
  FROM tap_cc AS t, coord.complete_and_claim(t.id, t.token, host => 'h1') AS c WHERE t.what = 'host0';
RESET ROLE;

-- pause_key: the key is paused for the claim in the same statement
DO $$ BEGIN PERFORM coord.enqueue('tap-cc-key', '{"k": 1}', limit_key => 'k1', priority => 3);
            PERFORM coord.enqueue('tap-cc-key', '{"k": 2}', limit_key => 'k1', priority => 2);
            PERFORM coord.enqueue('tap-cc-key', '{"k": 3}', limit_key => 'k2', priority => 1); END $$;
SET ROLE tap_cc_a;
INSERT INTO tap_cc (what, id, token) SELECT 'key', id, token FROM coord.claim('tap-cc-key');
SELECT is((SELECT c.payload FROM tap_cc AS t,
                  coord.fail_and_claim(t.id, t.token, '429', retry_after => '1 minute', pause_key => true) AS c
            WHERE t.what = 'key'), '{"k": 3}'::jsonb,
          'fail_and_claim with pause_key: the paused key''s next job is skipped');
RESET ROLE;

-- partition_group: the claim takes only the segments this session owns, as coord.claim does
SELECT is(cardinality(coord.join('tap-cc/g', 'm1')), 1024, 'joined a group: every segment owned');
DO $$ BEGIN PERFORM coord.enqueue('tap-cc-g', pg_catalog.jsonb_build_object('g', i), priority => 10 - i)
          FROM generate_series(1, 2) AS i; END $$;
INSERT INTO tap_cc (what, id, token) SELECT 'group', id, token FROM coord.claim('tap-cc-g', partition_group => 'tap-cc/g');
SELECT is((SELECT c.payload FROM tap_cc AS t,
                  coord.complete_and_claim(t.id, t.token, partition_group => 'tap-cc/g') AS c WHERE t.what = 'group'),
          '{"g": 2}'::jsonb, 'partition_group: the group''s next job claimed');
SELECT throws_ok($$SELECT * FROM tap_cc AS t, coord.complete_and_claim(t.id, t.token, partition_group => 'tap-cc/nosuch') AS c
                    WHERE t.what = 'group'$$, '42704', NULL, 'an unknown partition group: 42704');
SELECT ok(coord.leave('tap-cc/g'), 'left the group');

-- grants: coord_worker only
SELECT ok(has_function_privilege('coord_worker', 'coord.complete_and_claim(bigint, bigint, jsonb, integer, interval, boolean, text, text)', 'EXECUTE'),
          'coord_worker may call complete_and_claim');
SELECT ok(has_function_privilege('coord_worker', 'coord.fail_and_claim(bigint, bigint, text, interval, boolean, integer, interval, boolean, text, text)', 'EXECUTE'),
          'coord_worker may call fail_and_claim');
SET ROLE tap_cc_mon;
SELECT throws_ok($$SELECT * FROM coord.complete_and_claim(1, 1)$$, '42501', NULL, 'coord_monitor may not');
SELECT throws_ok($$SELECT * FROM coord.fail_and_claim(1, 1)$$, '42501', NULL, 'coord_monitor may not fail_and_claim');
RESET ROLE;
SELECT is((SELECT count(*) FROM pg_catalog.pg_proc AS p, pg_catalog.aclexplode(p.proacl) AS a
            WHERE p.proname IN ('complete_and_claim', 'fail_and_claim')
              AND p.pronamespace = 'coord'::regnamespace AND a.grantee = 0), 0::bigint, 'PUBLIC may not');

SELECT * FROM finish();
ROLLBACK;
