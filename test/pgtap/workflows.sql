-- pgTAP: job dependencies (docs/workflows.md): enqueue's after and
-- on_parent_failure, coord.parent_results and coord.enqueue_flow -- their
-- signatures, behaviour, every error with its SQLSTATE, and their grants
-- (coord_worker; parent_results answers only the claim's own role, as
-- heartbeat does).
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = warning;
BEGIN;
SELECT plan(53);

SELECT function_returns('coord', 'parent_results', ARRAY['bigint', 'bigint'], 'setof record');
SELECT function_returns('coord', 'enqueue_flow', ARRAY['jsonb'], 'jsonb');
SELECT ok(NOT has_function_privilege('public', 'coord.parent_results(bigint, bigint)', 'EXECUTE'),
          'PUBLIC may not call parent_results');
SELECT ok(NOT has_function_privilege('public', 'coord.enqueue_flow(jsonb)', 'EXECUTE'),
          'PUBLIC may not call enqueue_flow');
SELECT ok(NOT has_table_privilege('coord_worker', 'coord.job_wait', 'SELECT'), 'coord.job_wait is the owner''s');
SELECT ok(NOT has_table_privilege('coord_worker', 'coord.job_dep', 'SELECT'), 'coord.job_dep is the owner''s');

-- enqueue with after: the states
CREATE TEMP TABLE ids (name text PRIMARY KEY, id bigint);
GRANT ALL ON ids TO PUBLIC;
INSERT INTO ids SELECT 'p1', coord.enqueue('tw_p', '{"p": 1}');
INSERT INTO ids SELECT 'p2', coord.enqueue('tw_p', '{"p": 2}');
INSERT INTO ids SELECT 'c', coord.enqueue('tw_c', '{}', after => ARRAY[(SELECT id FROM ids WHERE name = 'p1'),
                                                                        (SELECT id FROM ids WHERE name = 'p2'),
                                                                        (SELECT id FROM ids WHERE name = 'p1')]);
SELECT is(coord.job_state((SELECT id FROM ids WHERE name = 'c')), 'waiting', 'a job after live jobs waits');
SELECT is((SELECT state FROM coord.jobs WHERE id = (SELECT id FROM ids WHERE name = 'c')), 'waiting',
          'coord.jobs shows it waiting');
SELECT is((SELECT count(*)::int FROM coord.claim('tw_c')), 0, 'a waiting job is not claimed');
SELECT is((SELECT count(*)::int FROM coord.job_dep WHERE child = (SELECT id FROM ids WHERE name = 'c')), 2,
          'a parent given twice counts once');
SELECT ok(coord.complete(id, token, '{"r": 1}'), 'the first parent completes')
  FROM coord.claim('tw_p') WHERE payload->>'p' = '1';
SELECT is(coord.job_state((SELECT id FROM ids WHERE name = 'c')), 'waiting', 'one parent left: still waiting');
-- coord.job_parents: the edges, ended as each parent ends; monitors read it, workers do not
SELECT results_eq($$SELECT parent, ended FROM coord.job_parents WHERE job = (SELECT id FROM ids WHERE name = 'c') ORDER BY parent$$,
                  $$SELECT id, name = 'p1' FROM ids WHERE name IN ('p1', 'p2') ORDER BY id$$,
                  'coord.job_parents: the waiting job''s two parents, the first ended');
SELECT ok(has_table_privilege('coord_monitor', 'coord.job_parents', 'SELECT'), 'coord_monitor reads coord.job_parents');
SELECT ok(NOT has_table_privilege('coord_worker', 'coord.job_parents', 'SELECT'), 'coord_worker does not');
SELECT ok(NOT has_table_privilege('public', 'coord.job_parents', 'SELECT'), 'PUBLIC does not');
SELECT ok(coord.complete(id, token, '{"r": 2}'), 'the second parent completes') FROM coord.claim('tw_p');
SELECT is(coord.job_state((SELECT id FROM ids WHERE name = 'c')), 'ready', 'the last parent made it ready');
SELECT is((SELECT count(*)::int FROM coord.job_parents WHERE job = (SELECT id FROM ids WHERE name = 'c') AND ended), 2,
          'coord.job_parents: both ended once the job is ready');
INSERT INTO ids SELECT 'after_done', coord.enqueue('tw_c', '{}', after => ARRAY[(SELECT id FROM ids WHERE name = 'p1')]);
SELECT is(coord.job_state((SELECT id FROM ids WHERE name = 'after_done')), 'ready', 'parents already done count as met');

-- parent_results: for the claim's holder only
CREATE ROLE tap_wf_a IN ROLE coord_worker;
CREATE ROLE tap_wf_b IN ROLE coord_worker;
CREATE ROLE tap_wf_mon IN ROLE coord_monitor;
CREATE TEMP TABLE cl (id bigint, token bigint);
GRANT ALL ON cl TO PUBLIC;
SET ROLE tap_wf_a;
INSERT INTO cl SELECT id, token FROM coord.claim('tw_c') WHERE id = (SELECT id FROM ids WHERE name = 'c');
SELECT results_eq($$SELECT parent_id, state, result FROM coord.parent_results((SELECT id FROM cl), (SELECT token FROM cl))$$,
                  $$SELECT id, 'done'::text, jsonb_build_object('r', (id - (SELECT min(id) FROM ids WHERE name IN ('p1', 'p2'))) + 1)
                      FROM ids WHERE name IN ('p1', 'p2') ORDER BY id$$,
                  'the holder reads each parent''s state and result');
