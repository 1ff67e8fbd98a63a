-- pgTAP: a lease claim belongs to the role that made it (issue 13, section 2).
-- Another coord_worker role that knows the job's id and token gets exactly
-- the answers of a stale token from heartbeat, fail, complete and the batch
-- complete, changes nothing, and finds nothing by scanning tokens; the
-- claimant and coord_admin (and the owner) still can.  coord_monitor reads
-- no column that holds a token, a payload, a result or an error.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = warning;
BEGIN;
SELECT plan(33);

CREATE ROLE tap_cr_a IN ROLE coord_worker;
CREATE ROLE tap_cr_b IN ROLE coord_worker;
CREATE ROLE tap_cr_mon IN ROLE coord_monitor;
CREATE ROLE tap_cr_adm IN ROLE coord_admin;
-- what a claim returned, for the test only (the worker roles get it here)
CREATE TABLE tap_cr_tok (who text, id bigint, token bigint);
GRANT ALL ON tap_cr_tok TO PUBLIC;

DO $$ BEGIN PERFORM coord.enqueue('tap-cr', pg_catalog.jsonb_build_object('i', i)) FROM generate_series(1, 6) AS i; END $$;

SET ROLE tap_cr_a;
INSERT INTO tap_cr_tok SELECT 'a1', id, token FROM coord.claim('tap-cr', 1, '1 hour');
RESET ROLE;
SELECT is((SELECT claimed_by::text FROM coord.jobs WHERE id = (SELECT id FROM tap_cr_tok WHERE who = 'a1')),
          'tap_cr_a', 'the claim records the claiming role');
SET ROLE tap_cr_mon;
SELECT is((SELECT state || ':' || claimed_by::text FROM coord.jobs WHERE id = (SELECT id FROM tap_cr_tok WHERE who = 'a1')),
          'running:tap_cr_a', 'monitor: sees the job running, and who claimed it');
RESET ROLE;
CREATE TABLE tap_cr_before AS
  SELECT id, token, attempt, lease, lease_until, run_at, last_error, claimed_at, claimed_by
    FROM coord.job WHERE id = (SELECT id FROM tap_cr_tok WHERE who = 'a1');

-- another worker role with the right id and token: the stale answer
SET ROLE tap_cr_b;
SELECT is(coord.heartbeat(t.id, t.token), NULL, 'other role: heartbeat answers NULL') FROM tap_cr_tok AS t WHERE who = 'a1';
SELECT is(coord.heartbeat(t.id, t.token, '1 day'), NULL, 'other role: heartbeat with a lease answers NULL')
  FROM tap_cr_tok AS t WHERE who = 'a1';
SELECT is(coord.fail(t.id, t.token, 'forged', '1 hour'), NULL, 'other role: fail(retry_after) answers NULL')
  FROM tap_cr_tok AS t WHERE who = 'a1';
SELECT is(coord.fail(t.id, t.token, 'forged'), NULL, 'other role: fail answers NULL') FROM tap_cr_tok AS t WHERE who = 'a1';
SELECT is(coord.complete(t.id, t.token, '{"forged": true}'), false, 'other role: complete answers false')
  FROM tap_cr_tok AS t WHERE who = 'a1';
SELECT is(coord.complete_many(ARRAY[t.id], ARRAY[t.token]), 0, 'other role: batch complete counts it not')
  FROM tap_cr_tok AS t WHERE who = 'a1';
-- the same answers as a stale token's
SELECT is(ARRAY[coord.heartbeat(t.id, t.token)::text, coord.fail(t.id, t.token, 'x'),
                coord.complete(t.id, t.token)::text, coord.complete_many(ARRAY[t.id], ARRAY[t.token])::text],
          ARRAY[coord.heartbeat(t.id, t.token - 1)::text, coord.fail(t.id, t.token - 1, 'x'),
                coord.complete(t.id, t.token - 1)::text, coord.complete_many(ARRAY[t.id], ARRAY[t.token - 1])::text],
          'other role: the right token answers as a stale one')
  FROM tap_cr_tok AS t WHERE who = 'a1';
-- a scan of tokens finds nothing
SELECT is((SELECT count(*)::int FROM tap_cr_tok AS t, generate_series(t.token - 200, t.token + 200) AS g
            WHERE t.who = 'a1' AND coord.heartbeat(t.id, g) IS NOT NULL), 0,
          'other role: a heartbeat scan of 401 tokens finds none');
SELECT is((SELECT count(*)::int FROM tap_cr_tok AS t, generate_series(t.token - 200, t.token + 200) AS g
            WHERE t.who = 'a1' AND coord.fail(t.id, g, 'scan', '1 hour') IS NOT NULL), 0,
          'other role: a fail scan finds none');
SELECT is((SELECT count(*)::int FROM tap_cr_tok AS t, generate_series(t.token - 200, t.token + 200) AS g
            WHERE t.who = 'a1' AND coord.complete(t.id, g)), 0,
          'other role: a complete scan finds none');
SELECT is((SELECT coord.complete_many(pg_catalog.array_agg(t.id), pg_catalog.array_agg(g))
             FROM tap_cr_tok AS t, generate_series(t.token - 200, t.token + 200) AS g WHERE t.who = 'a1'), 0,
          'other role: a batch complete of 401 tokens completes none');
