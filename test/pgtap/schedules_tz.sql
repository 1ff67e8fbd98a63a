-- pgTAP: schedules and cron_next in a time zone (issue 18; docs/schedules.md,
-- "Time zones").  Table-driven coord.cron_next across the
-- transitions of America/Chicago, America/New_York, Europe/Berlin,
-- Australia/Lord_Howe (a 30-minute shift) and Asia/Kolkata (+05:30), and
-- fires per local day of wildcard and fixed-time expressions (issue 23),
-- every expected value checked independently with Python's zoneinfo (a
-- minute-by-minute scan) and PostgreSQL's AT TIME ZONE; a schedule in
-- America/Chicago driven by coord.tick(now) with explicit times across both
-- 2026 transitions; the
-- finish hook across the 2100 transitions (instances cancelled, which the
-- real clock cannot reorder); every error with its SQLSTATE.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = warning;
SET TimeZone = 'UTC';
BEGIN;
SELECT plan(118);

-- surface: tz is the new last argument, DEFAULT 'UTC'; the view shows it
SELECT function_returns('coord', 'cron_next', ARRAY['text', 'timestamp with time zone', 'text'],
       'timestamp with time zone');
SELECT function_returns('coord', 'schedule',
       ARRAY['text', 'text', 'interval', 'text', 'jsonb', 'timestamp with time zone', 'boolean', 'text', 'text'], 'bigint');
SELECT is((SELECT count(*)::int FROM pg_proc WHERE pronamespace = 'coord'::regnamespace
            AND proname IN ('schedule', 'cron_next')), 2, 'one coord.schedule and one coord.cron_next');
SELECT is((SELECT pg_get_function_arguments('coord.cron_next(text, timestamptz, text)'::regprocedure)),
          'cron text, after timestamp with time zone DEFAULT now(), tz text DEFAULT ''UTC''::text',
          'cron_next(cron, after DEFAULT now(), tz DEFAULT ''UTC'')');
SELECT ok((SELECT pg_get_function_arguments('coord.schedule(text, text, interval, text, jsonb, timestamptz, boolean, text, text)'::regprocedure))
          LIKE '%, host text DEFAULT NULL::text, tz text DEFAULT ''UTC''::text', 'schedule(..., host, tz DEFAULT ''UTC'')');
SELECT volatility_is('coord', 'cron_next', ARRAY['text', 'timestamp with time zone', 'text'], 'stable');
SELECT is((SELECT proparallel::text FROM pg_proc WHERE oid = 'coord.cron_next(text, timestamptz, text)'::regprocedure),
          's', 'cron_next is parallel safe');
SELECT ok(obj_description('coord.cron_next(text, timestamptz, text)'::regprocedure, 'pg_proc') LIKE '%wall time of tz%'
          AND obj_description('coord.schedule(text, text, interval, text, jsonb, timestamptz, boolean, text, text)'::regprocedure,
                              'pg_proc') LIKE '%wall time of tz%'
          AND col_description('coord.schedule_defs'::regclass,
                              (SELECT attnum FROM pg_attribute WHERE attrelid = 'coord.schedule_defs'::regclass
                                 AND attname = 'tz')) IS NOT NULL,
          'the comments speak of the zone');
SELECT has_column('coord', 'schedules', 'tz', 'the view coord.schedules has tz');
SELECT col_not_null('coord', 'schedule_defs', 'tz', 'schedule_defs.tz is NOT NULL');
SELECT col_default_is('coord', 'schedule_defs', 'tz', 'UTC', 'schedule_defs.tz defaults to UTC');
SELECT ok(has_function_privilege('coord_worker', 'coord.cron_next(text, timestamptz, text)', 'EXECUTE')
          AND has_function_privilege('coord_monitor', 'coord.cron_next(text, timestamptz, text)', 'EXECUTE')
          AND has_function_privilege('coord_admin', 'coord.schedule(text, text, interval, text, jsonb, timestamptz, boolean, text, text)', 'EXECUTE')
          AND NOT has_function_privilege('coord_worker', 'coord.schedule(text, text, interval, text, jsonb, timestamptz, boolean, text, text)', 'EXECUTE'),
          'grants: cron_next to workers and monitors, schedule to admins only');
SELECT ok(has_column_privilege('coord_monitor', 'coord.schedules', 'tz', 'SELECT'), 'a monitor reads schedules.tz');

-- old calls mean what they meant: UTC
SELECT is(coord.cron_next('30 2 * * *', '2026-03-07T12:00:00Z'), '2026-03-08T02:30:00Z'::timestamptz,
          'cron_next without tz is UTC');
SELECT is(coord.cron_next('30 2 * * *', '2026-03-07T12:00:00Z', 'UTC'), '2026-03-08T02:30:00Z'::timestamptz,
          'cron_next with tz UTC');
