-- pgTAP: coord.rerun (issue 18, Reruns and backfills) with explicit tick
-- times: an hourly -> daily -> daily chain in 2025, a day of the hourly app
-- rerun with its downstream (the daily runs redone once, after the hourly
-- reruns are done), the earlier attempts in coord.runs, the counts, the
-- bound of 24 unfinished runs per app for a long range, unfinished runs,
-- errors with their SQLSTATEs, and who may call it.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = warning;
SET TimeZone = 'UTC';
BEGIN;
SELECT plan(60);

-- completes every claimable job of a queue, its result {"v": attempt of its run}
CREATE FUNCTION pg_temp.drain(q text) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  c record;
  n integer := 0;
BEGIN
  LOOP
    FOR c IN SELECT * FROM coord.claim(q, 100, '1 hour') LOOP
      PERFORM coord.complete(c.id, c.token, pg_catalog.jsonb_build_object('job', c.id));
      n := n + 1;
    END LOOP;
    EXIT WHEN NOT FOUND;
  END LOOP;
  RETURN n;
END $$;

-- surface
SELECT function_returns('coord', 'rerun', ARRAY['text', 'timestamp with time zone', 'timestamp with time zone', 'boolean'],
       'integer');
SELECT columns_are('coord', 'runs', ARRAY['app', 'period_start', 'period_end', 'host', 'state', 'attempts', 'job_id',
       'created_at', 'finished_at', 'result', 'queue', 'last_error', 'app_error', 'attempt_no', 'current']);
SELECT has_table('coord', 'app_run_history', 'earlier attempts are kept in coord.app_run_history');

-- the chain: rr-h hourly from 2025-03-03, rr-d daily on it, rr-e daily on rr-d
SELECT lives_ok($$SELECT coord.define_app('rr-h', 'hourly', queue => 'rr-hq', catchup_from => '2025-03-03 00:00Z')$$,
                'define the hourly app');
SELECT lives_ok($$SELECT coord.define_app('rr-d', depends => '{"rr-h": "daily"}', queue => 'rr-dq',
                                          catchup_from => '2025-03-03 00:00Z')$$,
                'define a daily app on it');
SELECT lives_ok($$SELECT coord.define_app('rr-e', depends => '{"rr-d": "daily"}', queue => 'rr-eq',
                                          catchup_from => '2025-03-03 00:00Z')$$,
                'define a daily app on that');
SELECT is(coord.tick('2025-03-04 00:05Z'), 24, 'the first tick makes 24 hourly runs (catch-up bound)');
SELECT is(pg_temp.drain('rr-hq'), 24, 'the 24 hours of 2025-03-03 complete');
SELECT is(pg_temp.drain('rr-dq'), 1, 'the daily run of 2025-03-03 completes');
SELECT is(pg_temp.drain('rr-eq'), 1, 'and its downstream daily run');
SELECT is(coord.tick('2025-03-04 00:10Z'), 1, 'a tick makes the hourly run of 2025-03-04 00:00');
CREATE TEMP TABLE rr_first AS SELECT app, period_start, result FROM coord.runs WHERE state = 'done';
SELECT is((SELECT count(*)::int FROM rr_first), 26, '26 done runs before the rerun');

-- errors and unfinished runs
SELECT throws_ok($$SELECT coord.rerun('rr-nope', '2025-03-03', '2025-03-04')$$, '42704', 'app "rr-nope" does not exist',
                 'unknown app');
SELECT throws_ok($$SELECT coord.rerun(NULL, '2025-03-03', '2025-03-04')$$, '22004', NULL, 'app NULL');
SELECT throws_ok($$SELECT coord.rerun('rr-h', NULL, '2025-03-04')$$, '22004', 'from must not be null', 'from NULL');
SELECT throws_ok($$SELECT coord.rerun('rr-h', '2025-03-03', NULL)$$, '22004', 'to must not be null', 'to NULL');
SELECT throws_ok($$SELECT coord.rerun('rr-h', '2025-03-03', '2025-03-04', NULL)$$, '22004', 'downstream must not be null',
                 'downstream NULL');
