-- pgTAP: the schedule API's surface (coord.schedule, unschedule, cron_next,
-- tick, cron_install, the coord.schedules view), its behaviour with explicit
-- times, every error with its SQLSTATE, and who may call what.  Instances
-- are put in 2100 and later (or due at once, for the claim tests), ticks get
-- their time as an argument: nothing depends on the wall clock.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = warning;
SET TimeZone = 'UTC';
BEGIN;
SELECT plan(105);

-- surface
SELECT function_returns('coord', 'schedule',
       ARRAY['text', 'text', 'interval', 'text', 'jsonb', 'timestamp with time zone', 'boolean', 'text', 'text'], 'bigint');
SELECT function_returns('coord', 'unschedule', ARRAY['text'], 'boolean');
SELECT function_returns('coord', 'cron_next', ARRAY['text', 'timestamp with time zone', 'text'], 'timestamp with time zone');
SELECT function_returns('coord', 'tick', ARRAY['timestamp with time zone'], 'integer');
SELECT function_returns('coord', 'cron_install', ARRAY['text'], 'bigint');
SELECT has_view('coord', 'schedules', 'view coord.schedules');
SELECT columns_are('coord', 'schedules', ARRAY['name', 'queue', 'every', 'cron', 'fixed_rate', 'next_run_at',
       'last_run_at', 'last_state', 'running', 'job_id', 'payload', 'host', 'starts_at', 'last_error', 'tz']);
SELECT volatility_is('coord', 'cron_next', ARRAY['text', 'timestamp with time zone', 'text'], 'stable');
SELECT volatility_is('coord', 'schedule',
       ARRAY['text', 'text', 'interval', 'text', 'jsonb', 'timestamp with time zone', 'boolean', 'text', 'text'], 'volatile');
SELECT is((SELECT string_agg(proname || ':' || proparallel::text, ' ' ORDER BY proname) FROM pg_proc
            WHERE pronamespace = 'coord'::regnamespace
              AND proname IN ('schedule', 'unschedule', 'cron_next', 'tick', 'cron_install')),
          'cron_install:u cron_next:s schedule:u tick:u unschedule:u',
          'cron_next is parallel safe, the writers parallel unsafe');

-- cron_next: strictly after, UTC, month ends, never
SELECT is(coord.cron_next('*/15 * * * *', '2024-01-01 00:00Z'), '2024-01-01 00:15Z'::timestamptz,
          'cron_next is strictly after its argument');
SELECT is(coord.cron_next('0 12 29 2 *', '2024-03-01Z'), '2028-02-29 12:00Z'::timestamptz,
          'cron_next finds the next leap day');
SELECT is(coord.cron_next('30 6 * * 1', '2100-01-01Z'), '2100-01-04 06:30Z'::timestamptz,
          'cron_next: the first Monday after a Friday');
SELECT is(coord.cron_next('0 0 31 * *', '2024-04-01Z'), '2024-05-31 00:00Z'::timestamptz,
          'cron_next skips a month without a 31st');
SELECT is(coord.cron_next('0 0 30 2 *', '2024-01-01Z'), NULL, 'an expression that never fires: NULL');

-- an interval schedule: an instance at once, due at starts_at
SELECT ok(coord.schedule('tap-s1', 'tap-sq', every => '1 hour', payload => '{"a": 1}',
                         starts_at => '2100-01-01Z') > 0, 'schedule returns an id');
SELECT is(coord.schedule('tap-s1', 'tap-sq', every => '1 hour', payload => '{"a": 1}', starts_at => '2100-01-01Z'),
          (SELECT id FROM coord.schedule_defs WHERE name = 'tap-s1'), 'the same definition again: the same id');
SELECT results_eq($$SELECT queue, every, cron, fixed_rate, next_run_at, last_run_at, last_state, running,
                           payload, host, starts_at, last_error FROM coord.schedules WHERE name = 'tap-s1'$$,
                  $$VALUES ('tap-sq'::text, '1 hour'::interval, NULL::text, false, '2100-01-01Z'::timestamptz,
                            NULL::timestamptz, NULL::text, false, '{"a": 1}'::jsonb, NULL::text,
                            '2100-01-01Z'::timestamptz, NULL::text)$$,
                  'the view shows the definition and its next slot');
