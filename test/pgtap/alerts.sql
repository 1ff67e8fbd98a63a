-- pgTAP: alerts of app runs (issue 18; src/apps/apps_alerts.c): deadline alerts
-- raised by coord.tick(now) while a run is late, once whatever the number
-- of ticks, cleared when it finishes; timeout alerts (one per run, counting
-- timeouts); dead alerts; the grid's
-- late marker; retention; drop_app; who may read them.  Times are explicit
-- (2024), so nothing depends on the wall clock but the backoffs, which the
-- test moves by hand.  The NOTIFY at commit is iso_apps_alerts.spec's.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = warning;
SET TimeZone = 'UTC';
BEGIN;
SELECT plan(57);

-- surface
SELECT has_table('coord', 'app_alerts', 'table coord.app_alerts');
SELECT has_view('coord', 'alerts', 'view coord.alerts');
SELECT columns_are('coord', 'alerts', ARRAY['app', 'period_start', 'kind', 'raised_at', 'cleared_at', 'detail', 'events']);
SELECT has_index('coord', 'app_alerts', 'app_alerts_open', 'the unique index of open alerts');
SELECT throws_ok($$INSERT INTO coord.app_alerts (app, period_start, kind, raised_at, detail)
                   VALUES ('x', '2024-01-01Z', 'late', now(), '')$$, '23514', NULL, 'kind is deadline, dead or timeout');

-- an hourly app with a deadline of 30 minutes
SELECT lives_ok($$SELECT coord.define_app('al-h', 'hourly', queue => 'al-q', catchup_from => '2024-03-01 10:00Z',
                                          deadline => '30 minutes')$$, 'define an hourly app with a deadline');
SELECT is(coord.tick('2024-03-01 10:05Z'), 1, 'the 10:00 run');
SELECT is(coord.tick('2024-03-01 11:20Z'), 1, '11:20: the 11:00 run, and 10:00 is 20 minutes past its end: not late');
SELECT is((SELECT count(*)::int FROM coord.alerts), 0, 'no alert yet');
SELECT is(coord.tick('2024-03-01 11:30Z'), 0, '11:30: exactly the deadline is not late yet');
SELECT is(coord.tick('2024-03-01 11:31Z'), 1, '11:31: the 10:00 run is late, the tick raises its alert');
SELECT results_eq($$SELECT app, period_start, kind, raised_at, cleared_at, events FROM coord.alerts$$,
                  $$VALUES ('al-h'::text, '2024-03-01 10:00Z'::timestamptz, 'deadline'::text,
                            '2024-03-01 11:31Z'::timestamptz, NULL::timestamptz, 1)$$,
                  'one deadline alert, raised at the tick''s now, open');
SELECT matches((SELECT detail FROM coord.alerts), '^unfinished 00:31:00 after its period ended at 2024-03-01 11:00:00\+00 \(deadline 00:30:00\)$',
               'its detail says how late and the deadline');
SELECT is(coord.tick('2024-03-01 11:40Z') + coord.tick('2024-03-01 11:50Z') + coord.tick('2024-03-01 11:55Z')
          + coord.tick('2024-03-01 11:50Z'), 0, 'four more ticks, one of them back in time: nothing more');
SELECT results_eq($$SELECT count(*)::int, min(raised_at) FROM coord.alerts WHERE kind = 'deadline'$$,
                  $$VALUES (1, '2024-03-01 11:31Z'::timestamptz)$$, 'still one alert, raised at 11:31');
SELECT is((SELECT g FROM coord.grid('2024-03-01 10:00Z', '2024-03-01 12:00Z', ARRAY['al-h']) AS g WHERE g LIKE 'al-h%'),
          'al-h  !o', 'the grid: the late run is !, the other one ready');
SELECT ok((SELECT bool_or(g LIKE '%! late  X dead%') FROM coord.grid('2024-03-01 10:00Z', '2024-03-01 12:00Z') AS g),
          'the legend says what ! means');

-- finishing the late run clears its alert, in the finishing transaction
CREATE TEMP TABLE al_claim AS SELECT id, token, key FROM coord.claim('al-q', 10, '1 hour');
SELECT is((SELECT count(*)::int FROM al_claim), 2, 'both runs claimed');
SELECT is((SELECT g FROM coord.grid('2024-03-01 10:00Z', '2024-03-01 12:00Z', ARRAY['al-h']) AS g WHERE g LIKE 'al-h%'),
          'al-h  !>', 'late while running too');
