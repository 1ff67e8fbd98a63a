-- pgTAP: signals, the external inputs of apps (coord.signal, "@name" in
-- depends, the coord.signals view): every argument and error with its
-- SQLSTATE, false on repeat, rollups, the run made in the signalling
-- transaction with the payloads in its payload, the tick's repair of a
-- signal older than its app, and who may signal; a daily app in
-- America/Chicago on hourly signals, whose periods are its own local hours
-- (25 on 2026-11-01, 23 on 2026-03-08), and one in Asia/Kolkata, whose
-- local hours begin at :30 UTC.  Explicit times in 2024 and 2026;
-- nothing depends on the wall clock.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = warning;
SET TimeZone = 'UTC';
BEGIN;
SELECT plan(98);

-- surface
SELECT function_returns('coord', 'signal', ARRAY['text', 'timestamp with time zone', 'jsonb'], 'boolean');
SELECT is((SELECT provolatile::text || proparallel::text FROM pg_proc
            WHERE oid = 'coord.signal(text, timestamptz, jsonb)'::regprocedure), 'vu',
          'signal is volatile and parallel unsafe');
SELECT has_table('coord', 'app_signals', 'table coord.app_signals');
SELECT has_view('coord', 'signals', 'view coord.signals');
SELECT columns_are('coord', 'signals', ARRAY['name', 'period_start', 'signalled_at', 'signalled_by', 'payload', 'apps']);

-- an hourly app on an hourly signal: the signal makes the run, in its transaction
SELECT lives_ok($$SELECT coord.define_app('tap-sh', depends => '{"@tap-feed": "hourly"}', queue => 'tap-sq',
                                          catchup_from => '2024-01-01Z', conf => '{"c": 1}')$$,
                'define an app on a signal');
SELECT is((SELECT grain FROM coord.app_defs WHERE name = 'tap-sh'), 'hourly', 'its period length is the signal''s');
SELECT ok(coord.signal('tap-feed', '2024-01-01 10:00Z', '{"file": "a.csv"}'), 'signal 10:00: true');
SELECT results_eq($$SELECT r.period_start, r.state, j.payload FROM coord.runs AS r JOIN coord.job AS j ON j.id = r.job_id
                     WHERE r.app = 'tap-sh'$$,
                  $$VALUES ('2024-01-01 10:00Z'::timestamptz, 'ready'::text,
                            '{"app": "tap-sh", "conf": {"c": 1}, "period": "hourly",
                              "upstream": {"@tap-feed": [{"file": "a.csv"}]},
                              "period_end": "2024-01-01T11:00:00Z", "period_start": "2024-01-01T10:00:00Z"}'::jsonb)$$,
                  'the run of 10:00 is made by the signal, with its payload under upstream."@tap-feed"');
SELECT ok(NOT coord.signal('tap-feed', '2024-01-01 10:00Z', '{"file": "b.csv"}'), 'the same signal again: false');
SELECT results_eq($$SELECT payload, signalled_by = current_user::text FROM coord.signals WHERE name = 'tap-feed'$$,
                  $$VALUES ('{"file": "a.csv"}'::jsonb, true)$$, 'the first payload is kept; signalled_by is the caller');
SELECT ok(coord.signal('tap-feed', '2024-01-01 10:30Z'), 'another time in the same hour: true (another signal)');
SELECT is((SELECT payload FROM coord.signals WHERE name = 'tap-feed' AND period_start = '2024-01-01 10:30Z'),
          '{}'::jsonb, 'payload defaults to {}');
SELECT is((SELECT count(*)::int FROM coord.runs WHERE app = 'tap-sh'), 1, 'no second run for that hour');
SELECT ok(coord.signal('tap-feed', '2023-12-31 23:00Z'), 'a signal before the app''s first period');
SELECT is((SELECT count(*)::int FROM coord.runs WHERE app = 'tap-sh'), 1, 'makes no run');
SELECT results_eq($$SELECT apps FROM coord.signals WHERE name = 'tap-feed' AND period_start = '2024-01-01 10:00Z'$$,
                  $$VALUES (ARRAY['tap-sh']::text[])$$, 'coord.signals names the apps that depend on it');