SELECT results_eq($$SELECT j.queue, j.state, j.run_at, j.payload, j.max_attempts, j.origin
                      FROM coord.jobs AS j JOIN coord.schedules AS s ON j.id = s.job_id WHERE s.name = 'tap-s1'$$,
                  $$VALUES ('tap-sq'::text, 'scheduled'::text, '2100-01-01Z'::timestamptz, '{"a": 1}'::jsonb,
                            3, 's:tap-s1'::text)$$,
                  'its instance is a scheduled job with origin s:<name>, 3 attempts');
SELECT is((SELECT count(*)::int FROM coord.job WHERE origin = 's:tap-s1'), 1, 'one instance');
CREATE TEMP TABLE tap_s_job AS SELECT job_id FROM coord.schedules WHERE name = 'tap-s1';
SELECT is(coord.schedule('tap-s1', 'tap-sq', every => '1 hour', payload => '{"a": 1}', starts_at => '2100-01-01Z'),
          (SELECT id FROM coord.schedule_defs WHERE name = 'tap-s1'), 'a third identical call');
SELECT is((SELECT job_id FROM coord.schedules WHERE name = 'tap-s1'), (SELECT job_id FROM tap_s_job),
          'the same definition keeps its instance');
-- a changed definition replaces the unclaimed instance
SELECT is(coord.schedule('tap-s1', 'tap-sq2', every => '2 hours', payload => '{"a": 2}', starts_at => '2100-01-02Z',
                         host => 'tap-h1'),
          (SELECT id FROM coord.schedule_defs WHERE name = 'tap-s1'), 'a changed definition keeps the id');
SELECT isnt((SELECT job_id FROM coord.schedules WHERE name = 'tap-s1'), (SELECT job_id FROM tap_s_job),
            'a changed definition replaces the unclaimed instance');
SELECT results_eq($$SELECT j.queue, j.run_at, j.payload, j.host, (SELECT count(*)::int FROM coord.job WHERE origin = 's:tap-s1')
                      FROM coord.jobs AS j JOIN coord.schedules AS s ON j.id = s.job_id WHERE s.name = 'tap-s1'$$,
                  $$VALUES ('tap-sq2'::text, '2100-01-02Z'::timestamptz, '{"a": 2}'::jsonb, 'tap-h1'::text, 1)$$,
                  'the new instance follows the new definition, and is the only one');

-- a cron schedule: its first slot is the first fire time at or after starts_at
SELECT ok(coord.schedule('tap-c1', 'tap-sq', cron => '30 6 * * 1', starts_at => '2100-01-01Z') > 0, 'cron schedule');
SELECT results_eq($$SELECT every, cron, next_run_at FROM coord.schedules WHERE name = 'tap-c1'$$,
                  $$VALUES (NULL::interval, '30 6 * * 1'::text, '2100-01-04 06:30Z'::timestamptz)$$,
                  'a cron schedule''s first slot');
SELECT ok(coord.schedule('tap-c2', 'tap-sq', cron => '0 0 * * *', starts_at => '2100-01-01Z') > 0, 'cron at starts_at');
SELECT is((SELECT next_run_at FROM coord.schedules WHERE name = 'tap-c2'), '2100-01-01Z'::timestamptz,
          'a fire time equal to starts_at is the first slot');
SELECT ok(coord.schedule('tap-c3', 'tap-sq', cron => '0 0 30 2 *', starts_at => '2100-01-01Z') > 0,
          'a cron expression that never fires is accepted');
SELECT results_eq($$SELECT next_run_at, job_id FROM coord.schedules WHERE name = 'tap-c3'$$,
                  $$VALUES (NULL::timestamptz, NULL::bigint)$$, 'it has no slot and no instance');

-- bounds of every
SELECT lives_ok($$SELECT coord.schedule('tap-b1', 'tap-sq', every => '10 ms', starts_at => '2100-01-01Z')$$,
                'every of 10 ms is the least accepted');

-- coord.tick(now) repairs a schedule whose instance was deleted, once
DELETE FROM coord.job WHERE origin = 's:tap-s1';
SELECT ok(coord.tick('2099-12-31Z') >= 1, 'a tick repairs the missing instance');
SELECT results_eq($$SELECT j.run_at, j.queue FROM coord.jobs AS j JOIN coord.schedules AS s ON j.id = s.job_id
                     WHERE s.name = 'tap-s1'$$,
                  $$VALUES ('2100-01-02Z'::timestamptz, 'tap-sq2'::text)$$, 'the repaired instance is for next_run_at');