SELECT ok(coord.complete(c.id, c.token), 'complete the 10:00 run') FROM al_claim AS c WHERE c.key = '2024-03-01-1000-al-h';
SELECT results_eq($$SELECT a.cleared_at IS NOT NULL, a.cleared_at <= r.finished_at
                      FROM coord.alerts AS a JOIN coord.runs AS r USING (app, period_start)$$,
                  $$VALUES (true, true)$$, 'cleared when it finished');
SELECT is((SELECT g FROM coord.grid('2024-03-01 10:00Z', '2024-03-01 12:00Z', ARRAY['al-h']) AS g WHERE g LIKE 'al-h%'),
          'al-h  #>', 'the grid: done');
SELECT is(coord.tick('2024-03-01 12:10Z'), 1, '12:10: the 12:00 run; 11:00 is not late yet, and 10:00 raises nothing again');
SELECT is((SELECT count(*)::int FROM coord.alerts), 1, 'one alert, cleared');
SELECT is(coord.tick('2024-03-01 12:45Z'), 1, '12:45: the running 11:00 run is late');
SELECT results_eq($$SELECT period_start, raised_at, cleared_at IS NULL FROM coord.alerts ORDER BY period_start$$,
                  $$VALUES ('2024-03-01 10:00Z'::timestamptz, '2024-03-01 11:31Z'::timestamptz, false),
                           ('2024-03-01 11:00Z', '2024-03-01 12:45Z', true)$$,
                  'the 11:00 run''s alert, open');
SELECT ok(coord.complete(c.id, c.token), 'complete the 11:00 run') FROM al_claim AS c WHERE c.key = '2024-03-01-1100-al-h';
SELECT is((SELECT count(*)::int FROM coord.alerts WHERE cleared_at IS NULL), 0, 'no open alert');
-- an app without a deadline is never late
SELECT lives_ok($$SELECT coord.define_app('al-nd', 'hourly', queue => 'al-q2', catchup_from => '2024-03-01 10:00Z')$$,
                'an app without a deadline');
SELECT is(coord.tick('2024-03-02 10:00Z') >= 1, true, 'a day on');
SELECT is((SELECT count(*)::int FROM coord.alerts WHERE app = 'al-nd'), 0, 'none of its runs is late');

-- timeouts: one alert per run, counting the timeouts, cleared at its end
SELECT lives_ok($$SELECT coord.define_app('al-t', 'hourly', timeout => '10 minutes', queue => 'al-tq',
                                          catchup_from => '2024-03-01 10:00Z')$$, 'an app with a timeout');
SELECT coord.drop_app('al-nd');
SELECT coord.drop_app('al-h');
SELECT is(coord.tick('2024-03-01 10:05Z'), 1, 'its 10:00 run');
SELECT is((SELECT count(*)::int FROM coord.claim('al-tq', 1, '1 hour')), 1, 'claimed');
SELECT is(coord.tick('2024-03-01 10:06Z'), 0, 'a tick sees the claim');
SELECT is(coord.tick('2024-03-01 10:17Z'), 1, 'eleven minutes on: timed out');
SELECT results_eq($$SELECT app, period_start, kind, raised_at, cleared_at, detail, events FROM coord.alerts$$,
                  $$VALUES ('al-t'::text, '2024-03-01 10:00Z'::timestamptz, 'timeout'::text, '2024-03-01 10:17Z'::timestamptz,
                            NULL::timestamptz, 'timed out: not finished 10 min after its claim'::text, 1)$$,
                  'a timeout alert, raised at the tick''s now');
UPDATE coord.job SET run_at = now() WHERE origin LIKE 'a:al-t:%';
SELECT is((SELECT count(*)::int FROM coord.claim('al-tq', 1, '1 hour')), 1, 'claimed again after its backoff');
SELECT is(coord.tick('2024-03-01 10:18Z') + coord.tick('2024-03-01 10:29Z'), 1, 'and timed out again');
SELECT results_eq($$SELECT count(*)::int, max(events), min(raised_at) FROM coord.alerts$$,
                  $$VALUES (1, 2, '2024-03-01 10:17Z'::timestamptz)$$, 'still one alert, two timeouts');