SELECT is(coord.cron_next('0 0 * * *', '1960-01-01Z'), '1960-01-02Z'::timestamptz,
          'a fire time before 1970 (it was NULL before 0.3.0)');

-- table: cron_next across each zone's 2026 transitions
-- America/Chicago: 2026-03-08 02:00 CST -> 03:00 CDT (08:00Z); 2026-11-01 02:00 CDT -> 01:00 CST (07:00Z)
SELECT is(coord.cron_next('30 2 * * *', '2026-03-07T12:00:00Z', 'America/Chicago'), '2026-03-08T08:00:00Z'::timestamptz, 'America/Chicago: 30 2 * * * after 2026-03-07T12:00:00Z');
SELECT is(coord.cron_next('30 2 * * *', '2026-03-08T08:00:00Z', 'America/Chicago'), '2026-03-09T07:30:00Z'::timestamptz, 'America/Chicago: 30 2 * * * after 2026-03-08T08:00:00Z');
SELECT is(coord.cron_next('0 2 * * *', '2026-03-07T12:00:00Z', 'America/Chicago'), '2026-03-08T08:00:00Z'::timestamptz, 'America/Chicago: 0 2 * * * after 2026-03-07T12:00:00Z');
SELECT is(coord.cron_next('0 3 * * *', '2026-03-07T12:00:00Z', 'America/Chicago'), '2026-03-08T08:00:00Z'::timestamptz, 'America/Chicago: 0 3 * * * after 2026-03-07T12:00:00Z');
SELECT is(coord.cron_next('59 1 * * *', '2026-03-07T12:00:00Z', 'America/Chicago'), '2026-03-08T07:59:00Z'::timestamptz, 'America/Chicago: 59 1 * * * after 2026-03-07T12:00:00Z');
SELECT is(coord.cron_next('*/15 * * * *', '2026-03-08T07:45:00Z', 'America/Chicago'), '2026-03-08T08:00:00Z'::timestamptz, 'America/Chicago: */15 * * * * after 2026-03-08T07:45:00Z');
SELECT is(coord.cron_next('*/15 * * * *', '2026-03-08T08:00:00Z', 'America/Chicago'), '2026-03-08T08:15:00Z'::timestamptz, 'America/Chicago: */15 * * * * after 2026-03-08T08:00:00Z');
SELECT is(coord.cron_next('0 0 * * *', '2026-03-07T12:00:00Z', 'America/Chicago'), '2026-03-08T06:00:00Z'::timestamptz, 'America/Chicago: 0 0 * * * after 2026-03-07T12:00:00Z');
SELECT is(coord.cron_next('0 0 * * *', '2026-03-08T06:00:00Z', 'America/Chicago'), '2026-03-09T05:00:00Z'::timestamptz, 'America/Chicago: 0 0 * * * after 2026-03-08T06:00:00Z');
SELECT is(coord.cron_next('0 9 * * 1', '2026-03-06T00:00:00Z', 'America/Chicago'), '2026-03-09T14:00:00Z'::timestamptz, 'America/Chicago: 0 9 * * 1 after 2026-03-06T00:00:00Z');
SELECT is(coord.cron_next('0 1 * * *', '2026-10-31T12:00:00Z', 'America/Chicago'), '2026-11-01T06:00:00Z'::timestamptz, 'America/Chicago: 0 1 * * * after 2026-10-31T12:00:00Z');
SELECT is(coord.cron_next('30 1 * * *', '2026-11-01T06:30:00Z', 'America/Chicago'), '2026-11-02T07:30:00Z'::timestamptz, 'America/Chicago: 30 1 * * * after 2026-11-01T06:30:00Z');
SELECT is(coord.cron_next('45 1 * * *', '2026-11-01T06:50:00Z', 'America/Chicago'), '2026-11-02T07:45:00Z'::timestamptz, 'America/Chicago: 45 1 * * * after 2026-11-01T06:50:00Z');
SELECT is(coord.cron_next('55 1 * * *', '2026-11-01T06:50:00Z', 'America/Chicago'), '2026-11-01T06:55:00Z'::timestamptz, 'America/Chicago: 55 1 * * * after 2026-11-01T06:50:00Z');
SELECT is(coord.cron_next('*/30 * * * *', '2026-11-01T06:30:00Z', 'America/Chicago'), '2026-11-01T07:00:00Z'::timestamptz, 'America/Chicago: */30 * * * * after 2026-11-01T06:30:00Z');
SELECT is(coord.cron_next('0 * * * *', '2026-11-01T06:00:00Z', 'America/Chicago'), '2026-11-01T07:00:00Z'::timestamptz, 'America/Chicago: 0 * * * * after 2026-11-01T06:00:00Z');
SELECT is(coord.cron_next('0 2 * * *', '2026-10-31T12:00:00Z', 'America/Chicago'), '2026-11-01T08:00:00Z'::timestamptz, 'America/Chicago: 0 2 * * * after 2026-10-31T12:00:00Z');
SELECT is(coord.cron_next('0 0 * * *', '2026-11-01T05:00:00Z', 'America/Chicago'), '2026-11-02T06:00:00Z'::timestamptz, 'America/Chicago: 0 0 * * * after 2026-11-01T05:00:00Z');
SELECT is(coord.cron_next('0 0 1 * *', '2026-10-15T00:00:00Z', 'America/Chicago'), '2026-11-01T05:00:00Z'::timestamptz, 'America/Chicago: 0 0 1 * * after 2026-10-15T00:00:00Z');
-- Europe/Berlin: 2026-03-29 02:00 CET -> 03:00 CEST (01:00Z); 2026-10-25 03:00 CEST -> 02:00 CET (01:00Z)
SELECT is(coord.cron_next('30 2 * * *', '2026-03-28T12:00:00Z', 'Europe/Berlin'), '2026-03-29T01:00:00Z'::timestamptz, 'Europe/Berlin: 30 2 * * * after 2026-03-28T12:00:00Z');
SELECT is(coord.cron_next('30 2 * * *', '2026-03-29T01:00:00Z', 'Europe/Berlin'), '2026-03-30T00:30:00Z'::timestamptz, 'Europe/Berlin: 30 2 * * * after 2026-03-29T01:00:00Z');
SELECT is(coord.cron_next('0 3 * * *', '2026-03-28T12:00:00Z', 'Europe/Berlin'), '2026-03-29T01:00:00Z'::timestamptz, 'Europe/Berlin: 0 3 * * * after 2026-03-28T12:00:00Z');
SELECT is(coord.cron_next('30 2 * * *', '2026-10-24T12:00:00Z', 'Europe/Berlin'), '2026-10-25T00:30:00Z'::timestamptz, 'Europe/Berlin: 30 2 * * * after 2026-10-24T12:00:00Z');
SELECT is(coord.cron_next('30 2 * * *', '2026-10-25T00:30:00Z', 'Europe/Berlin'), '2026-10-26T01:30:00Z'::timestamptz, 'Europe/Berlin: 30 2 * * * after 2026-10-25T00:30:00Z');
SELECT is(coord.cron_next('0 3 * * *', '2026-10-24T12:00:00Z', 'Europe/Berlin'), '2026-10-25T02:00:00Z'::timestamptz, 'Europe/Berlin: 0 3 * * * after 2026-10-24T12:00:00Z');
SELECT is(coord.cron_next('0 * * * *', '2026-10-25T00:00:00Z', 'Europe/Berlin'), '2026-10-25T01:00:00Z'::timestamptz, 'Europe/Berlin: 0 * * * * after 2026-10-25T00:00:00Z');
SELECT is(coord.cron_next('0 */2 * * *', '2026-10-25T00:00:00Z', 'Europe/Berlin'), '2026-10-25T01:00:00Z'::timestamptz, 'Europe/Berlin: 0 */2 * * * after 2026-10-25T00:00:00Z');
SELECT is(coord.cron_next('0 */2 * * *', '2026-03-28T23:00:00Z', 'Europe/Berlin'), '2026-03-29T02:00:00Z'::timestamptz, 'Europe/Berlin: 0 */2 * * * after 2026-03-28T23:00:00Z');
SELECT is(coord.cron_next('30 * * * *', '2026-03-29T00:30:00Z', 'Europe/Berlin'), '2026-03-29T01:30:00Z'::timestamptz, 'Europe/Berlin: 30 * * * * after 2026-03-29T00:30:00Z');
SELECT is(coord.cron_next('0 6 * * 0', '2026-03-27T00:00:00Z', 'Europe/Berlin'), '2026-03-29T04:00:00Z'::timestamptz, 'Europe/Berlin: 0 6 * * 0 after 2026-03-27T00:00:00Z');
-- Australia/Lord_Howe: 2026-04-05 02:00 +11 -> 01:30 +10:30 (2026-04-04T15:00Z); 2026-10-04 02:00 +10:30 -> 02:30 +11 (2026-10-03T15:30Z)
SELECT is(coord.cron_next('15 2 * * *', '2026-10-03T12:00:00Z', 'Australia/Lord_Howe'), '2026-10-03T15:30:00Z'::timestamptz, 'Australia/Lord_Howe: 15 2 * * * after 2026-10-03T12:00:00Z');
SELECT is(coord.cron_next('0 2 * * *', '2026-10-03T12:00:00Z', 'Australia/Lord_Howe'), '2026-10-03T15:30:00Z'::timestamptz, 'Australia/Lord_Howe: 0 2 * * * after 2026-10-03T12:00:00Z');
SELECT is(coord.cron_next('30 2 * * *', '2026-10-03T12:00:00Z', 'Australia/Lord_Howe'), '2026-10-03T15:30:00Z'::timestamptz, 'Australia/Lord_Howe: 30 2 * * * after 2026-10-03T12:00:00Z');
SELECT is(coord.cron_next('45 2 * * *', '2026-10-03T12:00:00Z', 'Australia/Lord_Howe'), '2026-10-03T15:45:00Z'::timestamptz, 'Australia/Lord_Howe: 45 2 * * * after 2026-10-03T12:00:00Z');
SELECT is(coord.cron_next('15 2 * * *', '2026-10-03T15:30:00Z', 'Australia/Lord_Howe'), '2026-10-04T15:15:00Z'::timestamptz, 'Australia/Lord_Howe: 15 2 * * * after 2026-10-03T15:30:00Z');
SELECT is(coord.cron_next('45 1 * * *', '2026-04-04T12:00:00Z', 'Australia/Lord_Howe'), '2026-04-04T14:45:00Z'::timestamptz, 'Australia/Lord_Howe: 45 1 * * * after 2026-04-04T12:00:00Z');
SELECT is(coord.cron_next('45 1 * * *', '2026-04-04T14:45:00Z', 'Australia/Lord_Howe'), '2026-04-05T15:15:00Z'::timestamptz, 'Australia/Lord_Howe: 45 1 * * * after 2026-04-04T14:45:00Z');
SELECT is(coord.cron_next('*/10 * * * *', '2026-04-04T14:50:00Z', 'Australia/Lord_Howe'), '2026-04-04T15:00:00Z'::timestamptz, 'Australia/Lord_Howe: */10 * * * * after 2026-04-04T14:50:00Z');
SELECT is(coord.cron_next('15 * * * *', '2026-10-03T15:00:00Z', 'Australia/Lord_Howe'), '2026-10-03T16:15:00Z'::timestamptz, 'Australia/Lord_Howe: 15 * * * * after 2026-10-03T15:00:00Z');
SELECT is(coord.cron_next('0 2 * * *', '2026-04-04T12:00:00Z', 'Australia/Lord_Howe'), '2026-04-04T15:30:00Z'::timestamptz, 'Australia/Lord_Howe: 0 2 * * * after 2026-04-04T12:00:00Z');
SELECT is(coord.cron_next('0 0 * * *', '2026-04-04T12:00:00Z', 'Australia/Lord_Howe'), '2026-04-04T13:00:00Z'::timestamptz, 'Australia/Lord_Howe: 0 0 * * * after 2026-04-04T12:00:00Z');
SELECT is(coord.cron_next('0 0 * * *', '2026-04-04T13:00:00Z', 'Australia/Lord_Howe'), '2026-04-05T13:30:00Z'::timestamptz, 'Australia/Lord_Howe: 0 0 * * * after 2026-04-04T13:00:00Z');
-- America/New_York: 2026-03-08 02:00 EST -> 03:00 EDT (07:00Z); 2026-11-01 02:00 EDT -> 01:00 EST (06:00Z).
-- A minute or hour field beginning with * follows the wall clock (both 01:00s, no 02:00); fixed times fire once
SELECT is(coord.cron_next('0 * * * *', '2026-11-01T05:00:00Z', 'America/New_York'), '2026-11-01T06:00:00Z'::timestamptz, 'America/New_York: 0 * * * * after 2026-11-01T05:00:00Z');
SELECT is(coord.cron_next('0 * * * *', '2026-11-01T06:00:00Z', 'America/New_York'), '2026-11-01T07:00:00Z'::timestamptz, 'America/New_York: 0 * * * * after 2026-11-01T06:00:00Z');
SELECT is(coord.cron_next('@hourly', '2026-11-01T05:00:00Z', 'America/New_York'), '2026-11-01T06:00:00Z'::timestamptz, 'America/New_York: @hourly after 2026-11-01T05:00:00Z');
SELECT is(coord.cron_next('*/15 * * * *', '2026-11-01T05:45:00Z', 'America/New_York'), '2026-11-01T06:00:00Z'::timestamptz, 'America/New_York: */15 * * * * after 2026-11-01T05:45:00Z');
SELECT is(coord.cron_next('0 */2 * * *', '2026-11-01T04:00:00Z', 'America/New_York'), '2026-11-01T07:00:00Z'::timestamptz, 'America/New_York: 0 */2 * * * after 2026-11-01T04:00:00Z');
SELECT is(coord.cron_next('* 1 * * *', '2026-11-01T05:59:00Z', 'America/New_York'), '2026-11-01T06:00:00Z'::timestamptz, 'America/New_York: * 1 * * * after 2026-11-01T05:59:00Z');
SELECT is(coord.cron_next('30 1 * * *', '2026-11-01T05:00:00Z', 'America/New_York'), '2026-11-01T05:30:00Z'::timestamptz, 'America/New_York: 30 1 * * * after 2026-11-01T05:00:00Z');
SELECT is(coord.cron_next('30 1 * * *', '2026-11-01T05:30:00Z', 'America/New_York'), '2026-11-02T06:30:00Z'::timestamptz, 'America/New_York: 30 1 * * * after 2026-11-01T05:30:00Z');
SELECT is(coord.cron_next('0 0-23 * * *', '2026-11-01T05:00:00Z', 'America/New_York'), '2026-11-01T07:00:00Z'::timestamptz, 'America/New_York: 0 0-23 * * * after 2026-11-01T05:00:00Z');
SELECT is(coord.cron_next('0 * * * *', '2026-03-08T06:00:00Z', 'America/New_York'), '2026-03-08T07:00:00Z'::timestamptz, 'America/New_York: 0 * * * * after 2026-03-08T06:00:00Z');
SELECT is(coord.cron_next('30 * * * *', '2026-03-08T06:30:00Z', 'America/New_York'), '2026-03-08T07:30:00Z'::timestamptz, 'America/New_York: 30 * * * * after 2026-03-08T06:30:00Z');
SELECT is(coord.cron_next('*/15 * * * *', '2026-03-08T06:45:00Z', 'America/New_York'), '2026-03-08T07:00:00Z'::timestamptz, 'America/New_York: */15 * * * * after 2026-03-08T06:45:00Z');
SELECT is(coord.cron_next('0 */2 * * *', '2026-03-08T05:00:00Z', 'America/New_York'), '2026-03-08T08:00:00Z'::timestamptz, 'America/New_York: 0 */2 * * * after 2026-03-08T05:00:00Z');
SELECT is(coord.cron_next('* 2 * * *', '2026-03-08T06:00:00Z', 'America/New_York'), '2026-03-09T06:00:00Z'::timestamptz, 'America/New_York: * 2 * * * after 2026-03-08T06:00:00Z');
SELECT is(coord.cron_next('30 2 * * *', '2026-03-08T06:00:00Z', 'America/New_York'), '2026-03-08T07:00:00Z'::timestamptz, 'America/New_York: 30 2 * * * after 2026-03-08T06:00:00Z');
SELECT is(coord.cron_next('0 0-23 * * *', '2026-03-08T06:00:00Z', 'America/New_York'), '2026-03-08T07:00:00Z'::timestamptz, 'America/New_York: 0 0-23 * * * after 2026-03-08T06:00:00Z');
-- Asia/Kolkata: +05:30, no changes since 1945
SELECT is(coord.cron_next('0 9 * * *', '2026-01-01T00:00:00Z', 'Asia/Kolkata'), '2026-01-01T03:30:00Z'::timestamptz, 'Asia/Kolkata: 0 9 * * * after 2026-01-01T00:00:00Z');
SELECT is(coord.cron_next('0 0 * * *', '2026-03-01T18:30:00Z', 'Asia/Kolkata'), '2026-03-02T18:30:00Z'::timestamptz, 'Asia/Kolkata: 0 0 * * * after 2026-03-01T18:30:00Z');
SELECT is(coord.cron_next('30 23 31 12 *', '2026-06-01T00:00:00Z', 'Asia/Kolkata'), '2026-12-31T18:00:00Z'::timestamptz, 'Asia/Kolkata: 30 23 31 12 * after 2026-06-01T00:00:00Z');
SELECT is(coord.cron_next('0 0 1 1 *', '2026-06-01T00:00:00Z', 'Asia/Kolkata'), '2026-12-31T18:30:00Z'::timestamptz, 'Asia/Kolkata: 0 0 1 1 * after 2026-06-01T00:00:00Z');
SELECT is(coord.cron_next('15 * * * *', '2026-01-01T00:00:00Z', 'Asia/Kolkata'), '2026-01-01T00:45:00Z'::timestamptz, 'Asia/Kolkata: 15 * * * * after 2026-01-01T00:00:00Z');
SELECT is(coord.cron_next('0 9 * * 1', '2026-11-01T00:00:00Z', 'Asia/Kolkata'), '2026-11-02T03:30:00Z'::timestamptz, 'Asia/Kolkata: 0 9 * * 1 after 2026-11-01T00:00:00Z');

