-- pgTAP: trace context (issue 29).  coord.enqueue(..., trace) stores a W3C
-- traceparent (checked: 22023 for a bad one), every claim returns it
-- (coord.claim, complete_and_claim, fail_and_claim), coord.jobs and
-- coord.my_jobs show it, it survives a retry and a wait (after), and
-- enqueue_many and enqueue_flow take it too; calls without it work as before.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = warning;
BEGIN;
SELECT plan(44);

\set tp '''00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'''
\set tp2 '''00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00'''

SELECT is((SELECT a.atttypid::regtype::text FROM pg_attribute AS a
            WHERE a.attrelid = 'coord.claimed_job'::regclass AND a.attname = 'trace'), 'text',
          'coord.claimed_job has a trace column');
SELECT is((SELECT max(a.attnum) FROM pg_attribute AS a WHERE a.attrelid = 'coord.claimed_job'::regclass),
          (SELECT a.attnum FROM pg_attribute AS a WHERE a.attrelid = 'coord.claimed_job'::regclass AND a.attname = 'trace'),
          'trace is claimed_job''s last column: callers that read columns by position keep working');
SELECT has_column('coord', 'jobs', 'trace', 'coord.jobs shows the trace');
SELECT has_column('coord', 'my_jobs', 'trace', 'coord.my_jobs shows the trace');
SELECT is((SELECT pg_get_expr(p.proargdefaults, 0) LIKE '%NULL::text' FROM pg_proc AS p
            WHERE p.oid = 'coord.enqueue'::regproc), true, 'enqueue''s trace defaults to NULL');

-- errors: 22023, with what is wrong
SELECT throws_ok($$SELECT coord.enqueue('tq', trace => 'abc')$$, '22023', 'invalid trace', 'a short trace');
SELECT throws_ok($$SELECT coord.enqueue('tq', trace => '')$$, '22023', 'invalid trace', 'an empty trace');
SELECT throws_ok($$SELECT coord.enqueue('tq', trace => '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01')$$,
                 '22023', 'invalid trace "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"', 'uppercase hex');
SELECT throws_ok($$SELECT coord.enqueue('tq', trace => '00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')$$,
                 '22023', NULL, 'a separator that is not a dash');
SELECT throws_ok($$SELECT coord.enqueue('tq', trace => '00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01')$$,
                 '22023', NULL, 'a trace id that is not hex');
SELECT throws_ok($$SELECT coord.enqueue('tq', trace => '00-00000000000000000000000000000000-00f067aa0ba902b7-01')$$,
                 '22023', NULL, 'an all-zero trace id');
SELECT throws_ok($$SELECT coord.enqueue('tq', trace => '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01')$$,
                 '22023', NULL, 'an all-zero parent id');
