-- pg_coord 0.3.0 -> 0.4.0: written by hand.  Every change to the catalog
-- after the 0.3.0 release goes here and into the fragments under sql/parts/
-- (which build the 0.4.0 install script); test/upgrade/upgrade_and_dump.sh
-- checks that an updated catalog matches a fresh 0.4.0 install object for
-- object.  Frozen once 0.4.0 is released.

\echo Use "ALTER EXTENSION pg_coord UPDATE TO '0.4.0'" to load this file. \quit

-- No catalog change yet: the update only moves the version, which the
-- 0.4.0 library checks before it serves a database.

-- ---------- durable steps (issue 27): as sql/parts/workflows_steps.sql and grants.sql ----------
-- One row per step a job recorded, under the claim of the attempt that did
-- it; kept with the job and deleted with its history row.
CREATE TABLE coord.job_step (
    job_id      bigint NOT NULL,
    name        text NOT NULL,
    step_no     integer NOT NULL,
    attempt     integer NOT NULL,
    result      jsonb NOT NULL,
    recorded_at timestamptz NOT NULL,
    PRIMARY KEY (job_id, name),
    UNIQUE (job_id, step_no)
);
CREATE INDEX job_step_recorded_at ON coord.job_step (recorded_at);
COMMENT ON TABLE coord.job_step IS
  'Durable steps: the result each step of a job recorded (coord.step_done), kept with the job and deleted with its history row';
COMMENT ON INDEX coord.job_step_recorded_at IS
  'coord.tick''s search for the steps of jobs removed without a history row';
REVOKE ALL ON coord.job_step FROM PUBLIC;

CREATE FUNCTION coord.step(id bigint, token bigint, name text)
RETURNS jsonb AS 'MODULE_PATHNAME', 'coord_step'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.step(bigint, bigint, text) IS
  'A durable step: the result an earlier attempt of the job recorded for step name, or NULL (do the step now); 55000 when the claim is not the caller''s live one';

CREATE FUNCTION coord.step_done(id bigint, token bigint, name text, result jsonb)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_step_done'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.step_done(bigint, bigint, text, jsonb) IS
  'Records the result of step name under the caller''s live claim; false, recording nothing, when the claim is no longer the caller''s; the first result of a step stays';

CREATE VIEW coord.job_steps AS
SELECT s.job_id, s.name, s.step_no, s.attempt, s.result, s.recorded_at
  FROM coord.job_step AS s;
COMMENT ON VIEW coord.job_steps IS
  'Durable steps recorded by jobs: job_id, name, step_no (1, 2, ... in the order recorded), attempt (the job''s attempt that recorded it), result, recorded_at';

CREATE FUNCTION coord.job_steps_purge()
RETURNS trigger AS 'MODULE_PATHNAME', 'coord_job_steps_purge'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.job_steps_purge() IS
  'Trigger of coord.job_history: deletes the steps of the jobs whose history rows were deleted, unless the job is live again (coord.retry)';
CREATE TRIGGER job_steps_purge
  AFTER DELETE ON coord.job_history REFERENCING OLD TABLE AS purged_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION coord.job_steps_purge();
COMMENT ON TRIGGER job_steps_purge ON coord.job_history IS
  'Deletes the steps of purged jobs (coord.purge_jobs, the tick''s purge, a DELETE by hand)';
-- users' state: dumped (sql/parts/dump.sql explains)
SELECT pg_catalog.pg_extension_config_dump('coord.job_step', '');
REVOKE ALL ON FUNCTION coord.step(bigint, bigint, text), coord.step_done(bigint, bigint, text, jsonb),
  coord.job_steps_purge() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION coord.step(bigint, bigint, text), coord.step_done(bigint, bigint, text, jsonb)
  TO coord_worker;
GRANT SELECT ON coord.job_steps TO coord_admin;
GRANT SELECT (job_id, name, step_no, attempt, recorded_at) ON coord.job_steps TO coord_monitor;
