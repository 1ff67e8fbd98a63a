-- pg_coord 0.3.0 -> 0.4.0: written by hand.  Every change to the catalog
-- after the 0.3.0 release goes here and into the fragments under sql/parts/
-- (which build the 0.4.0 install script); test/upgrade/upgrade_and_dump.sh
-- checks that an updated catalog matches a fresh 0.4.0 install object for
-- object.  Frozen once 0.4.0 is released.

\echo Use "ALTER EXTENSION pg_coord UPDATE TO '0.4.0'" to load this file. \quit

-- ---------- job control (issue 27): enqueued_by, progress, cancel, await, my_jobs ----------
ALTER TABLE coord.job ADD COLUMN enqueued_by oid, ADD COLUMN progress jsonb;
COMMENT ON COLUMN coord.job.enqueued_by IS
  'The role that enqueued the job (current_user of coord.enqueue; NULL for jobs of schedules and apps): it may cancel and await the job and read it in coord.my_jobs';
COMMENT ON COLUMN coord.job.progress IS 'The last progress the job''s holder reported (coord.progress)';
ALTER TABLE coord.job_history ADD COLUMN enqueued_by oid, ADD COLUMN progress jsonb;
COMMENT ON COLUMN coord.job_history.enqueued_by IS 'The role that enqueued the job (NULL for jobs of schedules and apps)';
COMMENT ON COLUMN coord.job_history.progress IS 'The last progress the job''s holder reported (coord.progress)';

COMMENT ON FUNCTION coord.cancel(bigint) IS
  'Cancels a job that has not finished (coord_admin, or the role that enqueued it); its holder can no longer complete it and is sent NOTIFY cancel on "coord:job:<id>"';
-- in a fresh install's order (its ACL lists coord_worker first)
REVOKE EXECUTE ON FUNCTION coord.cancel(bigint) FROM coord_admin;
GRANT EXECUTE ON FUNCTION coord.cancel(bigint) TO coord_worker;
GRANT EXECUTE ON FUNCTION coord.cancel(bigint) TO coord_admin;

CREATE FUNCTION coord.progress(id bigint, token bigint, progress jsonb)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_progress'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.progress(bigint, bigint, jsonb) IS
  'The holder of a claim reports progress (coord.jobs.progress, NOTIFY on "coord:job:<id>" at commit); false, and no change, when the claim is no longer the caller''s';
REVOKE ALL ON FUNCTION coord.progress(bigint, bigint, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION coord.progress(bigint, bigint, jsonb) TO coord_worker;

CREATE FUNCTION coord.await(id bigint, timeout interval DEFAULT NULL,
                            OUT state text, OUT result jsonb, OUT error text)
RETURNS record AS 'MODULE_PATHNAME', 'coord_await'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.await(bigint, interval) IS
  'Waits until the job has finished (done, dead or cancelled) and returns how; state NULL at the timeout. For the role that enqueued it, coord_monitor and coord_admin';
REVOKE ALL ON FUNCTION coord.await(bigint, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION coord.await(bigint, interval) TO coord_worker, coord_monitor;

CREATE OR REPLACE VIEW coord.jobs AS
SELECT j.id, j.queue,
       CASE WHEN j.lease_until OPERATOR(pg_catalog.>) pg_catalog.now() OR coord.job_claimed(j.id) THEN 'running'
            WHEN j.run_at OPERATOR(pg_catalog.>) pg_catalog.now() THEN 'scheduled'
            ELSE 'ready' END AS state,
       j.payload, j.run_at, j.priority, j.key, j.group_key, j.host, j.attempt, j.max_attempts,
       j.lease_until, j.last_error, j.token, j.enqueued_at, j.claimed_at,
       NULL::timestamptz AS finished_at, NULL::jsonb AS result, j.origin,
       j.claimed_by::pg_catalog.regrole AS claimed_by,
       j.limit_key, j.snoozes, j.expires_at,
       j.enqueued_by::pg_catalog.regrole AS enqueued_by, j.progress
  FROM coord.job AS j
UNION ALL
SELECT h.id, h.queue, h.state, h.payload, h.run_at, h.priority, h.key, h.group_key, h.host,
       h.attempt, h.max_attempts, NULL::timestamptz, h.last_error, h.token, h.enqueued_at,
       h.claimed_at, h.finished_at, h.result, h.origin, NULL::pg_catalog.regrole,
       h.limit_key, h.snoozes, h.expires_at,
       h.enqueued_by::pg_catalog.regrole, h.progress
  FROM coord.job_history AS h;
COMMENT ON VIEW coord.jobs IS
  'Every live job and every finished job still in the history; token, payload, result, last_error and progress for coord_admin only';
-- the new enqueued_by to coord_monitor (progress is withheld, as result is)
GRANT SELECT (enqueued_by) ON coord.jobs TO coord_monitor;

CREATE VIEW coord.my_jobs WITH (security_barrier) AS
SELECT j.* FROM coord.jobs AS j
 WHERE j.enqueued_by IS NOT NULL
   AND pg_catalog.pg_has_role(j.enqueued_by::pg_catalog.oid, 'USAGE');
COMMENT ON VIEW coord.my_jobs IS
  'The coord.jobs rows of jobs enqueued by current_user or a role whose privileges it has, with every column (result, last_error, progress)';
REVOKE ALL ON coord.my_jobs FROM PUBLIC;
GRANT SELECT ON coord.my_jobs TO coord_admin, coord_worker, coord_monitor;