-- fires per local day across the 2026 transitions: a wildcard minute or hour
-- counts the real hours (25 on a fall-back day, 23 on a spring-forward one,
-- as hourly apps do); a fixed time fires once (counts from Python zoneinfo)
CREATE FUNCTION pg_temp.fires_on(expr text, zone text, day date) RETURNS int
LANGUAGE sql AS $fn$
  WITH RECURSIVE f(t) AS (
    SELECT coord.cron_next(expr, (day::timestamp AT TIME ZONE zone) - interval '1 second', zone)
    UNION ALL
    SELECT coord.cron_next(expr, t, zone) FROM f WHERE t < ((day + 1)::timestamp AT TIME ZONE zone))
  SELECT count(*)::int FROM f WHERE t < ((day + 1)::timestamp AT TIME ZONE zone)
$fn$;
CREATE TEMP TABLE tz_day_fires (zone text, day date, expr text, n int);
INSERT INTO tz_day_fires VALUES ('America/New_York', '2026-11-01', '0 * * * *', 25),
       ('America/New_York', '2026-11-01', '*/15 * * * *', 100),
       ('America/New_York', '2026-11-01', '0 */2 * * *', 12),
       ('America/New_York', '2026-11-01', '* 1 * * *', 120),
       ('America/New_York', '2026-11-01', '30 1 * * *', 1),
       ('America/New_York', '2026-11-01', '0 0-23 * * *', 24),
       ('America/New_York', '2026-03-08', '0 * * * *', 23),
       ('America/New_York', '2026-03-08', '30 * * * *', 23),
       ('America/New_York', '2026-03-08', '*/15 * * * *', 92),
       ('America/New_York', '2026-03-08', '0 */2 * * *', 11),
       ('America/New_York', '2026-03-08', '* 2 * * *', 0),
       ('America/New_York', '2026-03-08', '30 2 * * *', 1),
       ('America/New_York', '2026-03-08', '0 0-23 * * *', 23),
       ('Europe/Berlin', '2026-10-25', '0 * * * *', 25),
       ('Europe/Berlin', '2026-10-25', '0 */2 * * *', 13),
       ('Europe/Berlin', '2026-10-25', '30 2 * * *', 1),
       ('Europe/Berlin', '2026-03-29', '0 * * * *', 23),
       ('Europe/Berlin', '2026-03-29', '0 */2 * * *', 11),
       ('Europe/Berlin', '2026-03-29', '30 2 * * *', 1);
