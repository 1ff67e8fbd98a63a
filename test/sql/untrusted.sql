-- Hostile definitions (issue 13, section 5): what cannot make a valid run is
-- refused when it is defined; a stored definition that fails at run time
-- (one stored before these checks, simulated here by writing the catalog as
-- superuser) costs only its own work: coord.tick and the completions of its
-- upstream runs go on, with a WARNING and the error in coord.runs or
-- coord.schedules.  Also: app runs' keys are out of callers' reach, retry
-- against a taken key, and PREPARE TRANSACTION after pg_coord locks.
\set VERBOSITY terse
SET client_min_messages = warning;
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE s text; m text;
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT;
  RETURN s || ': ' || m;
END $$;
CREATE ROLE regress_h3_admin IN ROLE coord_admin;
CREATE ROLE regress_h3_worker IN ROLE coord_worker;

-- ---------- refused at definition time ----------
-- a fixed-rate grid starting near the end of the range would store a slot
-- PostgreSQL cannot read back (294277-01-01)
SELECT pg_temp.err($$SELECT coord.schedule('h_end', 'hq', every => '1 day', starts_at => '294276-12-31 00:00Z', fixed_rate => true)$$);
SELECT pg_temp.err($$SELECT coord.schedule('h_end', 'hq', every => '1 day', starts_at => '294276-12-31 00:00Z')$$);
-- an every so long that the second run would be out of range
SELECT pg_temp.err($$SELECT coord.schedule('h_end', 'hq', every => '106750000 days')$$);
SELECT count(*) AS refused_schedules FROM coord.schedules WHERE name = 'h_end';
-- a timeout that would overflow the claim time it is added to
SELECT pg_temp.err($$SELECT coord.define_app('h_to', starts => 'hourly', timeout => '106750000 days')$$);
-- a conf that leaves no room in a run's payload (over the 64 kB limit on conf)
SELECT pg_temp.err($$SELECT coord.define_app('h_big', starts => 'hourly', conf => jsonb_build_object('x', repeat('x', 1048500)))$$);
-- a first period that ends after the years apps support
SELECT pg_temp.err($$SELECT coord.define_app('h_late', starts => 'yearly', catchup_from => '9999-06-01Z')$$);
SELECT count(*) AS refused_apps FROM coord.app_defs WHERE name IN ('h_to', 'h_big', 'h_late');

-- ---------- coord.tick: one broken app, the others proceed ----------
SELECT coord.define_app('h_bad', starts => 'hourly', queue => 'hq_t', catchup_from => '2024-01-01Z');
SELECT coord.define_app('h_good', starts => 'hourly', queue => 'hq_t', catchup_from => '2024-01-01Z');
-- stored as an older version would have: a conf too large for any run
UPDATE coord.app_defs SET conf = jsonb_build_object('x', repeat('x', 1048500)) WHERE name = 'h_bad';
SET ROLE regress_h3_admin;
SET search_path = public, pg_temp;
SET client_min_messages = warning;
SELECT coord.tick('2024-01-01 01:30Z') AS made;
-- the caller's identity and search_path are back after the caught failure
SELECT current_user, current_setting('search_path') AS search_path;
RESET ROLE;
RESET search_path;
-- h_good's runs were written as the owner after h_bad's failure was caught
SELECT app, count(*) AS runs, max(app_error) AS app_error FROM coord.runs
 WHERE app IN ('h_bad', 'h_good') GROUP BY app ORDER BY app;
SELECT name, last_error FROM coord.app_defs WHERE name IN ('h_bad', 'h_good') ORDER BY name;
-- fixed: the next tick makes its runs and clears the error
UPDATE coord.app_defs SET conf = '{}' WHERE name = 'h_bad';
SELECT coord.tick('2024-01-01 01:30Z') AS made;
SELECT name, count(r.app) AS runs, d.last_error FROM coord.app_defs AS d LEFT JOIN coord.runs AS r ON r.app = d.name
 WHERE name IN ('h_bad', 'h_good') GROUP BY name, d.last_error ORDER BY name;

-- a stored timeout that would overflow the timestamp it is added to does not stop ticks
UPDATE coord.app_defs SET timeout = '106750000 days' WHERE name = 'h_good';
SELECT count(*) AS claimed FROM coord.claim('hq_t', 1, lease => '1 hour');
SELECT coord.tick('2024-01-01 01:40Z') >= 0 AS ticked;
SELECT count(*) AS app_errors FROM coord.app_defs WHERE last_error IS NOT NULL AND name LIKE 'h\_%';

-- ---------- a completion: a broken dependent does not fail its upstream's ----------
SELECT coord.define_app('h_up', starts => 'hourly', queue => 'hq_up', catchup_from => '2024-01-01Z');
SELECT coord.define_app('h_dbad', depends => '{"h_up": "hourly"}', queue => 'hq_d');
SELECT coord.define_app('h_dgood', depends => '{"h_up": "hourly"}', queue => 'hq_d');
SELECT coord.tick('2024-01-01 00:10Z') >= 0 AS ticked;
UPDATE coord.app_defs SET conf = jsonb_build_object('x', repeat('x', 1048500)) WHERE name = 'h_dbad';
SET ROLE regress_h3_worker;
SET search_path = public, pg_temp;
SELECT coord.complete(id, token, '{"ok": 1}') AS completed FROM coord.claim('hq_up', 1);
SELECT current_user, current_setting('search_path') AS search_path;
RESET ROLE;
RESET search_path;
SELECT app, state FROM coord.runs WHERE app IN ('h_up', 'h_dbad', 'h_dgood') ORDER BY app;
SELECT name, last_error FROM coord.app_defs WHERE name IN ('h_dbad', 'h_dgood') ORDER BY name;
-- once fixed, a tick makes the missing run
UPDATE coord.app_defs SET conf = '{}' WHERE name = 'h_dbad';
SELECT coord.tick('2024-01-01 00:20Z') >= 0 AS ticked;
SELECT app, state FROM coord.runs WHERE app = 'h_dbad';