-- the run is the signalling transaction's: rolled back with it
SAVEPOINT tap_s1;
SELECT ok(coord.signal('tap-feed', '2024-01-01 11:00Z'), 'signal 11:00');
SELECT is((SELECT count(*)::int FROM coord.runs WHERE app = 'tap-sh' AND period_start = '2024-01-01 11:00Z'), 1,
          'its run exists before the transaction ends');
ROLLBACK TO SAVEPOINT tap_s1;
SELECT results_eq($$SELECT (SELECT count(*)::int FROM coord.signals WHERE period_start = '2024-01-01 11:00Z'),
                           (SELECT count(*)::int FROM coord.runs WHERE app = 'tap-sh' AND period_start = '2024-01-01 11:00Z'),
                           (SELECT count(*)::int FROM coord.job WHERE key = '2024-01-01-1100-tap-sh')$$,
                  $$VALUES (0, 0, 0)$$, 'rolled back: no signal, no run, no job');

-- a rollup: a daily app on hourly signals waits for all 24 of its day
SELECT lives_ok($$SELECT coord.define_app('tap-sd', 'daily', '{"@tap-hr": "hourly"}', queue => 'tap-sq',
                                          catchup_from => '2024-01-01Z')$$, 'a daily app on hourly signals');
SELECT is(coord.tick('2024-01-02 00:30Z') >= 0, true, 'a tick (its horizon lets the daily run be made)');
SELECT is((SELECT count(*)::int FROM coord.runs WHERE app = 'tap-sd'), 0, 'no daily run without its signals');
SELECT is((SELECT count(*)::int FROM generate_series(0, 22) AS h
            WHERE coord.signal('tap-hr', '2024-01-01Z'::timestamptz + h * interval '1 hour',
                               jsonb_build_object('h', h))), 23, '23 of the 24 hourly signals');
SELECT is((SELECT count(*)::int FROM coord.runs WHERE app = 'tap-sd'), 0, 'no daily run yet');
SELECT ok(coord.signal('tap-hr', '2024-01-02 05:00Z', '{"h": "next day"}'), 'a signal of the next day');
SELECT is((SELECT count(*)::int FROM coord.runs WHERE app = 'tap-sd'), 0, 'does not complete this day');
SELECT ok(coord.signal('tap-hr', '2024-01-01 23:59Z', '{"h": 23}'), 'the last hour''s signal (any time inside it)');
SELECT results_eq($$SELECT r.period_start, r.period_end FROM coord.runs AS r WHERE r.app = 'tap-sd'$$,
                  $$VALUES ('2024-01-01Z'::timestamptz, '2024-01-02Z'::timestamptz)$$,
                  'the daily run is made by the last signal');
SELECT results_eq($$SELECT jsonb_array_length(j.payload->'upstream'->'@tap-hr'), j.payload->'upstream'->'@tap-hr'->0,
                           j.payload->'upstream'->'@tap-hr'->23
                      FROM coord.runs AS r JOIN coord.job AS j ON j.id = r.job_id WHERE r.app = 'tap-sd'$$,
                  $$VALUES (24, '{"h": 0}'::jsonb, '{"h": 23}'::jsonb)$$,
                  'its payload: the day''s 24 signal payloads in period order');

-- payloads that do not fit a run's payload are left out, as upstream results are
SELECT lives_ok($$SELECT coord.define_app('tap-sbig', 'daily', '{"@tap-big": "hourly"}', queue => 'tap-sq',
                                          catchup_from => '2024-01-01Z')$$, 'a daily app on large hourly signals');
SET client_min_messages = error;
SELECT is((SELECT count(*)::int FROM generate_series(0, 23) AS h
            WHERE coord.signal('tap-big', '2024-01-01Z'::timestamptz + h * interval '1 hour',
                               jsonb_build_object('p', repeat(h::text, 50000)))), 24, '24 signals of 50 kB each');
