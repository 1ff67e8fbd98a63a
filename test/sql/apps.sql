-- Apps (docs/apps.md): periods, dependencies, rollups, timeouts, catch-up,
-- redefinition and bad input, with explicit tick times.  The race of two
-- upstream runs completing at once is in test/specs/iso_apps.spec.
\set VERBOSITY terse
SET client_min_messages = warning;
-- periods are UTC whatever the session's time zone
SET TimeZone = 'Asia/Kolkata';
CREATE FUNCTION pg_temp.u(t timestamptz) RETURNS text LANGUAGE sql
  AS $$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI Dy') $$;
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE s text; m text; d text;
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL;
  RETURN s || ': ' || m || COALESCE(' / ' || NULLIF(d, ''), '');
END $$;
-- a worker of host tr-oddjob-dal-01: claims every due job of a queue and
-- completes it with {"p": period_start}
CREATE FUNCTION pg_temp.work(q text) RETURNS integer LANGUAGE sql AS $$
  SELECT count(*)::integer FROM coord.claim(q, 1000, host => 'tr-oddjob-dal-01') AS c
   WHERE coord.complete(c.id, c.token, jsonb_build_object('p', c.payload->>'period_start'))
$$;
CREATE FUNCTION pg_temp.runs(a text) RETURNS TABLE (period_start text, period_end text, state text, attempts integer)
  LANGUAGE sql AS $$
  SELECT pg_temp.u(r.period_start), pg_temp.u(r.period_end), r.state, r.attempts
    FROM coord.runs AS r WHERE r.app = a ORDER BY r.period_start
$$;

-- Period boundaries: hour (across a leap day), day (leap year), ISO week
-- (Monday; across a year end), month (February of a leap year), year.
SELECT coord.define_app('h', 'hourly', queue => 'qh', catchup_from => '2024-02-28 22:30Z');
SELECT coord.define_app('d', 'daily', queue => 'qd', catchup_from => '2024-02-27 12:00Z');
SELECT coord.define_app('w', 'weekly', queue => 'qw', catchup_from => '2024-12-31 10:00Z');
SELECT coord.define_app('m', 'monthly', queue => 'qm', catchup_from => '2024-01-31 23:59Z');
SELECT coord.define_app('y', 'yearly', queue => 'qy', catchup_from => '2023-06-01Z');
SELECT coord.tick('2024-02-29 01:10Z');
SELECT * FROM pg_temp.runs('h');
SELECT coord.tick('2024-03-01 00:00Z');
SELECT * FROM pg_temp.runs('d');
SELECT * FROM pg_temp.runs('m');
SELECT coord.tick('2025-01-13 00:00Z');
SELECT * FROM pg_temp.runs('w');
SELECT * FROM pg_temp.runs('y');
-- a tick again at the same time creates nothing
SELECT coord.tick('2025-01-13 00:00Z');
-- each run is a job keyed by its period start, with its origin and payload
SELECT j.queue, j.key, j.origin, j.host, j.payload
  FROM coord.job AS j WHERE j.queue IN ('qw', 'qy') ORDER BY j.id;
SELECT coord.drop_app(a) FROM unnest(ARRAY['h', 'd', 'w', 'm', 'y']) AS a;
SELECT count(*) AS runs_left, (SELECT count(*) FROM coord.job WHERE origin LIKE 'a:%') AS jobs_left FROM coord.app_runs;

-- Catch-up: in period order, at most 24 unfinished runs of an app at a time.
SELECT coord.define_app('late', 'hourly', queue => 'ql', catchup_from => '2024-05-01 00:00Z');
SELECT coord.tick('2024-05-03 12:00Z');
SELECT count(*), min(pg_temp.u(period_start)), max(pg_temp.u(period_start)) FROM coord.runs WHERE app = 'late';
SELECT coord.tick('2024-05-03 12:00Z');
SELECT count(*) FROM coord.runs WHERE app = 'late';
SELECT count(*) AS worked FROM (SELECT coord.complete(id, token) FROM coord.claim('ql', 10)) AS c;
SELECT coord.tick('2024-05-03 12:00Z');
SELECT count(*), max(pg_temp.u(period_start)), count(*) FILTER (WHERE state = 'done') AS done FROM coord.runs WHERE app = 'late';
-- an earlier catchup_from fills in the periods before
SELECT coord.define_app('late', 'hourly', queue => 'ql', catchup_from => '2024-04-30 22:00Z');
SELECT pg_temp.u(first_period), pg_temp.u(next_period) FROM coord.app_defs WHERE name = 'late';
SELECT count(*) AS worked FROM (SELECT coord.complete(id, token) FROM coord.claim('ql', 100)) AS c;
SELECT coord.tick('2024-05-03 12:00Z');
SELECT pg_temp.u(period_start), state FROM coord.runs WHERE app = 'late' ORDER BY period_start LIMIT 4;
-- another period length starts over from catchup_from
SELECT coord.define_app('late', 'daily', queue => 'ql', catchup_from => '2024-05-02 05:00Z');
SELECT grain, pg_temp.u(first_period), pg_temp.u(next_period) FROM coord.app_defs WHERE name = 'late';
SELECT coord.drop_app('late');

