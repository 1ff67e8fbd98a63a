-- pgTAP: coord.rerun of an app whose dependent also depends on signals
-- ("@name" in depends, issue 18).  rs-d is daily on the daily rs-a and on
-- the hourly signal rs-feed.  A rerun of rs-a with its downstream resets
-- the rs-d run of a day that had all its signals and leaves alone the day
-- that still lacks one: the first is made again when rs-a is done again,
-- the second only by its last signal, never by the completion or a tick.
-- Then rs-d is redefined to need a daily signal rs-late as well: the reset
-- run waits ("waiting" in coord.runs) through completions and ticks until
-- coord.signal('rs-late', ...) makes it.  Explicit times in April 2025.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = warning;
SET TimeZone = 'UTC';
BEGIN;
SELECT plan(31);

-- completes every claimable job of a queue
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

SELECT lives_ok($$SELECT coord.define_app('rs-a', 'daily', queue => 'rs-aq', catchup_from => '2025-04-01Z')$$,
                'a daily app');
SELECT lives_ok($$SELECT coord.define_app('rs-d', depends => '{"rs-a": "daily", "@rs-feed": "hourly"}',
                                          queue => 'rs-dq', catchup_from => '2025-04-01Z')$$,
                'a daily app on it and on an hourly signal');
SELECT is(coord.tick('2025-04-02 23:00Z'), 2, 'a tick makes the runs of rs-a for 04-01 and 04-02');
SELECT is(pg_temp.drain('rs-aq'), 2, 'they complete');
SELECT is((SELECT count(*)::int FROM coord.runs WHERE app = 'rs-d'), 0, 'no rs-d run without signals');
SELECT is((SELECT count(*)::int FROM generate_series(0, 23) AS h
            WHERE coord.signal('rs-feed', '2025-04-01Z'::timestamptz + h * interval '1 hour',
                               jsonb_build_object('h', h))), 24, 'the 24 hourly signals of 04-01');
SELECT is((SELECT count(*)::int FROM generate_series(0, 22) AS h
            WHERE coord.signal('rs-feed', '2025-04-02Z'::timestamptz + h * interval '1 hour',
                               jsonb_build_object('h', h))), 23, '23 of the 24 of 04-02');
SELECT results_eq($$SELECT period_start FROM coord.runs WHERE app = 'rs-d'$$,
                  $$VALUES ('2025-04-01Z'::timestamptz)$$, 'rs-d has its run of 04-01 only');
SELECT is(pg_temp.drain('rs-dq'), 1, 'which completes');

-- rerun rs-a over both days with its downstream
SELECT is(coord.rerun('rs-a', '2025-04-01Z', '2025-04-03Z'), 3,
          'the rerun resets the two rs-a runs and the one finished rs-d run');
SELECT results_eq($$SELECT app, period_start, state, attempt_no FROM coord.runs WHERE current ORDER BY 1, 2$$,
                  $$VALUES ('rs-a'::text, '2025-04-01Z'::timestamptz, 'ready'::text, 2),
                           ('rs-a', '2025-04-02Z', 'ready', 2),
                           ('rs-d', '2025-04-01Z', 'waiting', 2)$$,
                  'rs-a is made again at once, rs-d of 04-01 waits, 04-02 of rs-d has no run (not reset)');
SELECT is(pg_temp.drain('rs-dq'), 0, 'no rs-d job while rs-a is not done again');
SELECT is(pg_temp.drain('rs-aq'), 2, 'the two rs-a reruns complete');
SELECT results_eq($$SELECT period_start, state, attempt_no FROM coord.runs WHERE app = 'rs-d' AND current ORDER BY 1$$,
                  $$VALUES ('2025-04-01Z'::timestamptz, 'ready'::text, 2)$$,
                  'rs-d of 04-01 (all signals there) is made again by the completion; 04-02 still lacks a signal');
SELECT results_eq($$SELECT jsonb_array_length(j.payload->'upstream'->'@rs-feed'),
                           j.payload->'upstream'->'rs-a' = (SELECT to_jsonb(ARRAY[result]) FROM coord.app_runs
                                                             WHERE app = 'rs-a' AND period_start = '2025-04-01Z')
                      FROM coord.app_runs AS r JOIN coord.job AS j ON j.id = r.job_id
                     WHERE r.app = 'rs-d' AND r.period_start = '2025-04-01Z'$$,
                  $$VALUES (24, true)$$,
                  'its payload has the 24 signals and the result of the new rs-a run');
SELECT is(coord.tick('2025-04-02 23:10Z'), 0, 'a tick makes nothing');
SELECT is((SELECT count(*)::int FROM coord.runs WHERE app = 'rs-d' AND period_start = '2025-04-02Z'), 0,
          'rs-d of 04-02 still waits for its last signal');
SELECT ok(coord.signal('rs-feed', '2025-04-02 23:00Z', '{"h": 23}'), 'the last signal of 04-02');
SELECT results_eq($$SELECT period_start, state, attempt_no FROM coord.runs WHERE app = 'rs-d' AND current ORDER BY 1$$,
                  $$VALUES ('2025-04-01Z'::timestamptz, 'ready'::text, 2), ('2025-04-02Z', 'ready', 1)$$,
                  'it makes rs-d of 04-02, a first attempt');
SELECT is(pg_temp.drain('rs-dq'), 2, 'both rs-d runs complete');

-- a signal added to rs-d's depends after it ran: the reset run waits for it
SELECT lives_ok($$SELECT coord.define_app('rs-d', depends => '{"rs-a": "daily", "@rs-feed": "hourly", "@rs-late": "daily"}',
                                          queue => 'rs-dq', catchup_from => '2025-04-01Z')$$,
                'rs-d now needs a daily signal rs-late too');
SELECT is(coord.rerun('rs-a', '2025-04-01Z', '2025-04-02Z'), 2, 'rerun 04-01 of rs-a: it and rs-d reset');
SELECT is(pg_temp.drain('rs-aq'), 1, 'rs-a of 04-01 completes again');
SELECT results_eq($$SELECT state, attempt_no FROM coord.runs WHERE app = 'rs-d' AND current AND period_start = '2025-04-01Z'$$,
                  $$VALUES ('waiting'::text, 3)$$, 'rs-d of 04-01 waits for rs-late after the completion');
SELECT is(coord.tick('2025-04-02 23:20Z'), 0, 'the tick''s reset periods make nothing without the signal');
SELECT is((SELECT count(*)::int FROM coord.app_reruns WHERE app = 'rs-d'), 1, 'the period stays reset');
SELECT ok(coord.signal('rs-late', '2025-04-01 12:00Z'), 'signal rs-late for 04-01');
SELECT results_eq($$SELECT state, attempt_no FROM coord.runs WHERE app = 'rs-d' AND current AND period_start = '2025-04-01Z'$$,
                  $$VALUES ('ready'::text, 3)$$, 'the signal makes the third attempt');
SELECT is(pg_temp.drain('rs-dq'), 1, 'which completes, once');
SELECT is(coord.tick('2025-04-02 23:30Z'), 0, 'the next tick makes nothing');
SELECT is((SELECT count(*)::int FROM coord.app_reruns), 0, 'and forgets the reset period');

SELECT * FROM finish();
ROLLBACK;