SET client_min_messages = warning;
SELECT results_eq($$SELECT j.payload->'upstream', j.payload->>'app' FROM coord.runs AS r JOIN coord.job AS j ON j.id = r.job_id
                     WHERE r.app = 'tap-sbig'$$,
                  $$VALUES ('{}'::jsonb, 'tap-sbig'::text)$$,
                  'the run is made; the 1.2 MB of payloads are left out of its payload');

-- a coarser dependency: hourly runs wait for their day's signal
SELECT lives_ok($$SELECT coord.define_app('tap-sc', 'hourly', '{"@tap-day": "daily"}', queue => 'tap-sq',
                                          catchup_from => '2024-01-01 22:00Z')$$, 'an hourly app on a daily signal');
SELECT is(coord.tick('2024-01-02 00:30Z') >= 0, true, 'a tick');
SELECT is((SELECT count(*)::int FROM coord.runs WHERE app = 'tap-sc'), 0, 'no hourly run without the day''s signal');
SELECT ok(coord.signal('tap-day', '2024-01-01 05:00Z', '{"d": 1}'), 'the signal of 2024-01-01 (at 05:00)');
SELECT is((SELECT string_agg(to_char(period_start, 'HH24'), ',' ORDER BY period_start) FROM coord.runs
            WHERE app = 'tap-sc'), '22,23', 'makes the day''s hourly runs from the first period on');
SELECT ok(coord.signal('tap-day', '2024-01-02Z'), 'the signal of 2024-01-02');
SELECT is((SELECT count(*)::int FROM coord.runs WHERE app = 'tap-sc'), 3,
          'makes its 00:00 run (the latest tick''s), not the later ones');

-- weeks under a month: the weeks that begin in it, as for an app upstream
SELECT lives_ok($$SELECT coord.define_app('tap-sm', 'monthly', '{"@tap-wk": "weekly"}', queue => 'tap-sq',
                                          catchup_from => '2024-01-01Z')$$, 'a monthly app on weekly signals');
SELECT is((SELECT count(*)::int FROM unnest(ARRAY['2024-01-01Z', '2024-01-09Z', '2024-01-15Z', '2024-01-22Z']::timestamptz[]) AS w
            WHERE coord.signal('tap-wk', w)), 4, 'the signals of the weeks of January 1, 8, 15 and 22');
SELECT is((SELECT count(*)::int FROM coord.runs WHERE app = 'tap-sm'), 0, 'no monthly run: the week of January 29 is missing');
SELECT ok(coord.signal('tap-wk', '2024-02-02Z'), 'a signal on February 2, inside the week that began on January 29');
SELECT results_eq($$SELECT period_start, period_end FROM coord.runs WHERE app = 'tap-sm'$$,
                  $$VALUES ('2024-01-01Z'::timestamptz, '2024-02-01Z'::timestamptz)$$,
                  'completes January (the week is the month''s it begins in)');

-- an app and a signal: the run waits for both, whichever comes last
SELECT lives_ok($$SELECT coord.define_app('tap-sup', 'hourly', queue => 'tap-supq', catchup_from => '2024-01-01Z')$$,
                'an upstream app');
SELECT lives_ok($$SELECT coord.define_app('tap-smix', depends => '{"tap-sup": "hourly", "@tap-mx": "hourly"}',
                                          queue => 'tap-sq', catchup_from => '2024-01-01Z')$$,
                'an app on it and on a signal');
SELECT is(coord.tick('2024-01-01 00:30Z') >= 1, true, 'a tick makes the upstream''s 00:00 run');
SELECT ok(coord.complete(c.id, c.token, '{"u": 0}'), 'the upstream run completes') FROM coord.claim('tap-supq') AS c;
SELECT is((SELECT count(*)::int FROM coord.runs WHERE app = 'tap-smix'), 0, 'no run without the signal');
SELECT ok(coord.signal('tap-mx', '2024-01-01Z', '"ready"'), 'the signal');
SELECT is((SELECT j.payload->'upstream' FROM coord.runs AS r JOIN coord.job AS j ON j.id = r.job_id
            WHERE r.app = 'tap-smix'), '{"tap-sup": [{"u": 0}], "@tap-mx": ["ready"]}'::jsonb,
          'the signal makes the run; both in its payload');

