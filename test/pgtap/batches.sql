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
SELECT plan(49);

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

SELECT * FROM finish();
DELETE FROM coord.job WHERE queue IN ('bt_q', 'bt_cb', 'bt_cb2');
DELETE FROM coord.job_history WHERE queue IN ('bt_q', 'bt_cb', 'bt_cb2');
DELETE FROM coord.batch WHERE callback_queue IN ('bt_cb', 'bt_cb2');
DROP TABLE b, j, s, w;
DROP ROLE batch_w1;
DROP ROLE batch_w2;