SELECT results_eq($$SELECT zone, day, expr, pg_temp.fires_on(expr, zone, day) FROM tz_day_fires ORDER BY 1, 2, 3$$,
                  $$SELECT zone, day, expr, n FROM tz_day_fires ORDER BY 1, 2, 3$$,
                  'fires per local day: wildcard minutes and hours on the real hours, fixed times once');

-- local mean time (America/Chicago until 1883-11-18 18:00Z, -05:50:36), a
-- day skipped (Pacific/Apia, 2011-12-30), zone names in any case
SELECT is(coord.cron_next('0 0 * * *', '1800-01-01T12:00:00Z', 'America/Chicago'), '1800-01-02T05:50:36Z'::timestamptz,
          'midnight in local mean time');
SELECT is(coord.cron_next('5 12 * * *', '1883-11-18T17:55:36Z', 'America/Chicago'), '1883-11-19T18:05:00Z'::timestamptz,
          'the 9 minutes 24 seconds that 1883 repeated fire once');
SELECT is(coord.cron_next('0 12 30 12 *', '2011-12-29Z', 'Pacific/Apia'), '2011-12-30T10:00:00Z'::timestamptz,
          'a day that never happened fires when the clock jumps over it');
SELECT is(coord.cron_next('0 0 * * *', '2011-12-30T10:00:00Z', 'Pacific/Apia'), '2011-12-31T10:00:00Z'::timestamptz,
          'and the next midnight is the next local day''s');