SELECT throws_ok($$SELECT coord.rerun('rr-h', '2025-03-04', '2025-03-04')$$, '22023', 'from must be earlier than to',
                 'from = to');
SELECT throws_ok($$SELECT coord.rerun('rr-h', '2025-03-05', '2025-03-04')$$, '22023', 'from must be earlier than to',
                 'from > to');
SELECT throws_ok($$SELECT coord.rerun('rr-h', '-infinity', '2025-03-04')$$, '22023',
                 'from and to of a rerun must be finite times', 'from infinite');
SELECT throws_ok($$SELECT coord.rerun('rr-h', '2025-03-03', 'infinity')$$, '22023',
                 'from and to of a rerun must be finite times', 'to infinite');
SELECT is(coord.rerun('rr-h', '2025-03-04 00:00Z', '2025-03-04 01:00Z'), 0, 'an unfinished run is skipped');
SELECT is(coord.rerun('rr-h', '2020-01-01', '2020-01-02'), 0, 'a range without runs reruns nothing');

-- rerun 2025-03-03 of rr-h with its downstream: 24 + 1 + 1
SELECT is(coord.rerun('rr-h', '2025-03-03 00:00Z', '2025-03-04 00:00Z'), 26, 'the rerun resets 26 runs');
SELECT results_eq($$SELECT app, state, attempt_no, count(*)::int FROM coord.runs
                     WHERE current AND period_start < '2025-03-04' GROUP BY 1, 2, 3 ORDER BY 1, 2$$,
                  $$VALUES ('rr-d'::text, 'waiting'::text, 2, 1), ('rr-e', 'waiting', 2, 1),
                           ('rr-h', 'ready', 2, 23), ('rr-h', 'waiting', 2, 1)$$,
                  'hourly: 23 new runs at once (24 unfinished with 00:00 of the 4th), the 24th and the dailies wait');
SELECT results_eq($$SELECT r.app, r.period_start, r.state, r.attempt_no, r.result FROM coord.runs AS r
                     WHERE NOT r.current ORDER BY 1, 2$$,
                  $$SELECT app, period_start, 'done'::text, 1, result FROM rr_first WHERE period_start < '2025-03-04'
                     ORDER BY 1, 2$$,
                  'the earlier attempts stay in coord.runs with their results, attempt 1, current false');
SELECT is(coord.tick('2025-03-04 00:15Z'), 0, 'no tick goes past the bound');
SELECT is(pg_temp.drain('rr-dq'), 0, 'no daily run while the hours are not done again');
SELECT is(pg_temp.drain('rr-hq'), 24, 'the 23 reruns and 00:00 of the 4th complete');
SELECT is((SELECT state FROM coord.runs WHERE app = 'rr-d' AND current AND period_start = '2025-03-03'), 'waiting',
          'the daily run still waits for the 24th hour');
SELECT is(coord.tick('2025-03-04 00:20Z'), 1, 'the next tick makes the rerun of 23:00');
SELECT is(pg_temp.drain('rr-hq'), 1, 'which completes');
SELECT results_eq($$SELECT state, attempt_no FROM coord.runs WHERE app = 'rr-d' AND current AND period_start = '2025-03-03'$$,
                  $$VALUES ('ready'::text, 2)$$, 'the daily run is made again once its last upstream is done again');
SELECT ok((SELECT job_id FROM coord.app_runs WHERE app = 'rr-d' AND period_start = '2025-03-03')
          > (SELECT max(job_id) FROM coord.app_runs WHERE app = 'rr-h' AND period_start < '2025-03-04'),
          'its job came after every hourly rerun''s (made by the completion of the last)');
SELECT throws_ok($$SELECT coord.rerun('rr-h', '2025-03-03 05:00Z', '2025-03-03 06:00Z')$$, '55000', NULL,
                 'a rerun whose downstream run is unfinished is refused');