-- Timeouts: a run not finished timeout after its claim is revoked and retried;
-- the late complete of the old claimer returns false.
SELECT coord.define_app('src', 'hourly', queue => 'qsrc', catchup_from => '2024-03-01Z');
SELECT coord.define_app('slow', NULL, '{"src": "hourly"}', timeout => '30 minutes', queue => 'qs', catchup_from => '2024-03-01Z');
SELECT coord.tick('2024-03-01 00:00Z');
SELECT pg_temp.work('qsrc');
SELECT id AS sid, token AS stok FROM coord.claim('qs', lease => '1 hour') \gset
SELECT coord.tick('2024-03-01 00:10Z');
SELECT state, attempts, job_id = :sid AS same_job FROM coord.runs WHERE app = 'slow';
-- by the tick clock: first seen claimed at 00:10, so 00:50 is past the timeout
SELECT coord.tick('2024-03-01 00:50Z') AS timed_out;
SELECT state, attempts, job_id = :sid AS same_job, last_error FROM coord.runs WHERE app = 'slow';
SELECT coord.complete(:sid, :stok, '{"late": true}') AS late_complete;
SELECT coord.job_state(:sid) AS old_job;
-- by the wall clock, for a tick with the real time: claimed_at + timeout
UPDATE coord.job SET run_at = now() WHERE queue = 'qs';
SELECT id AS sid, token AS stok FROM coord.claim('qs', lease => '1 hour') \gset
SELECT coord.tick(now() + interval '20 minutes') AS not_yet, coord.tick(now() + interval '31 minutes') AS timed_out;
SELECT state, attempts, job_id = :sid AS same_job FROM coord.runs WHERE app = 'slow';
-- after its last attempt (5) the run dies
DO $$
BEGIN
  FOR i IN 1 .. 3 LOOP
    UPDATE coord.job SET run_at = now() WHERE queue = 'qs';
    PERFORM coord.claim('qs', lease => '1 hour');
    PERFORM coord.tick(now() + interval '1 hour');
  END LOOP;
END $$;
SELECT state, attempts, finished_at IS NOT NULL AS finished FROM coord.runs WHERE app = 'slow';
SELECT count(*) AS live_jobs FROM coord.job WHERE queue = 'qs';
-- coord.retry brings the dead run's job back as the run's job: completing it completes the run
SELECT coord.retry(job_id) AS retried FROM coord.runs WHERE app = 'slow' AND state = 'dead';
SELECT count(*) AS completed FROM coord.claim('qs', 5) AS c WHERE coord.complete(c.id, c.token, '{"late": true}');
SELECT state, result FROM coord.runs WHERE app = 'slow' AND result IS NOT NULL;
-- a run that completes in time is done
SELECT coord.tick('2024-03-01 01:00Z');
SELECT pg_temp.work('qsrc'), pg_temp.work('qs');
SELECT pg_temp.u(period_start), state, result FROM coord.runs WHERE app = 'slow' ORDER BY period_start LIMIT 3;
SELECT coord.drop_app('slow'), coord.drop_app('src');

-- Dependencies: counter (hourly) runs once adx and ret are done for its
-- hour, in the transaction that completes the second; bigcounter (weekly)
-- once all 168 hourly runs of both in its ISO week are; daily (no starts)
-- once the day's 24 adx runs are; hourly app perday once that day's daily run is.
SELECT coord.define_app('adx', 'hourly', host => 'tr-oddjob-dal-01', queue => 'qa', catchup_from => '2024-01-01Z',
                        conf => '{"check": "adx"}');
SELECT coord.define_app('ret', 'hourly', host => 'tr-oddjob-dal-01', queue => 'qr', catchup_from => '2024-01-01Z');
SELECT coord.define_app('counter', 'hourly', '{"adx": "hourly", "ret": "hourly"}', host => 'tr-oddjob-dal-01',
                        queue => 'qc', catchup_from => '2024-01-01Z');
SELECT coord.define_app('bigcounter', 'weekly', '{"adx": "hourly", "ret": "hourly"}', host => 'tr-oddjob-dal-01',
                        queue => 'qb', catchup_from => '2024-01-01Z');