SELECT is(coord.cron_next('0 9 * * *', '2026-01-01Z', 'asia/KOLKATA'), '2026-01-01T03:30:00Z'::timestamptz,
          'zone names match in any case');
SELECT is(coord.cron_next('0 9 * * *', '2026-01-01Z', 'Etc/GMT-14'), '2026-01-01T19:00:00Z'::timestamptz,
          'a fixed-offset zone (UTC+14: 14:00 local when it starts)');
SELECT is(coord.cron_next('0 0 30 2 *', '2026-01-01Z', 'Europe/Berlin'), NULL, 'an expression that never fires: NULL');

-- errors
SELECT throws_ok($$SELECT coord.cron_next('* * * * *', '2026-01-01Z', 'Mars/Olympus_Mons')$$, '22023',
                 'time zone "Mars/Olympus_Mons" not recognized', 'cron_next: an unknown zone');
SELECT throws_ok($$SELECT coord.cron_next('* * * * *', '2026-01-01Z', '')$$, '22023',
                 'time zone "" not recognized', 'cron_next: an empty zone');
SELECT throws_ok($$SELECT coord.cron_next('* * * * *', '2026-01-01Z', '../../etc/passwd')$$, '22023',
                 'time zone "../../etc/passwd" not recognized', 'cron_next: a path is no zone');
