-- pgTAP: the app API's surface (coord.define_app, drop_app, grid, the
-- coord.runs view), its behaviour with explicit times (catchup_from and
-- coord.tick(now) in 2024), every error with its SQLSTATE, and who may call
-- what.  Nothing depends on the wall clock.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = warning;
SET TimeZone = 'UTC';
BEGIN;
SELECT plan(91);

-- surface
SELECT function_returns('coord', 'define_app',
       ARRAY['text', 'text', 'jsonb', 'interval', 'text', 'text', 'timestamp with time zone', 'jsonb', 'text', 'interval'],
       'void');
SELECT function_returns('coord', 'drop_app', ARRAY['text'], 'boolean');
SELECT function_returns('coord', 'grid', ARRAY['timestamp with time zone', 'timestamp with time zone', 'text[]'], 'setof text');
SELECT has_view('coord', 'runs', 'view coord.runs');
SELECT columns_are('coord', 'runs', ARRAY['app', 'period_start', 'period_end', 'host', 'state', 'attempts', 'job_id',
       'created_at', 'finished_at', 'result', 'queue', 'last_error', 'app_error', 'attempt_no', 'current']);
SELECT is((SELECT string_agg(proname || ':' || provolatile::text || proparallel::text, ' ' ORDER BY proname) FROM pg_proc
            WHERE pronamespace = 'coord'::regnamespace AND proname IN ('define_app', 'drop_app', 'grid')),
          'define_app:vu drop_app:vu grid:vu', 'define_app, drop_app and grid are volatile and parallel unsafe');

-- an hourly app from a catch-up time: a tick makes a run per period begun
SELECT lives_ok($$SELECT coord.define_app('tap-up', 'hourly', queue => 'tap-aq', catchup_from => '2024-01-01 10:30Z',
                                          conf => '{"k": 1}')$$, 'define an hourly app');
SELECT results_eq($$SELECT starts, grain, depends, timeout, host, queue, conf, first_period, next_period, last_error
                      FROM coord.app_defs WHERE name = 'tap-up'$$,
                  $$VALUES ('hourly'::text, 'hourly'::text, '{}'::jsonb, NULL::interval, NULL::text, 'tap-aq'::text,
                            '{"k": 1}'::jsonb, '2024-01-01 10:00Z'::timestamptz, '2024-01-01 10:00Z'::timestamptz, NULL::text)$$,
                  'the definition: runs from the period of catchup_from');
SELECT is((SELECT count(*)::int FROM coord.runs WHERE app = 'tap-up'), 0, 'no run before a tick');
SELECT is(coord.tick('2024-01-01 12:05Z'), 3, 'a tick at 12:05 makes the runs of 10:00, 11:00 and 12:00');
SELECT results_eq($$SELECT period_start, period_end, state, attempts, queue, host, result
                      FROM coord.runs WHERE app = 'tap-up' ORDER BY period_start$$,
                  $$VALUES ('2024-01-01 10:00Z'::timestamptz, '2024-01-01 11:00Z'::timestamptz, 'ready'::text, 0, 'tap-aq'::text, NULL::text, NULL::jsonb),
                           ('2024-01-01 11:00Z', '2024-01-01 12:00Z', 'ready', 0, 'tap-aq', NULL, NULL),
                           ('2024-01-01 12:00Z', '2024-01-01 13:00Z', 'ready', 0, 'tap-aq', NULL, NULL)$$,
                  'coord.runs: one ready run per hour');
SELECT results_eq($$SELECT j.key, j.origin, j.payload FROM coord.job AS j JOIN coord.runs AS r ON r.job_id = j.id
                     WHERE r.app = 'tap-up' AND r.period_start = '2024-01-01 10:00Z'$$,
                  $$VALUES ('2024-01-01-1000-tap-up'::text, 'a:tap-up:2024-01-01-1000'::text,
                            '{"app": "tap-up", "conf": {"k": 1}, "period": "hourly", "upstream": {},
                              "period_end": "2024-01-01T11:00:00Z", "period_start": "2024-01-01T10:00:00Z"}'::jsonb)$$,
                  'a run''s job: keyed by its period, origin a:<app>:<period>, the period and conf in its payload');