SELECT is(coord.job_state(t.id), 'running', 'other role: job_state says only running') FROM tap_cr_tok AS t WHERE who = 'a1';
RESET ROLE;
SELECT is((SELECT count(*)::int FROM coord.job AS j JOIN tap_cr_before AS b USING (id)
            WHERE (j.token, j.attempt, j.lease, j.lease_until, j.run_at, j.last_error, j.claimed_at, j.claimed_by)
                  IS NOT DISTINCT FROM
                  (b.token, b.attempt, b.lease, b.lease_until, b.run_at, b.last_error, b.claimed_at, b.claimed_by)),
          1, 'nothing the other role called changed the job');
SELECT is((SELECT count(*)::int FROM coord.job_history WHERE queue = 'tap-cr'), 0, 'and nothing finished it');

-- the claimant still can
SET ROLE tap_cr_a;
SELECT isnt(coord.heartbeat(t.id, t.token), NULL, 'claimant: heartbeat') FROM tap_cr_tok AS t WHERE who = 'a1';
SELECT is(coord.complete(t.id, t.token, '{"ok": true}'), true, 'claimant: complete') FROM tap_cr_tok AS t WHERE who = 'a1';
INSERT INTO tap_cr_tok SELECT 'a2', id, token FROM coord.claim('tap-cr', 1);
SELECT is(coord.fail(t.id, t.token, 'again', '0'), 'scheduled', 'claimant: fail') FROM tap_cr_tok AS t WHERE who = 'a2';
INSERT INTO tap_cr_tok SELECT 'a3', id, token FROM coord.claim('tap-cr', 1);
INSERT INTO tap_cr_tok SELECT 'a4', id, token FROM coord.claim('tap-cr', 1);
SELECT is(coord.complete_many(ARRAY[t.id], ARRAY[t.token]), 1, 'claimant: batch complete') FROM tap_cr_tok AS t WHERE who = 'a3';
RESET ROLE;

-- tokens stay strictly increasing, whoever claims
SET ROLE tap_cr_b;
INSERT INTO tap_cr_tok SELECT 'b1', id, token FROM coord.claim('tap-cr', 1);
RESET ROLE;
SELECT ok((SELECT token FROM tap_cr_tok WHERE who = 'b1') > (SELECT max(token) FROM tap_cr_tok WHERE who <> 'b1'),
          'a later claim by another role gets a larger token');

-- coord_admin may act on another role's lease claim, and so may the owner
SET ROLE tap_cr_adm;
SELECT isnt(coord.heartbeat(t.id, t.token), NULL, 'admin: heartbeat of another role''s claim') FROM tap_cr_tok AS t WHERE who = 'a4';
SELECT is(coord.complete(t.id, t.token), true, 'admin: complete of another role''s claim') FROM tap_cr_tok AS t WHERE who = 'a4';
RESET ROLE;
SELECT is(coord.complete(t.id, t.token), true, 'owner: complete of another role''s claim') FROM tap_cr_tok AS t WHERE who = 'b1';

-- coord_monitor: no token, payload, result, last_error or progress in any
-- view but coord.my_jobs (whose rows are the reader's own jobs)
SELECT is((SELECT string_agg(c.relname || '.' || a.attname, ', ' ORDER BY c.relname, a.attname)
             FROM pg_class AS c JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
            WHERE c.relnamespace = 'coord'::regnamespace AND c.relkind = 'v' AND c.relname <> 'my_jobs'
              AND a.attname IN ('token', 'payload', 'result', 'last_error', 'progress')
              AND has_column_privilege('coord_monitor', c.oid, a.attnum, 'SELECT')), NULL,
          'coord_monitor reads no token, payload, result, last_error or progress column of any view but my_jobs');
SELECT is((SELECT string_agg(c.relname || '.' || a.attname, ', ' ORDER BY c.relname, a.attname)
             FROM pg_class AS c JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
            WHERE c.relnamespace = 'coord'::regnamespace AND c.relkind = 'v'
              AND a.attname NOT IN ('token', 'payload', 'result', 'last_error', 'progress')
              AND NOT has_column_privilege('coord_monitor', c.oid, a.attnum, 'SELECT')), NULL,
          'coord_monitor reads every other column of every view');
SELECT is((SELECT string_agg(c.relname, ', ' ORDER BY c.relname) FROM pg_class AS c
            WHERE c.relnamespace = 'coord'::regnamespace AND c.relkind = 'v'
              AND NOT has_table_privilege('coord_admin', c.oid, 'SELECT')), NULL,
          'coord_admin reads every view whole');
SET ROLE tap_cr_mon;
SELECT throws_ok($$SELECT token FROM coord.jobs$$, '42501', NULL, 'monitor: no tokens');
SELECT throws_ok($$SELECT payload FROM coord.jobs$$, '42501', NULL, 'monitor: no payloads');
SELECT throws_ok($$SELECT * FROM coord.jobs$$, '42501', NULL, 'monitor: no SELECT * of coord.jobs');
SELECT throws_ok($$SELECT result, last_error FROM coord.runs$$, '42501', NULL, 'monitor: no results or errors of runs');
SELECT throws_ok($$SELECT payload FROM coord.schedules$$, '42501', NULL, 'monitor: no schedule payloads');
SELECT lives_ok($$SELECT id, queue, state, attempt, lease_until, claimed_at, claimed_by, finished_at FROM coord.jobs$$,
                'monitor: the other columns of coord.jobs');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