SELECT throws_ok($$SELECT coord.cron_next('* * * * *', '2026-01-01Z', repeat('x', 256))$$, '22023',
                 'time zone name is longer than 255 bytes', 'cron_next: a zone name of 256 bytes');
SELECT throws_ok($$SELECT coord.cron_next('* * * * *', '2026-01-01Z', NULL)$$, '22004', 'tz must not be null',
                 'cron_next: tz NULL');
SELECT throws_ok($$SELECT coord.schedule('tz-bad', 'tzq', cron => '0 0 * * *', tz => 'America/Chicagoo')$$, '22023',
                 'time zone "America/Chicagoo" not recognized', 'schedule: an unknown zone');
SELECT throws_ok($$SELECT coord.schedule('tz-bad', 'tzq', cron => '0 0 * * *', tz => NULL)$$, '22004',
                 'tz must not be null', 'schedule: tz NULL');
SELECT throws_ok($$SELECT coord.schedule('tz-bad', 'tzq', every => '1 day', tz => 'America/Chicago')$$, '22023',
                 'tz applies only to cron schedules', 'schedule: every with a zone other than UTC');
SELECT is((SELECT count(*)::int FROM coord.schedule_defs WHERE name = 'tz-bad'), 0, 'no refused definition was stored');

-- a schedule stores its zone as PostgreSQL spells it
SELECT ok(coord.schedule('tz-every', 'tzq', every => '1 day', starts_at => '2100-01-01Z', tz => 'utc') > 0,
          'every with tz utc is accepted');