-- a signal older than its app: the tick's repair makes the run
SELECT ok(coord.signal('tap-old', '2024-01-01 03:00Z', '{"o": 3}'), 'a signal nobody depends on yet');
SELECT lives_ok($$SELECT coord.define_app('tap-sold', depends => '{"@tap-old": "hourly"}', queue => 'tap-sq',
                                          catchup_from => '2024-01-01Z')$$, 'an app on it, defined later');
SELECT is((SELECT count(*)::int FROM coord.runs WHERE app = 'tap-sold'), 0, 'no run at its definition');
SELECT is(coord.tick('2024-01-01 05:00Z') >= 1, true, 'a tick');
SELECT results_eq($$SELECT r.period_start, j.payload->'upstream' FROM coord.runs AS r JOIN coord.job AS j ON j.id = r.job_id
                     WHERE r.app = 'tap-sold'$$,
                  $$VALUES ('2024-01-01 03:00Z'::timestamptz, '{"@tap-old": [{"o": 3}]}'::jsonb)$$,
                  'the tick made the run of the signalled period, with its payload');

-- errors: every argument
SELECT throws_ok($$SELECT coord.signal(NULL, '2024-01-01Z')$$, '22004', 'signal must not be null', 'name NULL');
SELECT throws_ok($$SELECT coord.signal('', '2024-01-01Z')$$, '22023', 'signal name must have 1 to 48 bytes', 'empty name');
SELECT throws_ok($$SELECT coord.signal(repeat('s', 49), '2024-01-01Z')$$, '22023',
                 'signal name must have 1 to 48 bytes', 'name of 49 bytes');
SELECT throws_ok($$SELECT coord.signal('@tap-feed', '2024-01-01Z')$$, '22023', 'invalid signal name "@tap-feed"',
                 'a name with its @');
SELECT throws_ok($$SELECT coord.signal('tap-feed', NULL)$$, '22004', 'period_start must not be null', 'period_start NULL');
SELECT throws_ok($$SELECT coord.signal('tap-feed', 'infinity')$$, '22023', 'period_start must be a finite time',
                 'period_start infinity');
SELECT throws_ok($$SELECT coord.signal('tap-feed', '10000-01-01Z')$$, '22008', 'timestamp out of range for an app period',
                 'period_start after the year 9999');
SELECT throws_ok($$SELECT coord.signal('tap-feed', '2024-01-01Z', NULL)$$, '22004', 'payload must not be null',
                 'payload NULL');
SELECT throws_ok($$SELECT coord.signal('tap-feed', '2024-01-01Z', jsonb_build_object('p', repeat('p', 1048576)))$$,
                 '54000', 'signal payload is too large', 'payload over 1 MB');
SELECT throws_ok($$SELECT coord.define_app('x', depends => '{"@": "hourly"}')$$, '22023',
                 'invalid signal name "" in the depends of app "x"', 'depends on "@"');
SELECT throws_ok($$SELECT coord.define_app('x', depends => '{"@a b": "hourly"}')$$, '22023',
                 'invalid signal name "a b" in the depends of app "x"', 'depends on a bad signal name');
SELECT throws_ok($$SELECT coord.define_app('x', depends => '{"@feed": "minutely"}')$$, '22023',
                 'invalid period for the dependency of app "x" on app "@feed"', 'a signal dependency''s unknown period');
SELECT throws_ok($$SELECT coord.define_app('@x', 'hourly')$$, '22023', 'invalid app name "@x"', 'no app is named @...');
SELECT is((SELECT count(*)::int FROM coord.app_defs WHERE name = 'x'), 0, 'no refused definition was stored');