SELECT is((SELECT next_period FROM coord.app_defs WHERE name = 'tap-up'), '2024-01-01 13:00Z'::timestamptz,
          'next_period moves past the runs made');
SELECT is(coord.tick('2024-01-01 12:05Z'), 0, 'the same tick again makes nothing');
SELECT is((SELECT count(*)::int FROM coord.runs WHERE app = 'tap-up'), 3, 'still three runs');
SELECT lives_ok($$SELECT coord.define_app('tap-up', 'hourly', queue => 'tap-aq', catchup_from => '2024-01-01 10:30Z',
                                          conf => '{"k": 1}')$$, 'the same definition again');
SELECT results_eq($$SELECT first_period, next_period FROM coord.app_defs WHERE name = 'tap-up'$$,
                  $$VALUES ('2024-01-01 10:00Z'::timestamptz, '2024-01-01 13:00Z'::timestamptz)$$,
                  'the same definition keeps where runs are');

-- a dependent app: its run is made when the upstream run completes, with the result
SELECT lives_ok($$SELECT coord.define_app('tap-down', depends => '{"tap-up": "hourly"}', queue => 'tap-aq2',
                                          host => 'tap-h1', catchup_from => '2024-01-01 10:00Z')$$,
                'define an app that depends on it');
SELECT results_eq($$SELECT starts, grain FROM coord.app_defs WHERE name = 'tap-down'$$,
                  $$VALUES (NULL::text, 'hourly'::text)$$, 'its period length comes from its dependency');
SELECT is(coord.tick('2024-01-01 12:05Z'), 0, 'no dependent run while the upstream runs are not done');
CREATE TEMP TABLE tap_a_claim AS SELECT id, token, key FROM coord.claim('tap-aq', 10, '1 hour');
SELECT is((SELECT count(*)::int FROM tap_a_claim), 3, 'the three runs are claimed');
SELECT is((SELECT string_agg(state, ',' ORDER BY period_start) FROM coord.runs WHERE app = 'tap-up'),
          'running,running,running', 'coord.runs shows them running');
SELECT ok(coord.complete(c.id, c.token, '{"r": 10}'), 'complete the 10:00 run with a result')
  FROM tap_a_claim AS c WHERE c.key = '2024-01-01-1000-tap-up';
SELECT results_eq($$SELECT state, result, finished_at IS NOT NULL FROM coord.runs
                     WHERE app = 'tap-up' AND period_start = '2024-01-01 10:00Z'$$,
                  $$VALUES ('done'::text, '{"r": 10}'::jsonb, true)$$, 'the run is done with its result');
SELECT results_eq($$SELECT r.period_start, r.state, r.host, j.queue, j.payload->'upstream'
                      FROM coord.runs AS r JOIN coord.job AS j ON j.id = r.job_id WHERE r.app = 'tap-down'$$,
                  $$VALUES ('2024-01-01 10:00Z'::timestamptz, 'ready'::text, 'tap-h1'::text, 'tap-aq2'::text,
                            '{"tap-up": [{"r": 10}]}'::jsonb)$$,
                  'the dependent run is made at once, on its host and queue, with the upstream result');

-- the grid
SELECT results_eq($$SELECT * FROM coord.grid('2024-01-01 10:00Z', '2024-01-01 13:00Z', ARRAY['tap-up', 'tap-down'])$$,
                  $$VALUES ('runs of 2 apps, 2024-01-01 10:00 to 2024-01-01 13:00 UTC, one column per hour''s period'),
                           ('          2024-01-01'), ('          111'), ('          012'),
                           ('tap-up    #>>'), ('tap-down  o..'),
                           ('legend: # done  > running  o ready  ~ scheduled (waits to retry)  ! late  X dead  c cancelled  ? job missing  . no run  - period continues')$$,
                  'grid: a header, a line per app with a symbol per period, a legend');