SELECT is((SELECT count(*)::int FROM coord.job WHERE origin = 's:tap-s1'), 1, 'a second tick adds no instance')
  FROM (SELECT coord.tick('2099-12-31Z')) AS t;
SELECT is((SELECT last_tick_at FROM coord.tick_state), '2099-12-31Z'::timestamptz, 'tick_state records the tick''s now');

-- a due instance claimed and completed: fixed delay puts the next one every after the finish
SELECT ok(coord.schedule('tap-d1', 'tap-dq', every => '1 day', payload => '{"d": 1}', starts_at => '2000-01-01Z') > 0,
          'a schedule whose start has passed');
SELECT is((SELECT state FROM coord.jobs WHERE origin = 's:tap-d1'), 'ready', 'its instance is due at once');
CREATE TEMP TABLE tap_s_claim AS SELECT id, token, payload FROM coord.claim('tap-dq', 1, '1 hour');
SELECT is((SELECT payload FROM tap_s_claim), '{"d": 1}'::jsonb, 'the instance is claimed with its payload');
SELECT is((SELECT running FROM coord.schedules WHERE name = 'tap-d1'), true, 'the view shows it running');
SELECT is((SELECT job_id FROM coord.schedules WHERE name = 'tap-d1'), (SELECT id FROM tap_s_claim),
          'the view names the running instance');
SELECT lives_ok($$SELECT coord.schedule('tap-d1', 'tap-dq', every => '1 day', payload => '{"d": 2}', starts_at => '2000-01-01Z')$$,
                'redefining while an instance runs');
SELECT is((SELECT count(*)::int FROM coord.job WHERE origin = 's:tap-d1' AND id = (SELECT id FROM tap_s_claim)), 1,
          'the claimed instance is not removed by a redefinition');
SELECT ok(coord.complete(c.id, c.token), 'complete the instance') FROM tap_s_claim AS c;
SELECT results_eq($$SELECT s.last_state, s.last_run_at = h.finished_at, s.next_run_at = h.finished_at + interval '1 day'
                      FROM coord.schedules AS s, coord.job_history AS h
                     WHERE s.name = 'tap-d1' AND h.id = (SELECT id FROM tap_s_claim)$$,
                  $$VALUES ('done'::text, true, true)$$, 'last run recorded; the next slot is a day after the finish');
SELECT results_eq($$SELECT j.state, j.payload FROM coord.jobs AS j JOIN coord.schedules AS s ON j.id = s.job_id
                     WHERE s.name = 'tap-d1'$$,
                  $$VALUES ('scheduled'::text, '{"d": 2}'::jsonb)$$, 'the successor follows the new definition');

-- unschedule: drops the schedule and its unclaimed instance; a running one finishes without a successor
SELECT ok(coord.unschedule('tap-c1'), 'unschedule answers true for an existing schedule');
SELECT results_eq($$SELECT (SELECT count(*)::int FROM coord.schedules WHERE name = 'tap-c1'),
                           (SELECT count(*)::int FROM coord.job WHERE origin = 's:tap-c1')$$,
                  $$VALUES (0, 0)$$, 'the schedule and its instance are gone');
SELECT ok(NOT coord.unschedule('tap-c1'), 'unschedule answers false the second time');
SELECT ok(NOT coord.unschedule('tap-never'), 'unschedule of an unknown name answers false');
SELECT ok(coord.schedule('tap-d2', 'tap-dq2', every => '1 hour', starts_at => '2000-01-01Z') > 0, 'another due schedule');
CREATE TEMP TABLE tap_s_claim2 AS SELECT id, token FROM coord.claim('tap-dq2', 1, '1 hour');
SELECT ok(coord.unschedule('tap-d2'), 'unschedule while its instance runs');
SELECT is((SELECT state FROM coord.jobs WHERE id = (SELECT id FROM tap_s_claim2)), 'running',
          'the running instance is left to finish');
SELECT ok(coord.complete(c.id, c.token), 'it completes') FROM tap_s_claim2 AS c;
SELECT is((SELECT count(*)::int FROM coord.job WHERE origin = 's:tap-d2'), 0, 'and has no successor');