-- who may signal: coord_admin, and a role granted EXECUTE on coord.signal alone
CREATE ROLE tap_s_worker IN ROLE coord_worker;
CREATE ROLE tap_s_monitor IN ROLE coord_monitor;
CREATE ROLE tap_s_feeder;
GRANT EXECUTE ON FUNCTION coord.signal(text, timestamptz, jsonb) TO tap_s_feeder;
SET ROLE tap_s_worker;
SELECT throws_ok($$SELECT coord.signal('tap-feed', '2024-01-01 12:00Z')$$, '42501', NULL, 'worker: no signal');
RESET ROLE;
SET ROLE tap_s_monitor;
SELECT throws_ok($$SELECT coord.signal('tap-feed', '2024-01-01 12:00Z')$$, '42501', NULL, 'monitor: no signal');
SELECT is((SELECT count(*)::int FROM (SELECT name, period_start, signalled_at, signalled_by, apps FROM coord.signals) AS s)
          > 0, true, 'monitor: reads coord.signals');
SELECT throws_ok($$SELECT payload FROM coord.signals$$, '42501', NULL, 'monitor: not the payloads');
RESET ROLE;
SET ROLE tap_s_feeder;
SELECT ok(coord.signal('tap-feed', '2024-01-01 12:00Z', '{"by": "feeder"}'), 'a role granted coord.signal signals');
SELECT throws_ok($$SELECT name FROM coord.signals$$, '42501', NULL, 'and reads nothing');
RESET ROLE;
SELECT results_eq($$SELECT s.signalled_by, r.state FROM coord.signals AS s
                      JOIN coord.runs AS r ON r.app = 'tap-sh' AND r.period_start = s.period_start
                     WHERE s.name = 'tap-feed' AND s.period_start = '2024-01-01 12:00Z'$$,
                  $$VALUES ('tap_s_feeder'::text, 'ready'::text)$$, 'its signal made the run, recorded as its');

-- a dependent in a zone: the signal's periods are the dependent's, in its
-- zone.  2026-11-01 in Chicago is 25 hours, 05:00Z (00:00 CDT) to
-- 2026-11-02 06:00Z (00:00 CST), with two 01:00 hours (06:00Z CDT, 07:00Z
-- CST); a UTC-sized day of 24 hourly signals does not complete it.
SELECT lives_ok($$SELECT coord.define_app('tap-sz', 'daily', '{"@tap-cz": "hourly"}', queue => 'tap-szq',
                                          catchup_from => '2026-11-01 05:00Z', tz => 'America/Chicago')$$,
                'a daily app in America/Chicago on hourly signals');
SELECT is(coord.tick('2026-11-02 06:30Z') >= 0, true, 'a tick after its local day (the horizon)');
SELECT is((SELECT count(*)::int FROM generate_series(0, 23) AS h
            WHERE h <> 2 AND coord.signal('tap-cz', '2026-11-01 05:00Z'::timestamptz + h * interval '1 hour',
                                          jsonb_build_object('h', h))), 23,
          '23 hourly signals, 00:00 CDT to 22:00 CST, all but the second 01:00 hour');
SELECT is((SELECT count(*)::int FROM coord.runs WHERE app = 'tap-sz'), 0, 'no daily run');
SELECT ok(coord.signal('tap-cz', '2026-11-01 07:30Z', '{"h": 2}'), 'the second 01:00 hour (01:30 CST)');
SELECT is((SELECT count(*)::int FROM coord.runs WHERE app = 'tap-sz'), 0,
          'still no daily run: 24 hours are met, the day has 25');