-- ---------- schedules ----------
-- a completion whose next slot would be out of range: the completion stands, the schedule stops
SELECT coord.schedule('h_s', 'hq_s', every => '1 hour') > 0 AS scheduled;
UPDATE coord.schedule_defs SET every = '106750000 days' WHERE name = 'h_s';
UPDATE coord.job SET run_at = now() WHERE origin = 's:h_s';
SELECT coord.complete(id, token) AS completed FROM coord.claim('hq_s', 1);
SELECT name, next_run_at, last_state, job_id IS NULL AS no_instance, last_error FROM coord.schedules WHERE name = 'h_s';
-- ticks do not run the finished slot again
SELECT coord.tick() >= 0 AS ticked;
SELECT count(*) AS instances FROM coord.job WHERE origin = 's:h_s';
-- the same definition again starts it anew
UPDATE coord.schedule_defs SET every = '1 hour' WHERE name = 'h_s';
SELECT coord.schedule('h_s', 'hq_s', every => '1 hour') > 0 AS scheduled;
SELECT job_id IS NOT NULL AS has_instance, last_error FROM coord.schedules WHERE name = 'h_s';
-- a tick that cannot repair one schedule repairs the others
SELECT coord.schedule('h_s1', 'hq_s', cron => '0 3 * * *') > 0, coord.schedule('h_s2', 'hq_s', every => '1 day') > 0;
UPDATE coord.schedule_defs SET cron = 'bogus' WHERE name = 'h_s1';
DELETE FROM coord.job WHERE origin IN ('s:h_s1', 's:h_s2');
SELECT coord.tick() >= 0 AS ticked;
SELECT name, job_id IS NOT NULL AS has_instance, last_error FROM coord.schedules WHERE name IN ('h_s1', 'h_s2') ORDER BY name;

-- ---------- app runs' keys are out of callers' reach ----------
-- a worker that enqueues a run's predictable key first neither blocks the run nor is taken for it
SELECT coord.enqueue('hq_k', '{"squat": true}', key => '2024-01-01-0000-h_key') AS squatter \gset
SELECT coord.define_app('h_key', starts => 'hourly', queue => 'hq_k', catchup_from => '2024-01-01Z');
SELECT coord.tick('2024-01-01 00:10Z') >= 0 AS ticked;
SELECT state, job_id IS NOT NULL AND job_id <> :squatter AS own_job FROM coord.runs WHERE app = 'h_key';
SELECT count(*) AS jobs_with_that_key FROM coord.job WHERE queue = 'hq_k' AND key = '2024-01-01-0000-h_key';
-- callers' keys still dedupe among themselves
SELECT coord.enqueue('hq_k', '{}', key => '2024-01-01-0000-h_key') = :squatter AS deduped;

-- ---------- coord.retry ----------
SELECT coord.enqueue('hq_r', '{}', key => 'rk', max_attempts => 1) AS dead_id \gset
SELECT token AS old_token FROM coord.claim('hq_r', 1) \gset
SELECT coord.fail(:dead_id, :old_token, 'boom');
SELECT coord.enqueue('hq_r', '{"second": true}', key => 'rk') AS live_id \gset
-- its key is taken: a clear error, and the dead job stays dead
SELECT regexp_replace(pg_temp.err(format('SELECT coord.retry(%s)', :dead_id)), 'job [0-9]+', 'job N', 'g') AS retry_taken;
SELECT coord.job_state(:dead_id);
SELECT coord.cancel(:live_id);
SELECT coord.retry(:dead_id);
-- a new token: the claimer it died under cannot complete it
SELECT token > :old_token AS new_token FROM coord.job WHERE id = :dead_id;
SELECT coord.complete(:dead_id, :old_token) AS stale_complete;

-- ---------- PREPARE TRANSACTION after pg_coord locks is refused ----------
BEGIN;
SELECT coord.lock('/h3/prep');
PREPARE TRANSACTION 'h3_lock';
BEGIN;
SELECT coord.xact_lock('/h3/prep');
PREPARE TRANSACTION 'h3_xact';
SELECT coord.lock('/h3/prep');
BEGIN;
SELECT coord.unlock('/h3/prep');
PREPARE TRANSACTION 'h3_unlock';
SELECT coord.unlock('/h3/prep');
SELECT coord.enqueue('hq_p', '{}') > 0 AS enqueued;
BEGIN;
SELECT count(*) FROM coord.claim('hq_p', 1, session_bound => true);
PREPARE TRANSACTION 'h3_claim';

-- ---------- clean up ----------
SELECT coord.drop_app(n) FROM unnest(ARRAY['h_dbad', 'h_dgood', 'h_up', 'h_bad', 'h_good', 'h_key']) AS n;
SELECT coord.unschedule(n) FROM unnest(ARRAY['h_s', 'h_s1', 'h_s2']) AS n;
DELETE FROM coord.job WHERE queue LIKE 'hq%';
DELETE FROM coord.job_history WHERE queue LIKE 'hq%';
DROP ROLE regress_h3_admin;
DROP ROLE regress_h3_worker;
