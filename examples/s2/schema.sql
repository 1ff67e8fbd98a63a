-- S2: the four apps of the original state manager / job manager system, on
-- pg_coord.  adxcheck and retgtcheck run hourly; counter runs for each hour
-- once both of them are done for that hour; bigcounter runs for each ISO week
-- once all 168 hourly runs of both in that week are done.  All run on host
-- tr-oddjob-dal-01, whose job manager (worker.py here, coord-agent in
-- production) claims the runs from queue 'apps' for that host.
--
-- Apply with:  psql -d <db> -v week=2024-01-01 -f examples/s2/schema.sql
-- (needs CREATE EXTENSION pg_coord; week: the Monday runs start from)

\set ON_ERROR_STOP on
SET client_min_messages = warning;

CREATE SCHEMA s2;
COMMENT ON SCHEMA s2 IS 'S2 example: the apps of tr-oddjob-dal-01';
\set schema s2
\ir ../lib/wait_until.sql

-- A run of adxcheck that is not finished 30 minutes after its claim is taken
-- away and retried.
SELECT coord.define_app('adxcheck', 'hourly', host => 'tr-oddjob-dal-01', timeout => '30 minutes',
                        catchup_from => :'week', conf => '{"table": "adx_events"}');
SELECT coord.define_app('retgtcheck', 'hourly', host => 'tr-oddjob-dal-01', timeout => '30 minutes',
                        catchup_from => :'week', conf => '{"table": "retgt_events"}');
SELECT coord.define_app('counter', 'hourly', '{"adxcheck": "hourly", "retgtcheck": "hourly"}',
                        host => 'tr-oddjob-dal-01', timeout => '30 minutes', catchup_from => :'week');
SELECT coord.define_app('bigcounter', 'weekly', '{"adxcheck": "hourly", "retgtcheck": "hourly"}',
                        host => 'tr-oddjob-dal-01', timeout => '2 hours', catchup_from => :'week');
