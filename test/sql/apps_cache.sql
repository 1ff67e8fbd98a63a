-- The app graph the finish hook works on is read once per transaction
-- (apps.c, CachedGraph): DEBUG1 says "read the app graph" at each read, so
-- the DEBUG lines here are the reads.  Within a transaction, define_app,
-- drop_app and a rolled-back savepoint make the next finish read it again,
-- and the runs show that the finish then saw the change.
\set VERBOSITY terse
SET client_min_messages = warning;
-- DEBUG1 also reports catalog cache rehashes (PostgreSQL 18), which come
-- with the number of functions this session has looked up so far: look
-- every function up now, so that none comes between the lines below.
SELECT count(pg_catalog.to_regprocedure(p.oid::pg_catalog.regprocedure::text)) > 0 AS warm
  FROM pg_catalog.pg_proc AS p;
CREATE FUNCTION pg_temp.u(t timestamptz) RETURNS text LANGUAGE sql
  AS $$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') $$;
SELECT coord.define_app('gc_up', 'hourly', queue => 'gc_q', catchup_from => '2024-01-01 00:00Z');
SELECT coord.define_app('gc_down', depends => '{"gc_up": "hourly"}', queue => 'gc_qd',
                        catchup_from => '2024-01-01 00:00Z');
SELECT coord.tick('2024-01-01 05:30Z');
CREATE TEMP TABLE gc_claimed AS
  SELECT c.id, c.token, (c.payload->>'period_start')::timestamptz AS p FROM coord.claim('gc_q', 100) AS c;
SELECT count(*) AS claimed FROM gc_claimed;

-- one batch of six app jobs: one read
SET client_min_messages = debug1;
SELECT coord.complete_many(array_agg(id ORDER BY p), array_agg(token ORDER BY p)) FROM gc_claimed;
SET client_min_messages = warning;
SELECT pg_temp.u(period_start), state FROM coord.runs WHERE app = 'gc_down' ORDER BY period_start;

-- within one transaction: read once, again after define_app, and again
-- after a savepoint whose definition a finish had read is rolled back
SELECT coord.tick('2024-01-01 09:30Z');
DELETE FROM gc_claimed;
INSERT INTO gc_claimed
  SELECT c.id, c.token, (c.payload->>'period_start')::timestamptz FROM coord.claim('gc_q', 100) AS c;
SELECT pg_temp.u(p) FROM gc_claimed ORDER BY p;
BEGIN;
SET LOCAL client_min_messages = debug1;
SELECT coord.complete(id, token) FROM gc_claimed WHERE p = '2024-01-01 06:00Z';
SELECT coord.complete(id, token) FROM gc_claimed WHERE p = '2024-01-01 07:00Z';
SELECT coord.define_app('gc_new', depends => '{"gc_up": "hourly"}', queue => 'gc_qn',
                        catchup_from => '2024-01-01 06:00Z');
SELECT coord.complete(id, token) FROM gc_claimed WHERE p = '2024-01-01 08:00Z';
SAVEPOINT s;
SELECT coord.define_app('gc_gone', depends => '{"gc_up": "hourly"}', queue => 'gc_qg',
                        catchup_from => '2024-01-01 06:00Z');
SELECT coord.complete(id, token) FROM gc_claimed WHERE p = '2024-01-01 09:00Z';
ROLLBACK TO SAVEPOINT s;
SELECT coord.complete(id, token) FROM gc_claimed WHERE p = '2024-01-01 09:00Z';
COMMIT;
SELECT app, pg_temp.u(period_start) FROM coord.app_runs WHERE app IN ('gc_down', 'gc_new', 'gc_gone')
  AND period_start >= '2024-01-01 06:00Z' ORDER BY app, period_start;
SELECT count(*) AS stray_jobs FROM coord.job WHERE queue = 'gc_qg';

-- drop_app in the transaction: the next finish no longer sees the app
SELECT coord.tick('2024-01-01 11:30Z');
DELETE FROM gc_claimed;
INSERT INTO gc_claimed
  SELECT c.id, c.token, (c.payload->>'period_start')::timestamptz FROM coord.claim('gc_q', 100) AS c;
BEGIN;
SET LOCAL client_min_messages = debug1;
SELECT coord.complete(id, token) FROM gc_claimed WHERE p = '2024-01-01 10:00Z';
SELECT count(*) AS gc_new_runs FROM coord.app_runs WHERE app = 'gc_new';
SELECT coord.drop_app('gc_new');
SELECT coord.complete(id, token) FROM gc_claimed WHERE p = '2024-01-01 11:00Z';
COMMIT;
SELECT count(*) AS gc_new_runs FROM coord.app_runs WHERE app = 'gc_new';
SELECT count(*) AS jobs_of_dropped FROM coord.job WHERE queue = 'gc_qn';

SELECT coord.drop_app(a) FROM unnest(ARRAY['gc_down', 'gc_up']) AS a;