SELECT ok(coord.signal('tap-cz', '2026-11-02 06:00Z', '{"h": "next day"}'), 'a signal at 00:00 CST of 2026-11-02');
SELECT is((SELECT count(*)::int FROM coord.runs WHERE app = 'tap-sz'), 0, 'belongs to the next local day');
SELECT ok(coord.signal('tap-cz', '2026-11-02 05:15Z', '{"h": 24}'), 'the 25th hour (23:15 CST)');
SELECT results_eq($$SELECT r.period_start, r.period_end, j.key FROM coord.runs AS r JOIN coord.job AS j ON j.id = r.job_id
                     WHERE r.app = 'tap-sz'$$,
                  $$VALUES ('2026-11-01 05:00Z'::timestamptz, '2026-11-02 06:00Z'::timestamptz,
                            '2026-11-01-0000-0500-tap-sz'::text)$$,
                  'the last signal makes the run of the 25-hour local day');
SELECT results_eq($$SELECT jsonb_array_length(j.payload->'upstream'->'@tap-cz'), j.payload->'upstream'->'@tap-cz'->2,
                           j.payload->'upstream'->'@tap-cz'->24
                      FROM coord.runs AS r JOIN coord.job AS j ON j.id = r.job_id WHERE r.app = 'tap-sz'$$,
                  $$VALUES (25, '{"h": 2}'::jsonb, '{"h": 24}'::jsonb)$$,
                  'its payload: the 25 payloads of its day in period order, not the next day''s');
SELECT ok(NOT coord.signal('tap-cz', '2026-11-01 07:30Z'), 'the same signal again: false');
SELECT is((SELECT count(*)::int FROM coord.runs WHERE app = 'tap-sz'), 1, 'one run for the day');
-- spring forward: 2026-03-08 in Chicago is 23 hours, 06:00Z to 2026-03-09 05:00Z
SELECT lives_ok($$SELECT coord.define_app('tap-sz3', 'daily', '{"@tap-cz3": "hourly"}', queue => 'tap-szq',
                                          catchup_from => '2026-03-08 06:00Z', tz => 'America/Chicago')$$,
                'a daily Chicago app from 2026-03-08');
SELECT is((SELECT count(*)::int FROM generate_series(0, 22) AS h
            WHERE coord.signal('tap-cz3', '2026-03-08 06:00Z'::timestamptz + h * interval '1 hour')), 23,
          '23 hourly signals, 00:00 CST to 23:00 CDT');
SELECT results_eq($$SELECT period_start, period_end FROM coord.runs WHERE app = 'tap-sz3'$$,
                  $$VALUES ('2026-03-08 06:00Z'::timestamptz, '2026-03-09 05:00Z'::timestamptz)$$,
                  'complete the 23-hour local day');
-- Kolkata (+05:30): the local hours are not UTC hours; the day of
-- 2026-01-01 runs from 2025-12-31 18:30Z, its hours start at :30 UTC
SELECT lives_ok($$SELECT coord.define_app('tap-szk', 'daily', '{"@tap-ck": "hourly"}', queue => 'tap-szq',
                                          catchup_from => '2025-12-31 18:30Z', tz => 'Asia/Kolkata')$$,
                'a daily Kolkata app on hourly signals');
SELECT ok(coord.signal('tap-ck', '2025-12-31 18:15Z'), 'a signal at 23:45 IST of the day before');
SELECT is((SELECT count(*)::int FROM generate_series(0, 23) AS h
            WHERE coord.signal('tap-ck', '2025-12-31 18:30Z'::timestamptz + h * interval '1 hour')), 24,
          '24 signals at the local hours 00:00 to 23:00 IST');
SELECT results_eq($$SELECT r.period_start, r.period_end, j.key, jsonb_array_length(j.payload->'upstream'->'@tap-ck')
                      FROM coord.runs AS r JOIN coord.job AS j ON j.id = r.job_id WHERE r.app = 'tap-szk'$$,
                  $$VALUES ('2025-12-31 18:30Z'::timestamptz, '2026-01-01 18:30Z'::timestamptz,
                            '2026-01-01-0000+0530-tap-szk'::text, 24)$$,
                  'complete the local day, judged in the app''s hours (UTC hours would need 18:00Z to 19:00Z)');

SELECT * FROM finish();
ROLLBACK;