SELECT throws_ok($$SELECT coord.enqueue('tq', trace => 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')$$,
                 '22023', NULL, 'version ff');
SELECT throws_ok($$SELECT coord.enqueue('tq', trace => '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x')$$,
                 '22023', NULL, 'flags that are not hex');
SELECT throws_ok($$SELECT coord.enqueue('tq', trace => '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra')$$,
                 '22023', NULL, 'a trace with more after the flags');
SELECT throws_ok($$SELECT coord.enqueue_many('tq', ARRAY['{}'::jsonb], trace => 'nope')$$,
                 '22023', 'invalid trace', 'enqueue_many checks its trace');
SELECT throws_ok($$SELECT coord.enqueue_flow('[{"name": "a", "queue": "tq", "trace": "nope"}]')$$,
                 '22023', 'invalid trace', 'enqueue_flow checks a node''s trace');
-- the detail says what is wrong
CREATE FUNCTION pg_temp.detail(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE d text;
BEGIN
  EXECUTE q;
  RETURN NULL;
EXCEPTION WHEN invalid_parameter_value THEN
  GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
  RETURN d;
END $$;
SELECT is(pg_temp.detail($$SELECT coord.enqueue('tq', trace => '00-00000000000000000000000000000000-00f067aa0ba902b7-01')$$),
          'The trace id must not be all zeros.', 'the detail of an all-zero trace id');
SELECT is(pg_temp.detail($$SELECT coord.enqueue('tq', trace => 'abc')$$),
          'A W3C traceparent has 55 characters (ASCII); this one has 3 bytes.', 'the detail of a short trace');
SELECT is((SELECT count(*)::integer FROM coord.jobs WHERE queue = 'tq'), 0, 'nothing enqueued by the failed calls');

-- round trip: enqueue -> claim
SELECT ok(coord.enqueue('tq', '{"n": 1}', trace => :tp) > 0, 'enqueue with a trace');
SELECT ok(coord.enqueue('tq', '{"n": 2}') > 0, 'enqueue without one (the 0.3.0 call)');
SELECT ok(coord.enqueue('tq', '{"n": 3}', NULL, 0, NULL, NULL, 25, NULL, NULL, 100, NULL, NULL, 'cancel', NULL) > 0,
          'the 0.4.0 positional call without trace still resolves');
SELECT is((SELECT trace FROM coord.jobs WHERE queue = 'tq' AND payload->>'n' = '1'), :tp, 'coord.jobs shows the trace');
SELECT is((SELECT trace FROM coord.my_jobs WHERE queue = 'tq' AND payload->>'n' = '1'), :tp, 'coord.my_jobs shows the trace');
SELECT results_eq($$SELECT payload->>'n', trace FROM coord.claim('tq', 2) ORDER BY 1$$,
                  $$VALUES ('1', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'), ('2', NULL)$$, 'coord.claim returns each job''s trace (NULL when none)');

-- complete_and_claim and fail_and_claim return the next job's trace
SELECT ok(coord.enqueue('tq', '{"n": 4}', trace => :tp2) > 0, 'another traced job');
CREATE TEMP TABLE held AS SELECT id, token FROM coord.jobs WHERE queue = 'tq' AND state = 'running' ORDER BY id;
SELECT results_eq($$SELECT c.completed, c.payload->>'n', c.trace
                      FROM held AS h, coord.complete_and_claim(h.id, h.token) AS c WHERE h.id = (SELECT min(id) FROM held)$$,
                  $$VALUES (true, '3', NULL::text)$$, 'complete_and_claim: the next job without a trace');
SELECT results_eq($$SELECT c.state, c.payload->>'n', c.trace
                      FROM held AS h, coord.fail_and_claim(h.id, h.token, 'boom') AS c WHERE h.id = (SELECT max(id) FROM held)$$,
                  $$VALUES ('scheduled', '4', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00')$$, 'fail_and_claim returns the claimed job''s trace');
SELECT is((SELECT trace FROM coord.jobs WHERE queue = 'tq' AND payload->>'n' = '1'), :tp,
          'a completed job keeps its trace in the history');
SELECT is((SELECT trace FROM coord.jobs WHERE queue = 'tq' AND payload->>'n' = '2'), NULL,
          'a failed job without one has none');
SELECT results_eq($$SELECT c.completed, c.trace FROM coord.jobs AS j, coord.complete_and_claim(j.id, j.token, n => 0) AS c
                     WHERE j.queue = 'tq' AND j.payload->>'n' = '4'$$,
                  $$VALUES (true, NULL::text)$$, 'nothing claimed: the trace column is NULL');

-- a retried dead job keeps it
SELECT ok(coord.enqueue('tq-dead', '{}', max_attempts => 1, trace => :tp) > 0, 'a job that will die');
SELECT is((SELECT coord.fail(id, token, 'dead') FROM coord.claim('tq-dead')), 'dead', 'it dies');
SELECT is((SELECT trace FROM coord.jobs WHERE queue = 'tq-dead'), :tp, 'the dead job shows its trace');
SELECT ok((SELECT coord.retry(id) FROM coord.jobs WHERE queue = 'tq-dead'), 'retried');
SELECT is((SELECT trace FROM coord.claim('tq-dead')), :tp, 'the retried job''s claim returns its trace');

-- enqueue_many, and a job that waits (after) before it runs
SELECT is((SELECT count(*)::integer FROM coord.enqueue_many('tq-many', ARRAY['{}'::jsonb, '{}'], trace => :tp2)), 2,
          'enqueue_many with a trace');
SELECT is((SELECT array_agg(trace) FROM coord.claim('tq-many', 5)), ARRAY[:tp2, :tp2],
          'each job of enqueue_many returns it');
SELECT ok(coord.enqueue_flow(pg_catalog.jsonb_build_array(
            pg_catalog.jsonb_build_object('name', 'p', 'queue', 'tq-flow-p'),
            pg_catalog.jsonb_build_object('name', 'c', 'queue', 'tq-flow-c', 'after', '["p"]'::jsonb, 'trace', :tp)))
          ? 'c', 'enqueue_flow with a traced node');
SELECT is((SELECT state || ' ' || trace FROM coord.jobs WHERE queue = 'tq-flow-c'), 'waiting ' || :tp,
          'the waiting child shows its trace');
SELECT ok((SELECT coord.complete(id, token) FROM coord.claim('tq-flow-p')), 'its parent completes');
SELECT is((SELECT trace FROM coord.claim('tq-flow-c')), :tp, 'the released child''s claim returns its trace');

-- coord_monitor reads the trace (an id, not data: payload and result stay withheld)
CREATE ROLE trace_monitor IN ROLE coord_monitor;
SET LOCAL ROLE trace_monitor;
SELECT lives_ok($$SELECT id, trace FROM coord.jobs$$, 'coord_monitor may read coord.jobs.trace');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