SELECT ok(coord.schedule('tz-def', 'tzq', cron => '0 3 * * *', starts_at => '2100-01-01Z') > 0, 'cron without tz');
SELECT ok(coord.schedule('tz-chi', 'tzq', cron => '0 3 * * *', starts_at => '2100-01-01Z', tz => 'america/chicago') > 0,
          'cron in america/chicago');
SELECT results_eq($$SELECT name, tz, next_run_at FROM coord.schedules WHERE name LIKE 'tz-%' ORDER BY name$$,
                  $$VALUES ('tz-chi'::text, 'America/Chicago'::text, '2100-01-01T09:00:00Z'::timestamptz),
                           ('tz-def', 'UTC', '2100-01-01T03:00:00Z'),
                           ('tz-every', 'UTC', '2100-01-01T00:00:00Z')$$,
                  'the view: tz as PostgreSQL spells it, and the first slot in local time');
CREATE TEMP TABLE tz_job AS SELECT job_id FROM coord.schedules WHERE name = 'tz-chi';
SELECT is(coord.schedule('tz-chi', 'tzq', cron => '0 3 * * *', starts_at => '2100-01-01Z', tz => 'America/Chicago'),
          (SELECT id FROM coord.schedule_defs WHERE name = 'tz-chi'), 'the same definition, spelt as stored');
SELECT is((SELECT job_id FROM coord.schedules WHERE name = 'tz-chi'), (SELECT job_id FROM tz_job),
          'changes nothing: the same instance');
SELECT lives_ok($$SELECT coord.schedule('tz-chi', 'tzq', cron => '0 3 * * *', starts_at => '2100-01-01Z',
                                        tz => 'Europe/Berlin')$$, 'another zone');
SELECT results_eq($$SELECT s.tz, s.next_run_at, j.run_at, s.job_id <> (SELECT job_id FROM tz_job)
                      FROM coord.schedules AS s JOIN coord.jobs AS j ON j.id = s.job_id WHERE s.name = 'tz-chi'$$,
                  $$VALUES ('Europe/Berlin'::text, '2100-01-01T02:00:00Z'::timestamptz, '2100-01-01T02:00:00Z'::timestamptz, true)$$,
                  'is a new definition: its instance moves to 03:00 in Berlin');

-- coord.tick(now) with explicit times, across both 2026 transitions in
-- America/Chicago.  The clock of this machine is past them, so each step
-- takes the way a tick repairs a schedule (instance gone, next_run_at
-- NULL): the tick at `now` puts on the first slot at or after now, computed
-- in the schedule's stored zone.
CREATE FUNCTION pg_temp.tick_slots(sched text, start timestamptz, steps int) RETURNS SETOF timestamptz
LANGUAGE plpgsql AS $fn$
DECLARE
  t timestamptz := start;
  slot timestamptz;
BEGIN
  FOR i IN 1..steps LOOP
    DELETE FROM coord.job WHERE origin = 's:' || sched;
    UPDATE coord.schedule_defs SET next_run_at = NULL WHERE name = sched;
    PERFORM coord.tick(t);
    SELECT j.run_at INTO slot FROM coord.job AS j WHERE j.origin = 's:' || sched;
    IF slot IS DISTINCT FROM (SELECT next_run_at FROM coord.schedule_defs WHERE name = sched) THEN
      RAISE EXCEPTION 'instance at %, next_run_at differs', slot;
    END IF;
    RETURN NEXT slot;
    t := slot + interval '1 second';
  END LOOP;
END
$fn$;
SELECT ok(coord.schedule('tz-night', 'tzq', cron => '30 2 * * *', starts_at => '2026-01-01Z', tz => 'America/Chicago') > 0,
          'a nightly 02:30 schedule in America/Chicago');