SELECT coord.define_app('daily', NULL, '{"adx": "daily"}', queue => 'qd', catchup_from => '2024-01-01Z');
SELECT coord.define_app('perday', 'hourly', '{"daily": "daily"}', queue => 'qp', catchup_from => '2024-01-01Z');
SELECT name, starts, grain, pg_temp.u(first_period) AS first_period FROM coord.app_defs ORDER BY name;
SELECT coord.tick('2024-01-01 00:00Z');
SELECT app, pg_temp.u(period_start), state FROM coord.runs ORDER BY app, period_start;
SELECT pg_temp.work('qa');
SELECT count(*) AS counter_runs FROM coord.runs WHERE app = 'counter';
SELECT pg_temp.work('qr');
SELECT app, pg_temp.u(period_start), state, host FROM coord.runs WHERE app = 'counter';
SELECT payload FROM coord.job WHERE queue = 'qc';
-- completing twice: the second complete is refused and creates nothing
SELECT id AS cid, token AS ctok FROM coord.claim('qc', host => 'tr-oddjob-dal-01') \gset
SELECT coord.complete(:cid, :ctok, '{"total": 2}') AS first, coord.complete(:cid, :ctok, '{"total": 3}') AS second;
SELECT app, pg_temp.u(period_start), state, result FROM coord.runs WHERE app = 'counter';
-- ticking twice: nothing new
SELECT coord.tick('2024-01-01 00:30Z'), coord.tick('2024-01-01 00:30Z');
-- the rest of the week, hour by hour: each tick starts an hour, workers finish it
DO $$
BEGIN
  FOR h IN 1 .. 166 LOOP
    PERFORM coord.tick('2024-01-01 00:00Z'::timestamptz + h * interval '1 hour');
    PERFORM pg_temp.work('qa');
    PERFORM pg_temp.work('qr');
    PERFORM pg_temp.work('qc');
  END LOOP;
END $$;
-- the week's last hour: bigcounter's run comes with the last of its 336 upstream runs
SELECT coord.tick('2024-01-07 23:00Z');
SELECT pg_temp.work('qa');
SELECT count(*) AS bigcounter_runs FROM coord.app_runs WHERE app = 'bigcounter';
SELECT pg_temp.work('qr');
SELECT count(*) AS bigcounter_runs FROM coord.app_runs WHERE app = 'bigcounter';
SELECT pg_temp.work('qc');
SELECT app, count(*), min(pg_temp.u(period_start)), max(pg_temp.u(period_start)),
       count(*) FILTER (WHERE state = 'done') AS done
  FROM coord.runs GROUP BY app ORDER BY app;
SELECT pg_temp.u(period_start), pg_temp.u(period_end), state FROM coord.runs WHERE app = 'bigcounter';
SELECT jsonb_array_length(payload->'upstream'->'adx') AS adx_results, jsonb_array_length(payload->'upstream'->'ret') AS ret_results,
       payload->'upstream'->'adx'->0 AS first, payload->'upstream'->'adx'->167 AS last, payload->>'period_end' AS period_end
  FROM coord.job WHERE queue = 'qb';
-- daily got one run per day, each with its day's 24 adx results; perday 24 runs a day, up to the last tick
SELECT pg_temp.u(period_start), jsonb_array_length(payload->'upstream'->'adx') AS results
  FROM coord.runs AS r JOIN coord.job AS j ON j.id = r.job_id WHERE r.app = 'daily' ORDER BY 1;
SELECT pg_temp.work('qd');
SELECT count(*), min(pg_temp.u(period_start)), max(pg_temp.u(period_start)) FROM coord.runs WHERE app = 'perday';
SELECT coord.tick('2024-01-08 03:00Z');
SELECT count(*), max(pg_temp.u(period_start)) FROM coord.runs WHERE app = 'perday';
-- the grid
SELECT * FROM coord.grid('2024-01-07 12:00Z', '2024-01-08 04:00Z', NULL);
SELECT * FROM coord.grid('2024-01-01Z', '2024-01-15Z', ARRAY['bigcounter', 'daily', 'adx']);

-- Repair: a tick makes a dependent run that is missing though its
-- upstreams are done, and puts back the job of a run whose job was deleted.
DELETE FROM coord.app_runs WHERE app = 'counter' AND period_start = '2024-01-07 23:00Z';
UPDATE coord.app_defs SET next_period = '2024-01-07 20:00Z' WHERE name = 'counter';
DELETE FROM coord.job WHERE origin = 'a:adx:2024-01-08-0100';
SELECT app, pg_temp.u(period_start), state FROM coord.runs
 WHERE (app = 'counter' AND period_start >= '2024-01-07 22:00Z') OR (app = 'adx' AND period_start = '2024-01-08 01:00Z') ORDER BY 1, 2;
