-- pgTAP: coord.metrics (issue 29): the surface and grants, the values for
-- jobs this test makes, and counters that never go back: across a fold by
-- coord.tick, a purge of the history (folded rows and rows of the tail), a
-- retry of a dead job, and jobs removed unclaimed with their schedule.
-- The restart is test/crash/metrics_restart.sh.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = warning;
BEGIN;
SELECT plan(24);

SELECT has_view('coord', 'metrics', 'coord.metrics exists');
SELECT columns_are('coord', 'metrics', ARRAY['metric', 'labels', 'value', 'kind', 'help']);
SELECT ok(has_table_privilege('coord_monitor', 'coord.metrics', 'SELECT'), 'coord_monitor reads coord.metrics');
SELECT ok(has_table_privilege('coord_admin', 'coord.metrics', 'SELECT'), 'coord_admin reads coord.metrics');
SELECT ok(NOT has_table_privilege('coord_worker', 'coord.metrics', 'SELECT'), 'coord_worker does not');
SELECT ok(has_function_privilege('coord_monitor', 'coord.metrics_queues()', 'EXECUTE'), 'the view''s function for coord_monitor');
SELECT ok(NOT has_function_privilege('coord_monitor', 'coord.metrics_purged()', 'EXECUTE'), 'the trigger function for nobody');

CREATE FUNCTION pg_temp.m(metric text, queue text) RETURNS float8 LANGUAGE sql AS
  $$SELECT value FROM coord.metrics WHERE metric = $1 AND labels = jsonb_build_object('queue', $2)$$;

-- a monitor reads it (as a plain member of coord_monitor)
CREATE ROLE tap_metrics_monitor IN ROLE coord_monitor;
SELECT coord.enqueue('tap-m') FROM generate_series(1, 4);
SELECT coord.enqueue('tap-m', run_at => now() + interval '1 hour');
SELECT coord.enqueue('tap-m-dead', max_attempts => 1);
SET ROLE tap_metrics_monitor;
SELECT is((SELECT count(*)::int FROM coord.metrics WHERE labels->>'queue' = 'tap-m'), 10, 'a monitor reads the ten series of a queue');
RESET ROLE;

CREATE TEMP TABLE c AS SELECT * FROM coord.claim('tap-m', 2);
SELECT coord.complete(id, token) FROM c LIMIT 1;
SELECT coord.fail(id, token, 'boom') FROM coord.claim('tap-m-dead');
SELECT is(pg_temp.m('coord_queue_ready', 'tap-m'), 2::float8, 'ready');
SELECT is(pg_temp.m('coord_queue_scheduled', 'tap-m'), 1::float8, 'scheduled');
SELECT is(pg_temp.m('coord_queue_running', 'tap-m'), 1::float8, 'running');
SELECT is(pg_temp.m('coord_jobs_enqueued_total', 'tap-m'), 5::float8, 'enqueued');
SELECT is(pg_temp.m('coord_jobs_completed_total', 'tap-m'), 1::float8, 'completed');
SELECT is(pg_temp.m('coord_queue_dead', 'tap-m-dead'), 1::float8, 'dead now');
SELECT is(pg_temp.m('coord_jobs_failed_total', 'tap-m-dead'), 1::float8, 'failed');
SELECT ok(pg_temp.m('coord_queue_oldest_ready_age_seconds', 'tap-m') >= 0, 'oldest ready age');

-- the completion made an hour old: the tick folds it into the totals.  The
-- fold's start first put two hours back: a tick that committed earlier in
-- this database (pg_cron's, while a slow run lasts a minute) may have moved
-- it past the hour-old row, which would then be in neither the fold nor the
-- tail (this transaction rolls back: the other queues' counts do not matter)
UPDATE coord.metrics_state SET folded_to = now() - interval '2 hours';
UPDATE coord.job_history SET finished_at = finished_at - interval '1 hour' WHERE queue = 'tap-m';
SELECT coord.tick();
SELECT is((SELECT done FROM coord.queue_totals WHERE queue = 'tap-m'), 1::bigint, 'the tick folded the old completion');
-- a purge of folded rows, then of the tail: the counters stay
SELECT coord.purge_jobs('30 minutes');
SELECT is(pg_temp.m('coord_jobs_completed_total', 'tap-m'), 1::float8, 'completed stays after a purge of folded rows');
SELECT coord.complete(id, token) FROM c OFFSET 1;
DELETE FROM coord.job_history WHERE queue = 'tap-m';  -- as a purge would (its now() is this test's start)
SELECT is(pg_temp.m('coord_jobs_completed_total', 'tap-m'), 2::float8, 'completed stays after a purge of the tail');
SELECT is(pg_temp.m('coord_jobs_enqueued_total', 'tap-m'), 5::float8, 'enqueued stays after the purges');
-- a retry: the death stays counted, the job counts as enqueued again
SELECT coord.enqueue('tap-m-dead', max_attempts => 1);
SELECT coord.fail(id, token, 'boom') FROM coord.claim('tap-m-dead');
SELECT coord.retry((SELECT id FROM coord.job_history WHERE queue = 'tap-m-dead' AND state = 'dead' LIMIT 1));
SELECT is(pg_temp.m('coord_jobs_failed_total', 'tap-m-dead'), 2::float8, 'failed stays after a retry');
SELECT is(pg_temp.m('coord_jobs_enqueued_total', 'tap-m-dead'), 3::float8, 'a retry counts as an enqueue');
-- a schedule's unclaimed instance removed with it: counted as cancelled
SELECT coord.schedule('tap-m-sched', 'tap-m-s', every => interval '1 hour');
SELECT coord.unschedule('tap-m-sched');
SELECT is(pg_temp.m('coord_jobs_cancelled_total', 'tap-m-s'), 1::float8, 'a removed instance counts as cancelled');
SELECT is(pg_temp.m('coord_jobs_enqueued_total', 'tap-m-s'), 1::float8, 'and stays enqueued');

SELECT * FROM finish();
ROLLBACK;
