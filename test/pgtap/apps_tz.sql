-- pgTAP: apps in a time zone (coord.define_app's tz and deadline, issue 18):
-- every new argument and its errors, run keys with the UTC offset, the
-- refusal to move an app with runs to another zone, and an hourly -> daily
-- -> weekly chain in America/Chicago driven by coord.tick(now) with
-- explicit times over both 2026 transitions (2026-03-08, 2026-11-01).
-- Nothing depends on the wall clock or the session's TimeZone.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = warning;
SET TimeZone = 'Pacific/Auckland';
BEGIN;
SELECT plan(67);

-- surface
SELECT function_returns('coord', 'define_app',
       ARRAY['text', 'text', 'jsonb', 'interval', 'text', 'text', 'timestamp with time zone', 'jsonb', 'text', 'interval'],
       'void');
SELECT is((SELECT count(*)::int FROM pg_proc WHERE pronamespace = 'coord'::regnamespace AND proname = 'define_app'), 1,
          'one coord.define_app: the 0.2.0 signature is gone');
SELECT col_type_is('coord', 'app_defs', 'tz', 'text', 'app_defs.tz');
SELECT col_default_is('coord', 'app_defs', 'tz', 'UTC', 'app_defs.tz defaults to UTC');
SELECT col_type_is('coord', 'app_defs', 'deadline', 'interval', 'app_defs.deadline');
SELECT ok(NOT has_function_privilege('coord_worker',
          'coord.define_app(text, text, jsonb, interval, text, text, timestamptz, jsonb, text, interval)', 'EXECUTE')
          AND has_function_privilege('coord_admin',
          'coord.define_app(text, text, jsonb, interval, text, text, timestamptz, jsonb, text, interval)', 'EXECUTE'),
          'define_app: coord_admin only');

-- a call written for 0.2.0 (eight positional arguments) means UTC, no deadline
SELECT lives_ok($$SELECT coord.define_app('tz-old', 'hourly', '{}', NULL, NULL, 'tzq-old', '2026-03-08 07:00Z', '{}')$$,
                'the 0.2.0 call still works');
SELECT results_eq($$SELECT tz, deadline FROM coord.app_defs WHERE name = 'tz-old'$$,
                  $$VALUES ('UTC'::text, NULL::interval)$$, 'and means UTC without a deadline');
SELECT is(coord.tick('2026-03-08 09:05Z'), 3, 'its runs: 07:00, 08:00 and 09:00 UTC');
SELECT is((SELECT string_agg(j.key, ' ' ORDER BY j.key) FROM coord.job AS j WHERE j.queue = 'tzq-old'),
          '2026-03-08-0700-tz-old 2026-03-08-0800-tz-old 2026-03-08-0900-tz-old', 'UTC keys are as in 0.2.0');
SELECT ok(coord.drop_app('tz-old'), 'drop it');

-- tz: PostgreSQL's names, stored as it spells them
SELECT lives_ok($$SELECT coord.define_app('tz-a', 'daily', queue => 'tzq-a', tz => 'america/chicago',
                                          deadline => '2 hours')$$, 'a daily app in america/chicago');
SELECT results_eq($$SELECT tz, deadline, first_period FROM coord.app_defs WHERE name = 'tz-a'$$,
                  $$VALUES ('America/Chicago'::text, '2 hours'::interval, NULL::timestamptz)$$,
                  'stored as America/Chicago, with its deadline');
SELECT throws_ok($$SELECT coord.define_app('x', 'daily', tz => 'Mars/Olympus_Mons')$$, '22023',
                 'time zone "Mars/Olympus_Mons" not recognized', 'an unknown zone');
SELECT throws_ok($$SELECT coord.define_app('x', 'daily', tz => '')$$, '22023',
                 'time zone "" not recognized', 'an empty zone name');
SELECT throws_ok($$SELECT coord.define_app('x', 'daily', tz => NULL)$$, '22004', 'tz must not be null', 'tz NULL');
-- "appears to use leap seconds" where the system's zoneinfo has right/, else "not recognized"
SELECT throws_ok($$SELECT coord.define_app('x', 'daily', tz => 'right/UTC')$$, '22023', NULL,
                 'a zone with leap seconds is refused');
SELECT throws_ok($$SELECT coord.define_app('x', 'daily', tz => repeat('A', 256))$$, '22023',
                 'time zone name is longer than 255 bytes', 'a zone name over 255 bytes');

-- schedules and apps resolve zone names alike (common_tz.c): the same
-- SQLSTATE and message for each bad name
CREATE FUNCTION pg_temp.tap_tz_error(q text) RETURNS text LANGUAGE plpgsql AS $f$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || SQLERRM;
END
$f$;
SELECT results_eq(
  $$SELECT pg_temp.tap_tz_error(format('SELECT coord.define_app(%L, %L, tz => %L)', 'x', 'daily', n))
      FROM unnest(ARRAY['Mars/Olympus_Mons', '', repeat('A', 256), 'right/UTC', '../../etc/passwd']) WITH ORDINALITY AS u(n, i)
     ORDER BY i$$,
  $$SELECT pg_temp.tap_tz_error(format('SELECT coord.cron_next(%L, %L, %L)', '0 0 * * *', '2026-01-01Z', n))
      FROM unnest(ARRAY['Mars/Olympus_Mons', '', repeat('A', 256), 'right/UTC', '../../etc/passwd']) WITH ORDINALITY AS u(n, i)
     ORDER BY i$$,
  'define_app and cron_next: the same errors for bad zone names');
SELECT results_eq(
  $$SELECT pg_temp.tap_tz_error(format('SELECT coord.schedule(%L, %L, cron => %L, tz => %L)', 'x', 'q', '0 0 * * *', n))
      FROM unnest(ARRAY['Mars/Olympus_Mons', '', repeat('A', 256), 'right/UTC', '../../etc/passwd']) WITH ORDINALITY AS u(n, i)
     ORDER BY i$$,
  $$SELECT pg_temp.tap_tz_error(format('SELECT coord.define_app(%L, %L, tz => %L)', 'x', 'daily', n))
      FROM unnest(ARRAY['Mars/Olympus_Mons', '', repeat('A', 256), 'right/UTC', '../../etc/passwd']) WITH ORDINALITY AS u(n, i)
     ORDER BY i$$,
  'schedule and define_app: the same errors for bad zone names');
SELECT is((SELECT count(*)::int FROM unnest(ARRAY['Mars/Olympus_Mons', '', repeat('A', 256), 'right/UTC', '../../etc/passwd']) AS n
            WHERE pg_temp.tap_tz_error(format('SELECT coord.define_app(%L, %L, tz => %L)', 'x', 'daily', n)) LIKE '22023 time zone %'),
          5, 'each is 22023 with a time zone message');

-- deadline: positive and finite
SELECT throws_ok($$SELECT coord.define_app('x', 'daily', deadline => '0')$$, '22023',
                 'deadline of app "x" must be positive', 'deadline zero');
SELECT throws_ok($$SELECT coord.define_app('x', 'daily', deadline => '-1 hour')$$, '22023',
                 'deadline of app "x" must be positive', 'deadline negative');
SELECT throws_ok($$SELECT coord.define_app('x', 'daily', deadline => '1 day -25 hours')$$, '22023',
                 'deadline of app "x" must be positive', 'deadline negative in sum');
SELECT throws_ok($$SELECT coord.define_app('x', 'daily', deadline => '178000000 years')$$, '22023',
                 'deadline of app "x" must be finite', 'deadline beyond microseconds');
SELECT CASE WHEN current_setting('server_version_num')::int >= 170000
            THEN throws_ok($$SELECT coord.define_app('x', 'daily', deadline => 'infinity')$$, '22023',
                           'deadline of app "x" must be finite', 'deadline infinity (17 and later)')
            ELSE pass('deadline infinity: no infinite intervals before 17') END;
SELECT is((SELECT count(*)::int FROM coord.app_defs WHERE name = 'x'), 0, 'nothing stored by the failed calls');
SELECT lives_ok($$SELECT coord.define_app('tz-a', 'daily', queue => 'tzq-a', tz => 'America/Chicago')$$,
                'defined again without a deadline');
SELECT is((SELECT deadline FROM coord.app_defs WHERE name = 'tz-a'), NULL::interval, 'the deadline is gone');

-- changing the zone: free before any run (the periods start over), refused after
SELECT lives_ok($$SELECT coord.define_app('tz-a', 'daily', queue => 'tzq-a', tz => 'America/Chicago',
                                          catchup_from => '2026-03-07 12:00Z')$$, 'a catch-up time');
SELECT is((SELECT first_period FROM coord.app_defs WHERE name = 'tz-a'), '2026-03-07 06:00Z'::timestamptz,
          'its first period: local midnight in Chicago');
SELECT lives_ok($$SELECT coord.define_app('tz-a', 'daily', queue => 'tzq-a', tz => 'Europe/Berlin')$$,
                'another zone before any run');
SELECT results_eq($$SELECT tz, first_period, next_period FROM coord.app_defs WHERE name = 'tz-a'$$,
                  $$VALUES ('Europe/Berlin'::text, NULL::timestamptz, NULL::timestamptz)$$,
                  'starts over: the old periods have other boundaries');
SELECT lives_ok($$SELECT coord.define_app('tz-a', 'daily', queue => 'tzq-a', tz => 'Europe/Berlin',
                                          catchup_from => '2026-03-29 12:00Z')$$, 'a catch-up time in Berlin');
SELECT is(coord.tick('2026-03-29 23:00Z'), 2, 'a tick: the Berlin days of 2026-03-29 and 03-30');
SELECT results_eq($$SELECT r.period_start, r.period_end, j.key, j.origin FROM coord.runs AS r
                     JOIN coord.job AS j ON j.id = r.job_id WHERE r.app = 'tz-a' ORDER BY r.period_start$$,
                  $$VALUES ('2026-03-28 23:00Z'::timestamptz, '2026-03-29 22:00Z'::timestamptz,
                            '2026-03-29-0000+0100-tz-a'::text, 'a:tz-a:2026-03-29-0000+0100'::text),
                           ('2026-03-29 22:00Z', '2026-03-30 22:00Z', '2026-03-30-0000+0200-tz-a',
                            'a:tz-a:2026-03-30-0000+0200')$$,
                  'Berlin days: a 23-hour spring-forward day; keys and origins carry the local time and offset');
SELECT throws_ok($$SELECT coord.define_app('tz-a', 'daily', queue => 'tzq-a', tz => 'America/Chicago')$$, '55000',
                 'cannot change the time zone of app "tz-a" from Europe/Berlin to America/Chicago because it has runs',
                 'another zone once it has runs');
SELECT lives_ok($$SELECT coord.define_app('tz-a', 'daily', queue => 'tzq-a', tz => 'europe/berlin')$$,
                'the same zone spelled otherwise is no change');
SELECT ok(coord.drop_app('tz-a'), 'the way the hint names: drop it');
SELECT lives_ok($$SELECT coord.define_app('tz-a', 'daily', queue => 'tzq-a', tz => 'America/Chicago')$$,
                'and define it again in the other zone');
SELECT lives_ok($$SELECT coord.define_app('tz-u', 'hourly', queue => 'tzq-u', catchup_from => '2026-03-08 07:00Z')$$,
                'a UTC app');
SELECT is(coord.tick('2026-03-08 07:05Z'), 2, 'a tick: its run, and tz-a''s first (its Chicago day of 2026-03-08)');
SELECT lives_ok($$SELECT coord.define_app('tz-u', 'hourly', queue => 'tzq-u', tz => 'Etc/UTC')$$,
                'to Etc/UTC with runs: the same periods');
SELECT is((SELECT j.key FROM coord.job AS j WHERE j.queue = 'tzq-u'), '2026-03-08-0700-tz-u',
          'a zone that is UTC always keeps UTC''s keys');
SELECT ok(coord.drop_app('tz-u') AND coord.drop_app('tz-a'), 'drop both');

-- Kolkata (+05:30) and Lord_Howe (a 30-minute change): hourly keys
SELECT lives_ok($$SELECT coord.define_app('tz-k', 'hourly', queue => 'tzq-k', tz => 'Asia/Kolkata',
                                          catchup_from => '2026-03-08 12:00Z')$$, 'an hourly app in Kolkata');
SELECT lives_ok($$SELECT coord.define_app('tz-l', 'hourly', queue => 'tzq-l', tz => 'Australia/Lord_Howe',
                                          catchup_from => '2026-10-03 15:00Z')$$, 'and one in Lord_Howe');
SELECT is(coord.tick('2026-10-03 16:05Z'), 24 + 3, 'a tick: Kolkata catches up 24 hours, Lord_Howe makes 3 runs');
SELECT results_eq($$SELECT r.period_start, r.period_end, j.key FROM coord.runs AS r
                     JOIN coord.job AS j ON j.id = r.job_id WHERE r.app = 'tz-k' ORDER BY r.period_start LIMIT 1$$,
                  $$VALUES ('2026-03-08 11:30Z'::timestamptz, '2026-03-08 12:30Z'::timestamptz,
                            '2026-03-08-1700+0530-tz-k'::text)$$, 'Kolkata hours start at :30 UTC');
SELECT results_eq($$SELECT r.period_start, r.period_end, j.key FROM coord.runs AS r
                     JOIN coord.job AS j ON j.id = r.job_id WHERE r.app = 'tz-l' ORDER BY r.period_start$$,
                  $$VALUES ('2026-10-03 14:30Z'::timestamptz, '2026-10-03 15:30Z'::timestamptz, '2026-10-04-0100+1030-tz-l'::text),
                           ('2026-10-03 15:30Z', '2026-10-03 16:00Z', '2026-10-04-0230+1100-tz-l'),
                           ('2026-10-03 16:00Z', '2026-10-03 17:00Z', '2026-10-04-0300+1100-tz-l')$$,
                  'Lord_Howe: 02:00 +10:30 jumps to 02:30 +11:00, so that hour is 30 minutes');
SELECT ok(coord.drop_app('tz-k') AND coord.drop_app('tz-l'), 'drop both');

-- The chain: hourly -> daily -> weekly in Chicago, each run completed as soon as it is made.
CREATE FUNCTION pg_temp.drive(queue text, t0 timestamptz, t1 timestamptz) RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
  t timestamptz := t0;
  c record;
  n integer := 0;
  more boolean;
BEGIN
  WHILE t <= t1 LOOP
    PERFORM coord.tick(t);
    LOOP
      more := false;
      FOR c IN SELECT * FROM coord.claim(queue, 100, '1 hour') LOOP
        PERFORM coord.complete(c.id, c.token, pg_catalog.jsonb_build_object('key', c.key));
        more := true;
        n := n + 1;
      END LOOP;
      EXIT WHEN NOT more;
    END LOOP;
    t := t + interval '1 hour';
  END LOOP;
  RETURN n;
END
$fn$;

-- spring: Monday 2026-03-02 00:00 CST is 06:00Z; 2026-03-08 has 23 hours
SELECT lives_ok($$SELECT coord.define_app('sp-h', 'hourly', queue => 'tzq', tz => 'America/Chicago',
                                          catchup_from => '2026-03-02 06:00Z'),
                         coord.define_app('sp-d', 'daily', '{"sp-h": "hourly"}', queue => 'tzq', tz => 'America/Chicago',
                                          catchup_from => '2026-03-02 06:00Z'),
                         coord.define_app('sp-w', 'weekly', '{"sp-d": "daily"}', queue => 'tzq', tz => 'America/Chicago',
                                          catchup_from => '2026-03-02 06:00Z')$$, 'the spring chain');
SELECT cmp_ok(pg_temp.drive('tzq', '2026-03-02 06:00Z', '2026-03-09 03:00Z'), '>', 0, 'ticks to 2026-03-08 22:00 CDT');
SELECT is((SELECT count(*)::int FROM coord.runs WHERE app = 'sp-w'), 0,
          'no weekly run while the last hour of the week has not begun');
SELECT is((SELECT count(*)::int FROM coord.runs WHERE app = 'sp-d' AND period_start = '2026-03-08 06:00Z'), 0,
          'nor a run for 2026-03-08');
SELECT cmp_ok(pg_temp.drive('tzq', '2026-03-09 04:00Z', '2026-03-16 06:00Z'), '>', 0, 'ticks on to 2026-03-16 01:00 CDT');
SELECT results_eq($$SELECT r.period_start, r.period_end, j.key, pg_catalog.jsonb_array_length(j.payload->'upstream'->'sp-h')
                      FROM coord.runs AS r JOIN coord.job_history AS j ON j.id = r.job_id
                     WHERE r.app = 'sp-d' AND r.period_start BETWEEN '2026-03-07Z' AND '2026-03-10Z' ORDER BY r.period_start$$,
                  $$VALUES ('2026-03-07 06:00Z'::timestamptz, '2026-03-08 06:00Z'::timestamptz, '2026-03-07-0000-0600-sp-d'::text, 24),
                           ('2026-03-08 06:00Z', '2026-03-09 05:00Z', '2026-03-08-0000-0600-sp-d', 23),
                           ('2026-03-09 05:00Z', '2026-03-10 05:00Z', '2026-03-09-0000-0500-sp-d', 24)$$,
                  'the local day of 2026-03-08 has 23 hours and waits for exactly its 23 hourly runs');
SELECT is((SELECT string_agg(pg_catalog.substr(j.key, 12, 9), ' ' ORDER BY r.period_start)
             FROM coord.runs AS r JOIN coord.job_history AS j ON j.id = r.job_id
            WHERE r.app = 'sp-h' AND r.period_start >= '2026-03-08 06:00Z' AND r.period_start < '2026-03-08 10:00Z'),
          '0000-0600 0100-0600 0300-0500 0400-0500', 'no 02:00 hour that night');
SELECT results_eq($$SELECT r.period_start, r.period_end, r.state, pg_catalog.jsonb_array_length(j.payload->'upstream'->'sp-d')
                      FROM coord.runs AS r JOIN coord.job_history AS j ON j.id = r.job_id
                     WHERE r.app = 'sp-w' ORDER BY r.period_start$$,
                  $$VALUES ('2026-03-02 06:00Z'::timestamptz, '2026-03-09 05:00Z'::timestamptz, 'done'::text, 7),
                           ('2026-03-09 05:00Z', '2026-03-16 05:00Z', 'done', 7)$$,
                  'one weekly run per local week (167 and 168 hours), each after its 7 days');
SELECT is((SELECT count(*)::int FROM coord.runs WHERE app IN ('sp-h', 'sp-d', 'sp-w') AND state <> 'done'), 0,
          'every run of the spring chain is done');
SELECT ok(coord.drop_app('sp-w') AND coord.drop_app('sp-d') AND coord.drop_app('sp-h'), 'drop the spring chain');

-- fall: Monday 2026-10-26 00:00 CDT is 05:00Z; 2026-11-01 has 25 hours, two of them 01:00
SELECT lives_ok($$SELECT coord.define_app('fa-h', 'hourly', queue => 'tzq', tz => 'America/Chicago',
                                          catchup_from => '2026-10-26 05:00Z'),
                         coord.define_app('fa-d', 'daily', '{"fa-h": "hourly"}', queue => 'tzq', tz => 'America/Chicago',
                                          catchup_from => '2026-10-26 05:00Z'),
                         coord.define_app('fa-w', 'weekly', '{"fa-d": "daily"}', queue => 'tzq', tz => 'America/Chicago',
                                          catchup_from => '2026-10-26 05:00Z')$$, 'the fall chain');
SELECT cmp_ok(pg_temp.drive('tzq', '2026-10-26 05:00Z', '2026-11-09 06:00Z'), '>', 0, 'ticks over two local weeks');
SELECT results_eq($$SELECT r.period_start, r.period_end, j.key, pg_catalog.jsonb_array_length(j.payload->'upstream'->'fa-h')
                      FROM coord.runs AS r JOIN coord.job_history AS j ON j.id = r.job_id
                     WHERE r.app = 'fa-d' AND r.period_start BETWEEN '2026-10-31Z' AND '2026-11-03Z' ORDER BY r.period_start$$,
                  $$VALUES ('2026-10-31 05:00Z'::timestamptz, '2026-11-01 05:00Z'::timestamptz, '2026-10-31-0000-0500-fa-d'::text, 24),
                           ('2026-11-01 05:00Z', '2026-11-02 06:00Z', '2026-11-01-0000-0500-fa-d', 25),
                           ('2026-11-02 06:00Z', '2026-11-03 06:00Z', '2026-11-02-0000-0600-fa-d', 24)$$,
                  'the local day of 2026-11-01 has 25 hours and waits for exactly its 25 hourly runs');
SELECT results_eq($$SELECT r.period_start, j.key, j.origin FROM coord.runs AS r JOIN coord.job_history AS j ON j.id = r.job_id
                     WHERE r.app = 'fa-h' AND r.period_start IN ('2026-11-01 06:00Z', '2026-11-01 07:00Z') ORDER BY 1$$,
                  $$VALUES ('2026-11-01 06:00Z'::timestamptz, '2026-11-01-0100-0500-fa-h'::text, 'a:fa-h:2026-11-01-0100-0500'::text),
                           ('2026-11-01 07:00Z', '2026-11-01-0100-0600-fa-h', 'a:fa-h:2026-11-01-0100-0600')$$,
                  'the two 01:00 hours: keys and origins told apart by the offset');
SELECT results_eq($$SELECT r.period_start, r.period_end, r.state, pg_catalog.jsonb_array_length(j.payload->'upstream'->'fa-d')
                      FROM coord.runs AS r JOIN coord.job_history AS j ON j.id = r.job_id
                     WHERE r.app = 'fa-w' ORDER BY r.period_start$$,
                  $$VALUES ('2026-10-26 05:00Z'::timestamptz, '2026-11-02 06:00Z'::timestamptz, 'done'::text, 7),
                           ('2026-11-02 06:00Z', '2026-11-09 06:00Z', 'done', 7)$$,
                  'one weekly run per local week (169 and 168 hours), each after its 7 days');
SELECT is((SELECT count(*)::int FROM coord.runs WHERE app = 'fa-h'), 14 * 24 + 1 + 1,
          'hourly runs: 14 local days of 24 hours, one more on 2026-11-01, and the tick at 2026-11-09 00:00 CST');

SELECT * FROM finish();
ROLLBACK;