SELECT results_eq($$SELECT * FROM coord.grid('2024-01-01 10:00Z', '2024-01-01 13:00Z', ARRAY[]::text[])$$,
                  $$VALUES ('no apps named')$$, 'grid of no apps: one line');

-- drop_app
SELECT throws_ok($$SELECT coord.drop_app('tap-up')$$, '2BP01',
                 'cannot drop app "tap-up" because other apps depend on it', 'an app others depend on is not dropped');
SELECT ok(coord.drop_app('tap-down'), 'drop_app answers true');
SELECT results_eq($$SELECT (SELECT count(*)::int FROM coord.app_defs WHERE name = 'tap-down'),
                           (SELECT count(*)::int FROM coord.runs WHERE app = 'tap-down'),
                           (SELECT count(*)::int FROM coord.job WHERE queue = 'tap-aq2')$$,
                  $$VALUES (0, 0, 0)$$, 'the app, its runs and its unclaimed job are gone');
SELECT ok(NOT coord.drop_app('tap-down'), 'drop_app answers false the second time');
SELECT ok(NOT coord.drop_app('tap-never'), 'drop_app of an unknown app answers false');
SELECT ok(coord.drop_app('tap-up'), 'now the upstream app can be dropped');
SELECT is((SELECT state FROM coord.jobs WHERE id = (SELECT id FROM tap_a_claim WHERE key = '2024-01-01-1100-tap-up')),
          'running', 'a claimed run''s job is left to finish');
SELECT ok(coord.complete(c.id, c.token), 'and completes without its app') FROM tap_a_claim AS c
 WHERE c.key = '2024-01-01-1100-tap-up';

-- errors: every argument
SELECT lives_ok($$SELECT coord.define_app('tap-day', 'daily', catchup_from => '2024-01-01Z')$$, 'a daily app');
SELECT throws_ok($$SELECT coord.define_app(NULL, 'hourly')$$, '22004', 'app must not be null', 'name NULL');
SELECT throws_ok($$SELECT coord.define_app('', 'hourly')$$, '22023', 'app name must have 1 to 48 bytes', 'empty name');
SELECT throws_ok($$SELECT coord.define_app(repeat('n', 49), 'hourly')$$, '22023', 'app name must have 1 to 48 bytes',
                 'name of 49 bytes');
SELECT lives_ok($$SELECT coord.define_app(repeat('n', 48), 'hourly')$$, 'name of 48 bytes');
SELECT throws_ok($$SELECT coord.define_app('a b', 'hourly')$$, '22023', 'invalid app name "a b"', 'name with a space');
SELECT throws_ok($$SELECT coord.define_app('x', 'fortnightly')$$, '22023', 'invalid starts "fortnightly" for app "x"',
                 'unknown starts');
SELECT throws_ok($$SELECT coord.define_app('x')$$, '22023', 'app "x" has neither starts nor depends',
                 'neither starts nor depends');
SELECT throws_ok($$SELECT coord.define_app('x', 'hourly', depends => NULL)$$, '22004', 'depends must not be null',
                 'depends NULL');
SELECT throws_ok($$SELECT coord.define_app('x', 'hourly', depends => '["tap-day"]')$$, '22023',
                 'depends of app "x" must be a JSON object', 'depends an array');
SELECT throws_ok($$SELECT coord.define_app('x', depends => '{"tap-day": "minutely"}')$$, '22023',
                 'invalid period for the dependency of app "x" on app "tap-day"', 'a dependency''s unknown period');
SELECT throws_ok($$SELECT coord.define_app('x', depends => '{"tap-day": 1}')$$, '22023',
                 'invalid period for the dependency of app "x" on app "tap-day"', 'a dependency''s period not a string');
SELECT throws_ok($$SELECT coord.define_app('x', depends => '{"nope": "daily"}')$$, '42704',
                 'app "x" depends on unknown app "nope"', 'a dependency on an unknown app');