SELECT is((SELECT count(*)::int FROM coord.parent_results((SELECT id FROM cl), (SELECT token FROM cl) + 1)), 0,
          'a stale token reads nothing');
RESET ROLE;
SET ROLE tap_wf_b;
SELECT is((SELECT count(*)::int FROM coord.parent_results((SELECT id FROM cl), (SELECT token FROM cl))), 0,
          'another role reads nothing, as with a stale token');
RESET ROLE;
SELECT throws_ok($$SELECT * FROM coord.parent_results(NULL, 1)$$, '22004', 'id must not be null', 'NULL id');
SELECT throws_ok($$SELECT * FROM coord.parent_results(1, NULL)$$, '22004', 'token must not be null', 'NULL token');
SET ROLE tap_wf_mon;
SELECT throws_ok($$SELECT * FROM coord.parent_results(1, 1)$$, '42501', NULL, 'coord_monitor may not call parent_results');
SELECT throws_ok($$SELECT coord.enqueue_flow('[]')$$, '42501', NULL, 'coord_monitor may not call enqueue_flow');
RESET ROLE;

-- enqueue's errors with after
SELECT throws_ok($$SELECT coord.enqueue('tw_e', '{}', after => ARRAY[-5])$$, '23503', 'job -5 does not exist',
                 'an unknown parent is 23503');
SELECT throws_ok($$SELECT coord.enqueue('tw_e', '{}', after => ARRAY[NULL::bigint])$$, '22004', NULL, 'a NULL parent');
SELECT throws_ok($$SELECT coord.enqueue('tw_e', '{}', on_parent_failure => 'maybe')$$, '22023', NULL,
                 'on_parent_failure other than cancel or run');
SELECT throws_ok($$SELECT coord.enqueue('tw_e', '{}', on_parent_failure => NULL)$$, '22004', NULL, 'on_parent_failure NULL');
SELECT throws_ok(format($$SELECT coord.enqueue('tw_e', '{}', key => 'k', after => ARRAY[%s])$$,
                        (SELECT id FROM ids WHERE name = 'p1')), '0A000', NULL, 'a key with after');
SELECT throws_ok($$SELECT coord.enqueue('tw_e', '{}', after => (SELECT array_agg(g) FROM generate_series(1, 10001) g))$$,
                 '54000', NULL, 'more than 10,000 parents');

-- cancel cascades; on_parent_failure run
INSERT INTO ids SELECT 'x', coord.enqueue('tw_x', '{}');
INSERT INTO ids SELECT 'x1', coord.enqueue('tw_x', '{}', after => ARRAY[(SELECT id FROM ids WHERE name = 'x')]);
INSERT INTO ids SELECT 'x2', coord.enqueue('tw_x', '{}', after => ARRAY[(SELECT id FROM ids WHERE name = 'x1')]);
INSERT INTO ids SELECT 'xr', coord.enqueue('tw_x', '{}', after => ARRAY[(SELECT id FROM ids WHERE name = 'x1')],
                                           on_parent_failure => 'run');
SELECT ok(coord.cancel((SELECT id FROM ids WHERE name = 'x')), 'a parent is cancelled');
SELECT results_eq($$SELECT coord.job_state(id) FROM ids WHERE name IN ('x1', 'x2', 'xr') ORDER BY name$$,
                  ARRAY['cancelled', 'cancelled', 'ready'], 'its waiting descendants are cancelled, a run one runs');
INSERT INTO ids SELECT 'late', coord.enqueue('tw_x', '{}', after => ARRAY[(SELECT id FROM ids WHERE name = 'x')]);
SELECT is(coord.job_state((SELECT id FROM ids WHERE name = 'late')), 'cancelled', 'a job after a cancelled job is cancelled');

-- long cascades: a chain of 2,000, a fan-out of 2,000 and a flow chain of
-- 2,000; every descendant ends cancelled, a run job at the chain's end
-- becomes ready (bench/RESULTS.md times 10,000 of each)
DO $$
DECLARE
  prev bigint := coord.enqueue('tw_long', '{}', run_at => now() + interval '1 day');
BEGIN
  INSERT INTO ids VALUES ('chain', prev);
  FOR i IN 1..2000 LOOP
    prev := coord.enqueue('tw_long', '{}', after => ARRAY[prev]);
  END LOOP;
  INSERT INTO ids SELECT 'chain_run', coord.enqueue('tw_long_run', '{}', after => ARRAY[prev], on_parent_failure => 'run');
