-- Workflows: an import flow, a batch with a callback, cancel and await, on
-- pg_coord (examples/flows).
--
-- The flow, the batch and the jobs are pg_coord's (coord.enqueue_flow,
-- coord.open_batch, coord.jobs).  The tables below are only what the
-- programs record of their own work, so that a node run twice, a node
-- started before its parents ended, or a lost notification would show.
--
-- Apply with:  psql -d <db> -f examples/flows/schema.sql   (needs CREATE EXTENSION pg_coord)

\set ON_ERROR_STOP on
SET client_min_messages = warning;

CREATE SCHEMA flows;
COMMENT ON SCHEMA flows IS 'Workflows example: what the producer, the workers and the export task recorded';

-- The flow's nodes, written by the producer in the transaction of its
-- coord.enqueue_flow call: each node's job id and the names it runs after.
CREATE TABLE flows.nodes (
    name        text PRIMARY KEY,
    job_id      bigint NOT NULL UNIQUE,
    after       text[] NOT NULL,
    enqueued_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE flows.nodes IS 'The import flow: one row per node, written with the coord.enqueue_flow that created it';

-- One row per claim, committed with the claim: a worker killed while it
-- works leaves its row, and no row in flows.results.
CREATE TABLE flows.claims (
    job_id     bigint NOT NULL,
    queue      text NOT NULL,
    node       text,                      -- the flow's node name, for jobs of queue import
    token      bigint NOT NULL,
    attempt    integer NOT NULL,
    worker     text NOT NULL,
    claimed_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp()
);
CREATE INDEX ON flows.claims (job_id);
COMMENT ON TABLE flows.claims IS 'One row per claim of a job, committed with the claim';

-- One row per job done, written in the same transaction as its
-- coord.complete (rolled back with it when complete answers false).
-- Deliberately no unique constraint on job_id: a job done twice would show
-- as two rows.
CREATE TABLE flows.results (
    job_id   bigint NOT NULL,
    queue    text NOT NULL,
    node     text,
    token    bigint NOT NULL,
    worker   text NOT NULL,
    result   jsonb,
    ended_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp()
);
CREATE INDEX ON flows.results (job_id);
COMMENT ON TABLE flows.results IS 'One row per job done, written in the transaction of its coord.complete';

-- What the producer's coord.await calls returned, and when (the server's clock).
CREATE TABLE flows.awaits (
    what        text NOT NULL,
    job_id      bigint NOT NULL,
    asked_at    timestamptz NOT NULL,
    returned_at timestamptz NOT NULL,
    state       text,
    result      jsonb
);
COMMENT ON TABLE flows.awaits IS 'The producer''s coord.await calls: the job, when it asked, when the answer came, the answer';

-- The export task (export.sh, run by coord-agent): its process and the
-- process doing the work, at its start; ended_at if it ever gets to its end.
CREATE TABLE flows.exports (
    job_id     bigint NOT NULL,
    token      bigint NOT NULL,
    pid        integer NOT NULL,
    work_pid   integer NOT NULL,
    started_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    ended_at   timestamptz
);
COMMENT ON TABLE flows.exports IS 'The export task''s runs under coord-agent: its pids at the start, its end if it got there';

\set schema flows
\ir ../lib/wait_until.sql