SELECT throws_ok($$SELECT coord.define_app('x', 'daily', depends => '{"x": "daily"}')$$, '42P19',
                 'app dependencies would form a cycle through app "x"', 'an app that depends on itself');
SELECT throws_ok($$SELECT coord.define_app('tap-day', depends => '{"tap-dep": "daily"}')$$, '42704', NULL,
                 'redefining onto an unknown app');
SELECT lives_ok($$SELECT coord.define_app('tap-dep', depends => '{"tap-day": "daily"}')$$, 'an app on the daily one');
SELECT throws_ok($$SELECT coord.define_app('tap-day', depends => '{"tap-dep": "daily"}')$$, '42P19', NULL,
                 'a cycle through two apps');
SELECT throws_ok($$SELECT coord.define_app('x', depends => '{"tap-day": "hourly"}')$$, '22023',
                 'app "x" depends on app "tap-day" hourly, finer than that app runs', 'a dependency finer than its app');
SELECT lives_ok($$SELECT coord.define_app('tap-week', depends => '{"tap-day": "weekly"}')$$, 'a coarser dependency');
SELECT is((SELECT grain FROM coord.app_defs WHERE name = 'tap-week'), 'weekly', 'whose period length it takes');
SELECT throws_ok($$SELECT coord.define_app('x', 'hourly', timeout => '0')$$, '22023', 'timeout must be positive',
                 'timeout zero');
SELECT throws_ok($$SELECT coord.define_app('x', 'hourly', timeout => '-1 s')$$, '22023', 'timeout must be positive',
                 'timeout negative');
SELECT throws_ok($$SELECT coord.define_app('x', 'hourly', timeout => '178000000 years')$$, '22015',
                 'timeout is out of range', 'timeout beyond microseconds');
SELECT throws_ok($$SELECT coord.define_app('x', 'hourly', host => '')$$, '22023', 'host name must have 1 to 48 bytes',
                 'empty host');
SELECT throws_ok($$SELECT coord.define_app('x', 'hourly', queue => NULL)$$, '22004', 'queue must not be null',
                 'queue NULL');
SELECT throws_ok($$SELECT coord.define_app('x', 'hourly', queue => 'q!')$$, '22023', 'invalid queue name "q!"',
                 'bad queue');
SELECT throws_ok($$SELECT coord.define_app('x', 'hourly', catchup_from => 'infinity')$$, '22023',
                 'catchup_from must be a finite time', 'catchup_from infinity');
SELECT throws_ok($$SELECT coord.define_app('x', 'yearly', catchup_from => '9999-06-01Z')$$, '22008',
                 'timestamp out of range for an app period', 'a first period ending after the year 9999');
SELECT throws_ok($$SELECT coord.define_app('x', 'hourly', conf => NULL)$$, '22004', 'conf must not be null', 'conf NULL');
SELECT throws_ok($$SELECT coord.define_app('x', 'hourly', conf => jsonb_build_object('c', repeat('c', 65536)))$$, '54000',
                 'app conf is too large', 'conf over 64 kB');
SELECT lives_ok($$SELECT coord.define_app('tap-conf', 'hourly', conf => jsonb_build_object('c', repeat('c', 60000)))$$,
                'conf under 64 kB');
SELECT is((SELECT count(*)::int FROM coord.app_defs WHERE name = 'x'), 0, 'no refused definition was stored');
SELECT throws_ok($$SELECT coord.drop_app(NULL)$$, '22004', 'app must not be null', 'drop_app NULL');
SELECT throws_ok($$SELECT coord.drop_app('')$$, '22023', 'app name must have 1 to 48 bytes', 'drop_app empty');
SELECT throws_ok($$SELECT coord.grid(NULL, '2024-01-02Z')$$, '22004', 'from must not be null', 'grid from NULL');
SELECT throws_ok($$SELECT coord.grid('2024-01-01Z', NULL)$$, '22004', 'to must not be null', 'grid to NULL');
SELECT throws_ok($$SELECT coord.grid('2024-01-02Z', '2024-01-01Z')$$, '22023',
                 'grid needs finite times with from before to', 'grid to before from');