END $$;
INSERT INTO ids SELECT 'fan', coord.enqueue('tw_fan', '{}', run_at => now() + interval '1 day');
SELECT is((SELECT count(*)::int FROM coord.enqueue_many('tw_fan', (SELECT array_agg('{}'::jsonb) FROM generate_series(1, 2000)),
                                                          after => ARRAY[(SELECT id FROM ids WHERE name = 'fan')])),
          2000, 'a fan-out of 2,000 waits');
INSERT INTO ids SELECT 'flow', (coord.enqueue_flow((SELECT jsonb_agg(jsonb_build_object('name', 'n' || i, 'queue', 'tw_lflow')
    || CASE WHEN i > 1 THEN jsonb_build_object('after', jsonb_build_array('n' || (i - 1))) ELSE '{}' END)
  FROM generate_series(1, 2000) AS i)) ->> 'n1')::bigint;
SELECT ok(coord.cancel((SELECT id FROM ids WHERE name = 'chain')), 'the head of a chain of 2,000 is cancelled');
SELECT results_eq($$SELECT state, count(*)::int FROM coord.jobs WHERE queue = 'tw_long' GROUP BY state$$,
                  $$VALUES ('cancelled', 2001)$$, 'every job of the chain is cancelled');
SELECT is(coord.job_state((SELECT id FROM ids WHERE name = 'chain_run')), 'ready', 'the run job at its end is ready');
SELECT ok(coord.cancel((SELECT id FROM ids WHERE name = 'fan')), 'the parent of 2,000 is cancelled');
SELECT results_eq($$SELECT state, count(*)::int FROM coord.jobs WHERE queue = 'tw_fan' GROUP BY state$$,
                  $$VALUES ('cancelled', 2001)$$, 'every child of the fan-out is cancelled');
SELECT ok(coord.cancel((SELECT id FROM ids WHERE name = 'flow')), 'the root of a flow chain of 2,000 is cancelled');
SELECT results_eq($$SELECT state, count(*)::int FROM coord.jobs WHERE queue = 'tw_lflow' GROUP BY state$$,
                  $$VALUES ('cancelled', 2000)$$, 'every node of the flow is cancelled');
SELECT is((SELECT count(*)::int FROM coord.job_wait WHERE queue IN ('tw_long', 'tw_fan', 'tw_lflow'))
          + (SELECT count(*)::int FROM coord.job_dep AS d JOIN coord.job_history AS h ON h.id = d.child
             WHERE h.queue IN ('tw_long', 'tw_fan', 'tw_lflow')),
          0, 'no waiting row or edge of them is left');

-- enqueue_flow
SELECT is((SELECT count(*)::int FROM jsonb_object_keys(coord.enqueue_flow(
  '[{"name": "a", "queue": "tw_f"}, {"name": "b", "queue": "tw_f", "after": ["a"]},
    {"name": "c", "queue": "tw_f", "after": ["a", "b"], "priority": 3}]'))), 3, 'a flow returns a name for each node');
SELECT results_eq($$SELECT state, count(*)::int FROM coord.jobs WHERE queue = 'tw_f' GROUP BY state ORDER BY state$$,
                  $$VALUES ('ready', 1), ('waiting', 2)$$, 'only the root is ready');
SELECT throws_ok($$SELECT coord.enqueue_flow('[{"name": "a", "queue": "tw_g", "after": ["b"]}, {"name": "b", "queue": "tw_g", "after": ["a"]}]')$$,
                 '22023', NULL, 'a cycle');
SELECT throws_ok($$SELECT coord.enqueue_flow('[{"name": "a", "queue": "tw_g"}, {"name": "z", "queue": "tw_g", "after": ["nope"]}]')$$,
                 '22023', NULL, 'an unknown name');
SELECT is((SELECT count(*)::int FROM coord.jobs WHERE queue = 'tw_g'), 0, 'a refused flow enqueues nothing');

-- a flow's nodes are the caller's: enqueued_by, and the batch's role check
SET ROLE tap_wf_a;
CREATE TEMP TABLE flow_a AS SELECT coord.enqueue_flow('[{"name": "x", "queue": "tw_fa"}]') AS m;
SELECT is((SELECT enqueued_by::text FROM coord.my_jobs WHERE id = (SELECT (m->>'x')::bigint FROM flow_a)),
          'tap_wf_a', 'a flow node is enqueued by the role that called enqueue_flow');
CREATE TEMP TABLE batch_a AS SELECT coord.open_batch('tw_cb') AS b;
GRANT SELECT ON batch_a TO PUBLIC;
RESET ROLE;
SET ROLE tap_wf_b;
SELECT throws_ok(format('SELECT coord.enqueue_flow(''[{"name": "y", "queue": "tw_fb", "batch": %s}]'')',
                        (SELECT b FROM batch_a)),
                 '42501', NULL, 'a flow node cannot join another role''s batch');
RESET ROLE;
SET ROLE tap_wf_a;
SELECT lives_ok(format('SELECT coord.enqueue_flow(''[{"name": "z", "queue": "tw_fb", "batch": %s}]'')',
                       (SELECT b FROM batch_a)),
                'a flow node joins its caller''s own batch');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