-- the last attempt times out: the run dies, a dead alert says why
UPDATE coord.job SET run_at = now(), max_attempts = attempt + 1 WHERE origin LIKE 'a:al-t:%';
SELECT is((SELECT count(*)::int FROM coord.claim('al-tq', 1, '1 hour')), 1, 'its last attempt');
SELECT is(coord.tick('2024-03-01 10:30Z') + coord.tick('2024-03-01 10:41Z'), 1, 'timed out on it');
SELECT is((SELECT state FROM coord.runs WHERE app = 'al-t'), 'dead', 'the run is dead');
SELECT results_eq($$SELECT kind, cleared_at IS NULL, detail, events FROM coord.alerts ORDER BY kind$$,
                  $$VALUES ('dead'::text, true, 'died after 3 attempts, the last timed out: not finished 10 min after its claim'::text, 1),
                           ('timeout', false, 'timed out: not finished 10 min after its claim', 2)$$,
                  'a dead alert, open; the timeout alert cleared');
SELECT coord.drop_app('al-t');
SELECT is((SELECT count(*)::int FROM coord.app_alerts), 0, 'drop_app deletes the app''s alerts');

-- a run that dies by failing, retried by hand and done: its dead alert is cleared
SELECT lives_ok($$SELECT coord.define_app('al-d', 'daily', queue => 'al-dq', catchup_from => '2024-03-01Z',
                                          deadline => '1 day')$$, 'a daily app');
SELECT is(coord.tick('2024-03-01 01:00Z'), 1, 'its run');
UPDATE coord.job SET max_attempts = 1 WHERE origin LIKE 'a:al-d:%';
SELECT is((SELECT coord.fail(c.id, c.token, 'boom') FROM coord.claim('al-dq', 1, '1 hour') AS c), 'dead', 'it fails, dead');
SELECT results_eq($$SELECT a.kind, a.cleared_at IS NULL, a.detail, a.raised_at = h.finished_at
                      FROM coord.alerts AS a, coord.app_runs AS r, coord.job_history AS h
                     WHERE r.app = a.app AND r.period_start = a.period_start AND h.id = r.job_id$$,
                  $$VALUES ('dead'::text, true, 'died after 1 attempt'::text, true)$$,
                  'a dead alert, raised when it died, without the error text');
SELECT is(coord.tick('2024-03-03 01:00Z') >= 0, true, 'two days on');
SELECT is((SELECT count(*)::int FROM coord.alerts WHERE kind = 'deadline'), 0, 'a dead run is not late: it finished');
-- (a retry that completes clears the dead alert: test/sql/apps_alerts.sql, outside one
-- transaction, since the claim this transaction holds on the job id would hide it)

-- retention: cleared alerts go with coord.job_history_retention, open ones stay
SELECT coord.drop_app('al-d');
INSERT INTO coord.app_alerts (app, period_start, kind, raised_at, cleared_at, detail) VALUES
  ('al-ghost', '2024-01-01Z', 'deadline', '2024-01-01Z', '2024-01-02Z', 'old, cleared'),
  ('al-ghost', '2024-01-02Z', 'deadline', '2024-01-02Z', NULL, 'old, open'),
  ('al-ghost', '2024-01-09Z', 'deadline', '2024-01-09Z', '2024-01-09Z', 'recent, cleared');
SELECT is(coord.tick('2024-01-10Z'), 0, 'a tick on 2024-01-10');
SELECT is((SELECT string_agg(detail, ', ' ORDER BY period_start) FROM coord.alerts), 'old, open, recent, cleared',
          'cleared more than seven days before its now: purged');
DELETE FROM coord.app_alerts;

-- who reads them
SELECT ok(has_table_privilege('coord_monitor', 'coord.alerts', 'SELECT'), 'coord_monitor reads coord.alerts');
SELECT ok(NOT has_table_privilege('coord_monitor', 'coord.app_alerts', 'SELECT'), 'not the table');
SELECT ok(has_table_privilege('coord_admin', 'coord.alerts', 'SELECT'), 'coord_admin reads coord.alerts');
SELECT ok(NOT has_table_privilege('coord_worker', 'coord.alerts', 'SELECT'), 'coord_worker does not');

SELECT * FROM finish();
ROLLBACK;