SELECT throws_ok($$SELECT coord.grid('2024-01-01Z', '2024-01-01Z')$$, '22023',
                 'grid needs finite times with from before to', 'grid of no time');
SELECT throws_ok($$SELECT coord.grid('-infinity', '2024-01-01Z')$$, '22023',
                 'grid needs finite times with from before to', 'grid from -infinity');
SELECT throws_ok($$SELECT coord.grid('2024-01-01Z', '2024-01-02Z', ARRAY['tap-day', NULL])$$, '22004',
                 'apps must not contain null elements', 'grid apps with a NULL element');
SELECT throws_ok($$SELECT coord.grid('2024-01-01Z', '2024-01-02Z', ARRAY['nope'])$$, '42704',
                 'app "nope" does not exist', 'grid of an unknown app');

-- who may call what
CREATE ROLE tap_a_worker IN ROLE coord_worker;
CREATE ROLE tap_a_monitor IN ROLE coord_monitor;
CREATE ROLE tap_a_admin IN ROLE coord_admin;
CREATE ROLE tap_a_nobody;
SET ROLE tap_a_worker;
SELECT throws_ok($$SELECT coord.define_app('tap-w', 'hourly')$$, '42501', NULL, 'worker: no define_app');
SELECT throws_ok($$SELECT coord.drop_app('tap-day')$$, '42501', NULL, 'worker: no drop_app');
SELECT throws_ok($$SELECT coord.grid('2024-01-01Z', '2024-01-02Z')$$, '42501', NULL, 'worker: no grid');
SELECT throws_ok($$SELECT app FROM coord.runs$$, '42501', NULL, 'worker: does not read coord.runs');
RESET ROLE;
SET ROLE tap_a_admin;
SELECT lives_ok($$SELECT coord.define_app('tap-adm', 'daily', queue => 'tap-admq', catchup_from => '2024-01-01Z')$$,
                'admin: define_app');
SELECT is(coord.tick('2024-01-02 00:30Z') >= 2, true, 'admin: tick makes its runs');
SELECT results_eq($$SELECT period_start, result FROM coord.runs WHERE app = 'tap-adm' ORDER BY period_start$$,
                  $$VALUES ('2024-01-01Z'::timestamptz, NULL::jsonb), ('2024-01-02Z', NULL)$$,
                  'admin: reads every column of coord.runs');
RESET ROLE;
SET ROLE tap_a_monitor;
SELECT throws_ok($$SELECT coord.define_app('tap-m', 'hourly')$$, '42501', NULL, 'monitor: no define_app');
SELECT throws_ok($$SELECT coord.drop_app('tap-day')$$, '42501', NULL, 'monitor: no drop_app');
SELECT is((SELECT count(*)::int FROM coord.grid('2024-01-01Z', '2024-01-02Z', ARRAY['tap-day'])), 6,
          'monitor: grid (a header of four lines, the app, the legend)');
SELECT is((SELECT string_agg(state, ',' ORDER BY period_start) FROM coord.runs WHERE app = 'tap-adm'), 'ready,ready',
          'monitor: reads coord.runs');
SELECT throws_ok($$SELECT result FROM coord.runs$$, '42501', NULL, 'monitor: not the runs'' results');
SELECT throws_ok($$SELECT last_error FROM coord.runs$$, '42501', NULL, 'monitor: not their jobs'' errors');
RESET ROLE;
SET ROLE tap_a_admin;
SELECT ok(coord.drop_app('tap-adm'), 'admin: drop_app');
RESET ROLE;
SET ROLE tap_a_nobody;
SELECT throws_ok($$SELECT coord.grid('2024-01-01Z', '2024-01-02Z')$$, '42501', NULL, 'a role of none of them: no grid');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