SELECT is(pg_temp.drain('rr-eq'), 0, 'the second daily waits for the first');
SELECT is(pg_temp.drain('rr-dq'), 1, 'the daily rerun completes');
SELECT is(pg_temp.drain('rr-eq'), 1, 'then the second daily is redone');
SELECT is(pg_temp.drain('rr-dq'), 0, 'and nothing runs twice');
SELECT is(coord.tick('2025-03-04 00:25Z'), 0, 'nor does a tick make anything again');
SELECT results_eq($$SELECT app, count(*)::int, count(*) FILTER (WHERE current)::int, max(attempt_no)
                     FROM coord.runs WHERE period_start >= '2025-03-03' AND period_start < '2025-03-04' GROUP BY 1 ORDER BY 1$$,
                  $$VALUES ('rr-d'::text, 2, 1, 2), ('rr-e', 2, 1, 2), ('rr-h', 48, 24, 2)$$,
                  'each period has its earlier and its current attempt, no more');
SELECT is((SELECT count(*)::int FROM coord.app_reruns), 0, 'no reset period is left');

-- downstream => false: only the app itself
SELECT is(coord.rerun('rr-d', '2025-03-03', '2025-03-04', downstream => false), 1, 'rerun the daily alone');
SELECT is(pg_temp.drain('rr-dq'), 1, 'it runs again');
SELECT is((SELECT max(attempt_no) FROM coord.runs WHERE app = 'rr-e'), 2, 'its downstream is left alone');

-- a long range: at most 24 unfinished runs at a time
SELECT lives_ok($$SELECT coord.define_app('rr-y', 'hourly', queue => 'rr-yq', catchup_from => '2025-01-01 00:00Z')$$,
                'an hourly app from 2025-01-01');
DO $$
BEGIN
  FOR i IN 1..10 LOOP
    PERFORM coord.tick('2025-03-04 00:30Z');
    PERFORM pg_temp.drain('rr-yq');
  END LOOP;
END $$;
SELECT is((SELECT count(*)::int FROM coord.runs WHERE app = 'rr-y' AND state = 'done'), 240, '240 done hourly runs');
SELECT is(coord.rerun('rr-y', '2025-01-01', '2025-01-11'), 240, 'rerun ten days: 240 runs reset');
SELECT results_eq($$SELECT state, count(*)::int FROM coord.runs WHERE app = 'rr-y' AND current GROUP BY 1 ORDER BY 1$$,
                  $$VALUES ('ready'::text, 24), ('waiting', 216)$$, 'only 24 are in the queue, 216 wait');
SELECT is(coord.tick('2025-03-04 00:35Z'), 0, 'a tick adds none while 24 are unfinished');
SELECT is(pg_temp.drain('rr-yq'), 24, 'the 24 complete');
SELECT is(coord.tick('2025-03-04 00:40Z'), 24, 'the next tick makes the next 24, in period order');
SELECT is((SELECT max(period_start) FROM coord.runs WHERE app = 'rr-y' AND current AND state = 'ready'),
          '2025-01-02 23:00Z'::timestamptz, 'the second day');

-- catchup_from before the first run is the backfill; rerun covers what ran
SELECT lives_ok($$SELECT coord.define_app('rr-b', 'daily', queue => 'rr-bq', catchup_from => '2025-02-20 00:00Z')$$,
                'a daily app defined with catchup_from');
SELECT is(coord.tick('2025-03-04 00:45Z'), 13, 'its first tick backfills 2025-02-20 to 2025-03-04 (and nothing else is due)');

-- who may call it
SELECT ok(has_function_privilege('coord_admin', 'coord.rerun(text, timestamptz, timestamptz, boolean)', 'EXECUTE'),
          'coord_admin may rerun');
SELECT ok(NOT has_function_privilege('coord_worker', 'coord.rerun(text, timestamptz, timestamptz, boolean)', 'EXECUTE'),
          'coord_worker may not');
SELECT ok(NOT has_function_privilege('coord_monitor', 'coord.rerun(text, timestamptz, timestamptz, boolean)', 'EXECUTE'),
          'coord_monitor may not');
SELECT ok(NOT has_function_privilege('public', 'coord.rerun(text, timestamptz, timestamptz, boolean)', 'EXECUTE'),
          'PUBLIC may not');
SELECT ok(has_column_privilege('coord_monitor', 'coord.runs', 'attempt_no', 'SELECT'), 'coord_monitor reads attempt_no');

SELECT * FROM finish();
ROLLBACK;
