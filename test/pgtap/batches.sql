-- pgTAP: batches (issue 27): the API's surface and grants, one session's
-- semantics (counts, the callback's payload, on => 'success', retry), and
-- every error with its SQLSTATE.  Races: test/specs/iso_batch_end.spec; a
-- batch under killed workers: test/crash/batch_kill.sh.  Not one
-- transaction: a transaction's counts reach the batch at its commit, so each
-- statement commits; what it made is deleted at the end.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = error;
SELECT plan(60);

-- The contract's functions, view and privileges.
SELECT function_returns('coord', 'open_batch', ARRAY['text', 'jsonb', 'text'], 'bigint');
SELECT function_returns('coord', 'seal_batch', ARRAY['bigint'], 'boolean');
SELECT has_view('coord', 'batches', 'view coord.batches');
SELECT columns_are('coord', 'batches', ARRAY['batch', 'callback_queue', 'sealed', 'total', 'done', 'dead',
       'cancelled', 'waiting', 'callback_job']);
SELECT ok(has_function_privilege('coord_worker', 'coord.open_batch(text,jsonb,text)', 'EXECUTE'), 'coord_worker may open a batch');
SELECT ok(has_function_privilege('coord_worker', 'coord.seal_batch(bigint)', 'EXECUTE'), 'coord_worker may seal (its own) batches');
SELECT ok(NOT has_function_privilege('coord_monitor', 'coord.open_batch(text,jsonb,text)', 'EXECUTE'), 'coord_monitor may not open a batch');
SELECT ok(NOT has_function_privilege('public', 'coord.open_batch(text,jsonb,text)', 'EXECUTE'), 'PUBLIC may not open a batch');
SELECT ok(NOT has_function_privilege('public', 'coord.seal_batch(bigint)', 'EXECUTE'), 'PUBLIC may not seal a batch');
SELECT ok(has_table_privilege('coord_monitor', 'coord.batches', 'SELECT'), 'coord_monitor reads coord.batches');
SELECT ok(NOT has_table_privilege('coord_worker', 'coord.batches', 'SELECT'), 'coord_worker does not');
SELECT ok(NOT has_table_privilege('coord_monitor', 'coord.batch_tally', 'SELECT'), 'the tallies are granted to no one');
SELECT ok(NOT has_table_privilege('coord_admin', 'coord.batch', 'INSERT'), 'nor the batches table');

-- Arguments.
SELECT throws_ok($$SELECT coord.open_batch(NULL)$$, '22004', 'callback_queue must not be null', 'queue NULL');
SELECT throws_ok($$SELECT coord.open_batch('bt_cb', NULL)$$, '22004', 'callback_payload must not be null', 'payload NULL');
SELECT throws_ok($$SELECT coord.open_batch('bt_cb', '{}', NULL)$$, '22004', 'on must not be null', 'on NULL');
SELECT throws_ok($$SELECT coord.open_batch('bt_cb', '{}', 'sometimes')$$, '22023', 'invalid value for on: "sometimes"', 'on unknown');
SELECT throws_ok($$SELECT coord.open_batch('bt_cb', '[1]')$$, '22023', 'callback_payload must be a JSON object', 'payload an array');
SELECT throws_ok($$SELECT coord.open_batch('bt_cb', '3')$$, '22023', 'callback_payload must be a JSON object', 'payload a scalar');
SELECT throws_ok($$SELECT coord.open_batch('no spaces')$$, '22023', NULL, 'bad queue name');
SELECT throws_ok($$SELECT coord.seal_batch(NULL)$$, '22004', 'batch must not be null', 'seal NULL');
SELECT throws_ok($$SELECT coord.seal_batch(-7)$$, '23503', 'batch -7 does not exist', 'seal unknown');
SELECT throws_ok($$SELECT coord.enqueue('bt_q', batch => -7)$$, '23503', 'batch -7 does not exist', 'enqueue into an unknown batch');
SELECT throws_ok($$SELECT coord.enqueue_many('bt_q', ARRAY['{}'::jsonb], batch => -7)$$, '23503', NULL,
                 'enqueue_many into an unknown batch');

-- A batch: three jobs from two statements, done, dead, cancelled.
CREATE TEMP TABLE b AS SELECT coord.open_batch('bt_cb', '{"report": "r1", "batch": "overwritten"}') AS id;
SELECT is((SELECT sealed FROM coord.batches WHERE batch = (SELECT id FROM b)), false, 'a new batch is open');
CREATE TEMP TABLE j AS SELECT coord.enqueue('bt_q', '{"n": 1}', batch => (SELECT id FROM b)) AS id;
INSERT INTO j SELECT coord.enqueue_many('bt_q', ARRAY['{"n": 2}', '{"n": 3}']::jsonb[], max_attempts => 1,
                                         batch => (SELECT id FROM b));
SELECT is((SELECT total FROM coord.batches WHERE batch = (SELECT id FROM b)), 3::bigint, 'three jobs joined');
SELECT is((SELECT count(*) FROM coord.job WHERE batch = (SELECT id FROM b)), 3::bigint, 'they carry the batch');
SELECT ok((SELECT coord.complete(c.id, c.token) FROM coord.claim('bt_q') AS c), 'the first completes');
SELECT is((SELECT coord.fail(c.id, c.token, 'no') FROM coord.claim('bt_q') AS c), 'dead', 'the second dies');
SELECT is((SELECT (done, dead, cancelled, waiting)::text FROM coord.batches WHERE batch = (SELECT id FROM b)),
          '(1,1,0,1)', 'counted as they end');
SELECT ok(coord.seal_batch((SELECT id FROM b)), 'sealed');
SELECT ok(NOT coord.seal_batch((SELECT id FROM b)), 'sealing again is false');
SELECT throws_ok($$SELECT coord.enqueue('bt_q', batch => (SELECT id FROM b))$$, '55000',
                 NULL, 'no job joins a sealed batch');
SELECT is((SELECT callback_job FROM coord.batches WHERE batch = (SELECT id FROM b)), NULL, 'no callback while a job is left');
SELECT ok(coord.cancel((SELECT min(id) FROM coord.job WHERE batch = (SELECT id FROM b))), 'the last is cancelled');
SELECT is((SELECT payload FROM coord.job WHERE id = (SELECT callback_job FROM coord.batches WHERE batch = (SELECT id FROM b))),
          jsonb_build_object('report', 'r1', 'batch', (SELECT id FROM b), 'done', 1, 'dead', 1, 'cancelled', 1),
          'the callback carries the payload and the counts');
SELECT is((SELECT count(*) FROM coord.job WHERE queue = 'bt_cb'), 1::bigint, 'one callback job');

-- A dead job retried comes back into its (ended) batch, no second callback.
SELECT ok(coord.retry((SELECT id FROM coord.job_history WHERE batch = (SELECT id FROM b) AND state = 'dead')),
          'a dead job of the batch is retried');
SELECT is((SELECT (total, waiting)::text FROM coord.batches WHERE batch = (SELECT id FROM b)), '(4,1)',
          'it counts once more');
SELECT ok((SELECT coord.complete(c.id, c.token) FROM coord.claim('bt_q') AS c), 'and completes');
SELECT is((SELECT count(*) FROM coord.job WHERE queue = 'bt_cb'), 1::bigint, 'still one callback job');

-- on => 'success': no callback when a job did not end done; an empty batch ends at its seal.
CREATE TEMP TABLE s AS SELECT coord.open_batch('bt_cb', '{}', 'success') AS id;
SELECT ok(coord.cancel(coord.enqueue('bt_q', batch => (SELECT id FROM s))), 'a job of a success batch is cancelled');
SELECT ok(coord.seal_batch((SELECT id FROM s)), 'sealed after its last job');
SELECT is((SELECT (sealed, cancelled, waiting, callback_job)::text FROM coord.batches WHERE batch = (SELECT id FROM s)),
          '(t,1,0,)', 'ended without a callback');
SELECT ok(coord.seal_batch(coord.open_batch('bt_cb2')), 'an empty batch');
SELECT is((SELECT payload->>'done' FROM coord.job WHERE queue = 'bt_cb2'), '0', 'its callback at once, with zero counts');

-- Roles: another worker may neither enqueue into nor seal this batch; coord_admin may.
CREATE ROLE batch_w1 IN ROLE coord_worker;
CREATE ROLE batch_w2 IN ROLE coord_worker;
SET ROLE batch_w1;
CREATE TEMP TABLE w AS SELECT coord.open_batch('bt_cb') AS id;
RESET ROLE;
GRANT SELECT ON w TO batch_w2;
SET ROLE batch_w2;
SELECT throws_ok($$SELECT coord.enqueue('bt_q', batch => (SELECT id FROM w))$$, '42501', NULL, 'a stranger may not enqueue into it');
SELECT throws_ok($$SELECT coord.seal_batch((SELECT id FROM w))$$, '42501', NULL, 'nor seal it');
RESET ROLE;
SELECT ok(coord.seal_batch((SELECT id FROM w)), 'the admin (here the owner) may');
-- the callback is the opener's job: it awaits it and reads it in coord.my_jobs
CREATE TEMP TABLE wc AS SELECT callback_job AS id FROM coord.batches WHERE batch = (SELECT id FROM w);
GRANT SELECT ON wc TO batch_w1;
SELECT is((SELECT enqueued_by FROM coord.job WHERE id = (SELECT id FROM wc)), 'batch_w1'::regrole::oid,
          'the callback job is enqueued by the batch''s opener');
SET ROLE batch_w1;
SELECT is((SELECT count(*) FROM coord.my_jobs WHERE id = (SELECT id FROM wc)), 1::bigint,
          'the opener sees its callback in coord.my_jobs');
SELECT is((SELECT (coord.await((SELECT id FROM wc), '0 s')).state), NULL, 'and may await it (not finished yet)');
RESET ROLE;

-- The tick deletes ended batches older than coord.job_history_retention
-- (docs/batches.md); an unsealed, a live, a young one and one with a job
-- retried since its end stay.  A job retried after its batch went still ends.
CREATE TEMP TABLE p (k text PRIMARY KEY, id bigint);
INSERT INTO p SELECT 'old', coord.open_batch('bt_cb3');
INSERT INTO p SELECT 'young', coord.open_batch('bt_cb3');
INSERT INTO p SELECT 'open', coord.open_batch('bt_cb3');
INSERT INTO p SELECT 'live', coord.open_batch('bt_cb3');
INSERT INTO p SELECT 'again', coord.open_batch('bt_cb3');
SELECT coord.enqueue('bt_p', '{}', batch => (SELECT id FROM p WHERE k = 'live'));
SELECT coord.enqueue_many('bt_pd', ARRAY['{}', '{}']::jsonb[], max_attempts => 1, batch => (SELECT id FROM p WHERE k = 'again'));
SELECT coord.fail(c.id, c.token, 'no') FROM coord.claim('bt_pd', 2) AS c;
SELECT coord.seal_batch(id) FROM p WHERE k IN ('old', 'young', 'live', 'again');
UPDATE coord.batch SET opened_at = now() - interval '30 days' WHERE id IN (SELECT id FROM p);
UPDATE coord.batch_end SET ended_at = now() - interval '8 days'
 WHERE batch IN (SELECT id FROM p WHERE k IN ('old', 'again'));
SELECT ok(coord.retry((SELECT min(h.id) FROM coord.job_history AS h WHERE h.queue = 'bt_pd' AND h.state = 'dead')),
          'a dead job of an ended batch is retried');
SELECT coord.tick();
SELECT results_eq($$SELECT k FROM p WHERE id IN (SELECT id FROM coord.batch) ORDER BY k$$,
                  ARRAY['again', 'live', 'open', 'young'], 'the tick deletes the ended batch older than the history retention');
SELECT is((SELECT count(*)::int FROM coord.batch_tally WHERE batch = (SELECT id FROM p WHERE k = 'old'))
          + (SELECT count(*)::int FROM coord.batch_end WHERE batch = (SELECT id FROM p WHERE k = 'old')), 0,
          'with its tallies and end row');
SELECT ok((SELECT coord.complete(c.id, c.token) FROM coord.claim('bt_pd') AS c), 'the retried job completes');
SELECT coord.tick();
SELECT results_eq($$SELECT k FROM p WHERE id IN (SELECT id FROM coord.batch) ORDER BY k$$,
                  ARRAY['live', 'open', 'young'], 'a batch whose retried job ended goes at the next tick');
SELECT ok(coord.retry((SELECT min(h.id) FROM coord.job_history AS h WHERE h.queue = 'bt_pd' AND h.state = 'dead')),
          'a dead job of a deleted batch can still be retried');
SELECT ok((SELECT coord.complete(c.id, c.token) FROM coord.claim('bt_pd') AS c), 'and complete: its batch counts nothing');
SET coord.job_history_retention = 0;
UPDATE coord.batch_end SET ended_at = now() - interval '8 days' WHERE batch = (SELECT id FROM p WHERE k = 'young');
SELECT coord.tick();
SELECT ok((SELECT id FROM p WHERE k = 'young') IN (SELECT id FROM coord.batch), 'coord.job_history_retention 0 keeps them');
RESET coord.job_history_retention;

SELECT * FROM finish();
DELETE FROM coord.job WHERE queue IN ('bt_q', 'bt_cb', 'bt_cb2', 'bt_cb3', 'bt_p', 'bt_pd');
DELETE FROM coord.job_history WHERE queue IN ('bt_q', 'bt_cb', 'bt_cb2', 'bt_cb3', 'bt_p', 'bt_pd');
DELETE FROM coord.batch WHERE callback_queue IN ('bt_cb', 'bt_cb2', 'bt_cb3');
DROP TABLE b, j, s, w, wc, p;
DROP ROLE batch_w1;
DROP ROLE batch_w2;