-- errors: every argument
SELECT throws_ok($$SELECT coord.schedule(NULL, 'q', every => '1 hour')$$, '22004', 'schedule must not be null', 'name NULL');
SELECT throws_ok($$SELECT coord.schedule('', 'q', every => '1 hour')$$, '22023',
                 'schedule name must have 1 to 48 bytes', 'empty name');
SELECT throws_ok($$SELECT coord.schedule(repeat('n', 49), 'q', every => '1 hour')$$, '22023',
                 'schedule name must have 1 to 48 bytes', 'name of 49 bytes');
SELECT lives_ok($$SELECT coord.schedule(repeat('n', 48), 'q', every => '1 hour', starts_at => '2100-01-01Z')$$,
                'name of 48 bytes');
SELECT throws_ok($$SELECT coord.schedule('a b', 'q', every => '1 hour')$$, '22023', 'invalid schedule name "a b"',
                 'name with a space');
SELECT throws_ok($$SELECT coord.schedule('s', NULL, every => '1 hour')$$, '22004', 'queue must not be null', 'queue NULL');
SELECT throws_ok($$SELECT coord.schedule('s', 'q!', every => '1 hour')$$, '22023', 'invalid queue name "q!"', 'bad queue');
SELECT throws_ok($$SELECT coord.schedule('s', 'q', every => '1 hour', host => '')$$, '22023',
                 'host name must have 1 to 48 bytes', 'empty host');
SELECT throws_ok($$SELECT coord.schedule('s', 'q')$$, '22023', 'exactly one of every and cron must be given',
                 'neither every nor cron');
SELECT throws_ok($$SELECT coord.schedule('s', 'q', every => '1 hour', cron => '* * * * *')$$, '22023',
                 'exactly one of every and cron must be given', 'both every and cron');
SELECT throws_ok($$SELECT coord.schedule('s', 'q', every => '1 hour', payload => NULL)$$, '22004',
                 'payload must not be null', 'payload NULL');
SELECT throws_ok($$SELECT coord.schedule('s', 'q', every => '1 hour', payload => jsonb_build_object('x', repeat('x', 1048576)))$$,
                 '54000', 'job payload is too large', 'payload over 1 MB');
SELECT throws_ok($$SELECT coord.schedule('s', 'q', every => '1 hour', fixed_rate => NULL)$$, '22004',
                 'fixed_rate must not be null', 'fixed_rate NULL');
SELECT throws_ok($$SELECT coord.schedule('s', 'q', every => '0')$$, '22023', 'every must be positive', 'every zero');
SELECT throws_ok($$SELECT coord.schedule('s', 'q', every => '-1 hour')$$, '22023', 'every must be positive', 'every negative');
SELECT throws_ok($$SELECT coord.schedule('s', 'q', every => '9 ms')$$, '22023', 'every must be at least 10 milliseconds',
                 'every under 10 ms');
SELECT throws_ok($$SELECT coord.schedule('s', 'q', every => '178000000 years')$$, '22015', 'every is out of range',
                 'every beyond microseconds');
SELECT throws_ok($$SELECT coord.schedule('s', 'q', every => '200000 years', starts_at => '200000-01-01Z')$$, '22008',
                 'a run of schedule "s" is out of range', 'a second run outside the timestamptz range');
SELECT throws_ok($$SELECT coord.schedule('s', 'q', every => '1 hour', starts_at => 'infinity')$$, '22023',
                 'starts_at must be a finite time', 'starts_at infinity');
SELECT throws_ok($$SELECT coord.schedule('s', 'q', cron => '* * *')$$, '22023', 'invalid cron expression "* * *"',
                 'cron of three fields');
SELECT throws_ok($$SELECT coord.schedule('s', 'q', cron => '61 * * * *')$$, '22023', 'invalid cron expression "61 * * * *"',
                 'cron minute 61');
SELECT is((SELECT count(*)::int FROM coord.schedule_defs WHERE name = 's'), 0, 'no refused definition was stored');
SELECT throws_ok($$SELECT coord.unschedule(NULL)$$, '22004', 'schedule must not be null', 'unschedule NULL');
SELECT throws_ok($$SELECT coord.unschedule('')$$, '22023', 'schedule name must have 1 to 48 bytes', 'unschedule empty');
SELECT throws_ok($$SELECT coord.cron_next(NULL)$$, '22004', 'cron must not be null', 'cron_next NULL');
SELECT throws_ok($$SELECT coord.cron_next('* * * * *', NULL)$$, '22004', 'after must not be null', 'cron_next after NULL');
SELECT throws_ok($$SELECT coord.cron_next('* * * * *', 'infinity')$$, '22023', 'after must be a finite time',
                 'cron_next after infinity');
