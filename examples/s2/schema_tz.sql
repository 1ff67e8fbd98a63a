-- S2, second part: the host's reports as the business reads them, in Dallas
-- time (America/Chicago).  dal_hits runs per real hour, dal_daily per local
-- day once all hourly runs of that day are done (23, 24 or 25 of them),
-- dal_weekly per local ISO week (from Monday 00:00 in Dallas) once its 7
-- daily runs are done, and is due 3 hours after its week ends: a run still
-- unfinished then raises a deadline alert (coord.alerts, NOTIFY
-- "coord:alerts").
--
-- Apply with:  psql -d <db> -v week=2026-10-26 -f examples/s2/schema_tz.sql
-- (needs CREATE EXTENSION pg_coord, in a database of its own: the demo's
-- clock is simulated, and the apps of schema.sql would catch up through it;
-- week: the local Monday runs start from)

\set ON_ERROR_STOP on
SET client_min_messages = warning;

CREATE SCHEMA s2;
COMMENT ON SCHEMA s2 IS 'S2 example, part 2: the Dallas reports of tr-oddjob-dal-01';
\set schema s2
\ir ../lib/wait_until.sql

SELECT set_config('s2.week_start', (:'week'::timestamp AT TIME ZONE 'America/Chicago')::text, false);
SELECT coord.define_app('dal_hits', 'hourly', host => 'tr-oddjob-dal-01', tz => 'America/Chicago',
                        catchup_from => current_setting('s2.week_start')::timestamptz);
SELECT coord.define_app('dal_daily', 'daily', '{"dal_hits": "hourly"}', host => 'tr-oddjob-dal-01',
                        tz => 'America/Chicago', catchup_from => current_setting('s2.week_start')::timestamptz);
SELECT coord.define_app('dal_weekly', 'weekly', '{"dal_daily": "daily"}', host => 'tr-oddjob-dal-01',
                        tz => 'America/Chicago', deadline => '3 hours',
                        catchup_from => current_setting('s2.week_start')::timestamptz);