SELECT results_eq($$SELECT * FROM pg_temp.tick_slots('tz-night', '2026-03-06T00:00:00Z', 5)$$,
                  $$VALUES ('2026-03-06T08:30:00Z'::timestamptz), ('2026-03-07T08:30:00Z'), ('2026-03-08T08:00:00Z'),
                           ('2026-03-09T07:30:00Z'), ('2026-03-10T07:30:00Z')$$,
                  'March 8: 02:30 does not exist, the run is at 03:00 CDT, once; then 02:30 CDT');
SELECT lives_ok($$SELECT coord.schedule('tz-night', 'tzq', cron => '30 1 * * *', starts_at => '2026-01-01Z',
                                        tz => 'America/Chicago')$$, 'the same schedule at 01:30');
SELECT results_eq($$SELECT * FROM pg_temp.tick_slots('tz-night', '2026-10-30T00:00:00Z', 5)$$,
                  $$VALUES ('2026-10-30T06:30:00Z'::timestamptz), ('2026-10-31T06:30:00Z'), ('2026-11-01T06:30:00Z'),
                           ('2026-11-02T07:30:00Z'), ('2026-11-03T07:30:00Z')$$,
                  'November 1: 01:30 happens twice and runs once, at 01:30 CDT; then 01:30 CST');
SELECT ok(coord.schedule('tz-hourly', 'tzq', cron => '0 * * * *', starts_at => '2026-01-01Z', tz => 'America/Chicago') > 0,
          'an hourly schedule in America/Chicago');
SELECT results_eq($$SELECT * FROM pg_temp.tick_slots('tz-hourly', '2026-11-01T04:30:00Z', 4)$$,
                  $$VALUES ('2026-11-01T05:00:00Z'::timestamptz), ('2026-11-01T06:00:00Z'), ('2026-11-01T07:00:00Z'),
                           ('2026-11-01T08:00:00Z')$$,
                  'November 1, hourly: 00:00 and 01:00 CDT, then 01:00 and 02:00 CST (a wildcard hour runs the repeated 01:00)');
SELECT results_eq($$SELECT * FROM pg_temp.tick_slots('tz-hourly', '2026-03-08T06:30:00Z', 4)$$,
                  $$VALUES ('2026-03-08T07:00:00Z'::timestamptz), ('2026-03-08T08:00:00Z'), ('2026-03-08T09:00:00Z'),
                           ('2026-03-08T10:00:00Z')$$,
                  'March 8, hourly: 01:00 CST, then 03:00, 04:00, 05:00 CDT (an hour apart: 02:00 is the gap)');
SELECT is((SELECT tz FROM coord.schedules WHERE name = 'tz-hourly'), 'America/Chicago', 'the tick kept the zone');

-- the finish hook: the slot after a finished instance, in the stored zone.
-- In 2100 (ahead of any real clock), cancelling the scheduled instance
-- finishes it; fixed delay then takes the first fire time after its slot.
SELECT ok(coord.schedule('tz-2100', 'tzq', cron => '30 2 * * *', starts_at => '2100-03-13Z', tz => 'America/Chicago') > 0,
          'a schedule before the 2100 spring-forward');
CREATE FUNCTION pg_temp.cancel_slots(sched text, steps int) RETURNS SETOF timestamptz
LANGUAGE plpgsql AS $fn$
BEGIN
  FOR i IN 1..steps LOOP
    RETURN NEXT (SELECT next_run_at FROM coord.schedule_defs WHERE name = sched);
    PERFORM coord.cancel((SELECT job_id FROM coord.schedules WHERE name = sched));
  END LOOP;
END
$fn$;
SELECT results_eq($$SELECT * FROM pg_temp.cancel_slots('tz-2100', 3)$$,
                  $$VALUES ('2100-03-13T08:30:00Z'::timestamptz), ('2100-03-14T08:00:00Z'), ('2100-03-15T07:30:00Z')$$,
                  'March 14, 2100: the finish hook puts the skipped 02:30 at 03:00 CDT');
SELECT lives_ok($$SELECT coord.schedule('tz-2100', 'tzq', cron => '30 1 * * *', starts_at => '2100-11-06Z',
                                        tz => 'America/Chicago')$$, 'the same before the 2100 fall-back');
SELECT results_eq($$SELECT * FROM pg_temp.cancel_slots('tz-2100', 3)$$,
                  $$VALUES ('2100-11-06T06:30:00Z'::timestamptz), ('2100-11-07T06:30:00Z'), ('2100-11-08T07:30:00Z')$$,
                  'November 7, 2100: 01:30 runs once, at its first occurrence');
SELECT is((SELECT last_state FROM coord.schedules WHERE name = 'tz-2100'), 'cancelled', 'the hook recorded the finishes');

SELECT * FROM finish();
ROLLBACK;