SELECT throws_ok($$SELECT coord.cron_next('* * * * * *')$$, '22023', NULL, 'cron_next of six fields');
SELECT throws_ok($$SELECT coord.tick(NULL)$$, '22004', 'now must not be null', 'tick NULL');
SELECT throws_ok($$SELECT coord.tick('-infinity')$$, '22023', 'now must be a finite time', 'tick -infinity');
SELECT throws_ok($$SELECT coord.cron_install(NULL)$$, '22004', 'schedule must not be null', 'cron_install NULL');
SELECT throws_ok($$SELECT coord.cron_install()$$, '55000', 'pg_cron is not installed in database "' || current_database() || '"',
                 'cron_install without pg_cron in this database');

-- who may call what
CREATE ROLE tap_s_worker IN ROLE coord_worker;
CREATE ROLE tap_s_monitor IN ROLE coord_monitor;
CREATE ROLE tap_s_admin IN ROLE coord_admin;
CREATE ROLE tap_s_nobody;
SET ROLE tap_s_worker;
SELECT throws_ok($$SELECT coord.schedule('tap-w', 'q', every => '1 hour')$$, '42501', NULL, 'worker: no schedule');
SELECT throws_ok($$SELECT coord.unschedule('tap-s1')$$, '42501', NULL, 'worker: no unschedule');
SELECT throws_ok($$SELECT coord.tick('2099-12-31Z')$$, '42501', NULL, 'worker: no tick');
SELECT is(coord.cron_next('0 0 1 1 *', '2024-06-01Z'), '2025-01-01Z'::timestamptz, 'worker: cron_next');
SELECT throws_ok($$SELECT name FROM coord.schedules$$, '42501', NULL, 'worker: does not read coord.schedules');
RESET ROLE;
SET ROLE tap_s_monitor;
SELECT throws_ok($$SELECT coord.schedule('tap-m', 'q', every => '1 hour')$$, '42501', NULL, 'monitor: no schedule');
SELECT throws_ok($$SELECT coord.cron_install()$$, '42501', NULL, 'monitor: no cron_install');
SELECT is((SELECT next_run_at FROM coord.schedules WHERE name = 'tap-s1'), '2100-01-02Z'::timestamptz,
          'monitor: reads the schedules');
SELECT throws_ok($$SELECT payload FROM coord.schedules$$, '42501', NULL, 'monitor: not their payloads');
SELECT throws_ok($$SELECT last_error FROM coord.schedules$$, '42501', NULL, 'monitor: not their errors');
RESET ROLE;
SET ROLE tap_s_admin;
SELECT ok(coord.schedule('tap-a1', 'tap-aq', every => '1 hour', starts_at => '2100-01-01Z') > 0, 'admin: schedule');
SELECT is((SELECT payload FROM coord.schedules WHERE name = 'tap-a1'), '{}'::jsonb, 'admin: reads every column');
SELECT ok(coord.unschedule('tap-a1'), 'admin: unschedule');
SELECT ok(coord.tick('2099-12-31Z') >= 0, 'admin: tick');
RESET ROLE;
SET ROLE tap_s_nobody;
SELECT throws_ok($$SELECT coord.cron_next('* * * * *', '2024-01-01Z')$$, '42501', NULL, 'a role of none of them: not even cron_next');
RESET ROLE;

-- the tick's health: a view for coord_monitor
SELECT coord.tick();
SET ROLE tap_s_monitor;
SELECT ok((SELECT ticks >= 1 AND age >= interval '0' FROM coord.tick_health), 'coord_monitor reads coord.tick_health');
RESET ROLE;
SET ROLE tap_s_nobody;
SELECT throws_ok('SELECT * FROM coord.tick_health', '42501', NULL, 'a role of none of them may not read coord.tick_health');
RESET ROLE;
SELECT ok(NOT has_table_privilege('tap_s_monitor', 'coord.tick_state', 'SELECT'), 'coord.tick_state stays the owner''s');

SELECT * FROM finish();
ROLLBACK;
