
-------------------------------------------------------------------------------
-- Workflows: job dependencies and flows (src/workflows/workflows.c)
-------------------------------------------------------------------------------

-- One row per (parent, child) edge of a job enqueued with after: the
-- parent's end counts down the child's coord.job_wait.pending (ended, so
-- that a parent retried and ending again counts once), and
-- coord.parent_results reads them.  Deleted when the child finishes.
CREATE TABLE coord.job_dep (
    parent bigint NOT NULL,
    child  bigint NOT NULL,
    ended  boolean NOT NULL DEFAULT false,
    PRIMARY KEY (parent, child)
);
CREATE INDEX job_dep_child ON coord.job_dep (child);
COMMENT ON TABLE coord.job_dep IS
  'Job dependencies: child waits until parent ends (coord.enqueue''s after); kept until the child finishes';
COMMENT ON INDEX coord.job_dep_child IS 'A child''s parents: coord.parent_results, and the edges dropped when it finishes';
REVOKE ALL ON coord.job_dep FROM PUBLIC;

-- 0.4.0: who waits on whom, for monitors (coordctl job, the dashboard's job
-- page): the edges of jobs not finished yet (a child's edges go when it
-- finishes), without the payloads or results of either end.
CREATE VIEW coord.job_parents AS
  SELECT d.child AS job, d.parent, d.ended FROM coord.job_dep AS d;
COMMENT ON VIEW coord.job_parents IS
  'The parents of each job not finished yet (its after): job, parent, and whether that parent has ended';

CREATE FUNCTION coord.parent_results(id bigint, token bigint,
                                     OUT parent_id bigint, OUT state text, OUT result jsonb)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'coord_parent_results'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 10;
COMMENT ON FUNCTION coord.parent_results(bigint, bigint) IS
  'For the holder of a claim (id, token): each parent of the job (its after), the state it ended in and its result; no rows when the claim is not the caller''s';

CREATE FUNCTION coord.enqueue_flow(nodes jsonb)
RETURNS jsonb AS 'MODULE_PATHNAME', 'coord_enqueue_flow'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.enqueue_flow(jsonb) IS
  'Enqueues a graph of jobs in one call, all or nothing: nodes [{"name", "queue", "payload", "after": [names or ids], enqueue''s options}]; returns {name: id}';