SELECT coord.tick('2024-01-08 03:00Z');
SELECT app, pg_temp.u(period_start), state FROM coord.runs
 WHERE (app = 'counter' AND period_start >= '2024-01-07 22:00Z') OR (app = 'adx' AND period_start = '2024-01-08 01:00Z') ORDER BY 1, 2;
SELECT pg_temp.u(next_period) FROM coord.app_defs WHERE name = 'counter';

-- Redefinition: the same definition changes nothing; a new conf reaches new runs only.
CREATE TEMP TABLE before AS SELECT * FROM coord.app_defs WHERE name = 'adx';
SELECT coord.define_app('adx', 'hourly', host => 'tr-oddjob-dal-01', queue => 'qa', catchup_from => '2024-01-01Z',
                        conf => '{"check": "adx"}');
SELECT a = b AS unchanged FROM coord.app_defs AS a, before AS b WHERE a.name = 'adx';
SELECT coord.tick('2024-01-08 03:00Z');
SELECT coord.define_app('adx', 'hourly', host => 'tr-oddjob-dal-01', queue => 'qa', conf => '{"check": "adx2"}');
SELECT coord.tick('2024-01-08 04:00Z');
SELECT pg_temp.u(r.period_start), j.payload->'conf' AS conf FROM coord.runs AS r JOIN coord.job AS j ON j.id = r.job_id
 WHERE r.app = 'adx' ORDER BY 1;

-- Bad input: each error with its SQLSTATE.
SELECT pg_temp.err(q) FROM (VALUES
  ($$SELECT coord.define_app(NULL, 'hourly')$$),
  ($$SELECT coord.define_app('', 'hourly')$$),
  ($$SELECT coord.define_app('a b', 'hourly')$$),
  ($$SELECT coord.define_app('x', 'fortnightly')$$),
  ($$SELECT coord.define_app('x')$$),
  ($$SELECT coord.define_app('x', 'hourly', NULL)$$),
  ($$SELECT coord.define_app('x', 'hourly', '[]')$$),
  ($$SELECT coord.define_app('x', 'hourly', '{"adx": "minutely"}')$$),
  ($$SELECT coord.define_app('x', 'hourly', '{"adx": 1}')$$),
  ($$SELECT coord.define_app('x', 'hourly', '{"nope": "hourly"}')$$),
  ($$SELECT coord.define_app('x', 'hourly', '{"x": "hourly"}')$$),
  ($$SELECT coord.define_app('adx', 'hourly', '{"counter": "hourly"}')$$),
  ($$SELECT coord.define_app('x', 'daily', '{"bigcounter": "daily"}')$$),
  ($$SELECT coord.define_app('adx', 'daily', host => 'tr-oddjob-dal-01', queue => 'qa')$$),
  ($$SELECT coord.define_app('x', 'hourly', timeout => '-1 hour')$$),
  ($$SELECT coord.define_app('x', 'hourly', timeout => '0')$$),
  ($$SELECT coord.define_app('x', 'hourly', catchup_from => 'infinity')$$),
  ($$SELECT coord.define_app('x', 'hourly', catchup_from => '0044-03-15 BC')$$),
  ($$SELECT coord.define_app('x', 'hourly', queue => NULL)$$),
  ($$SELECT coord.define_app('x', 'hourly', conf => NULL)$$),
  ($$SELECT coord.drop_app(NULL)$$),
  ($$SELECT coord.drop_app('adx')$$),
  ($$SELECT coord.grid(now(), now() - interval '1 hour')$$),
  ($$SELECT coord.grid(now() - interval '1 hour', now(), ARRAY['nope'])$$)
) AS t(q);
SELECT coord.drop_app('nope') AS dropped_unknown;
SELECT count(*) AS apps_unchanged FROM coord.app_defs;

-- Dropping: dependents first; the runs and unclaimed jobs go with the app.
SELECT coord.drop_app('perday'), coord.drop_app('daily'), coord.drop_app('bigcounter'), coord.drop_app('counter');
SELECT coord.drop_app('adx'), coord.drop_app('ret');
SELECT count(*) AS apps, (SELECT count(*) FROM coord.app_runs) AS runs,
       (SELECT count(*) FROM coord.job WHERE origin LIKE 'a:%') AS run_jobs FROM coord.app_defs;
DELETE FROM coord.job;
DELETE FROM coord.job_history;
