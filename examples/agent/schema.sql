-- The coord-agent demo (demo_section.sh): S2's apps on two hosts and S1's
-- components, all run by coord-agent from its allow-list.  This schema
-- only records the clock and what the agents ran, for the checks; the demo
-- defines the apps (coord.define_app), the runs' results (tasks/app-task.sh)
-- are in coord.runs, and S1's index and store are examples/s1/schema.sql.
--
-- Apply with:  psql -d <db> -f examples/agent/schema.sql   (needs CREATE EXTENSION pg_coord)

\set ON_ERROR_STOP on
SET client_min_messages = warning;

CREATE SCHEMA agent_demo;
COMMENT ON SCHEMA agent_demo IS 'coord-agent demo: the clock and what the agents ran';

-- The agents' job lines (loaded from their logs by the demo): one row per
-- job started and per job ended, with the host of the agent that ran it.
CREATE TABLE agent_demo.agent_log (
    host    text NOT NULL,
    at      timestamptz NOT NULL,
    job     bigint NOT NULL,
    event   text NOT NULL,
    task    text NOT NULL,
    outcome text
);
COMMENT ON TABLE agent_demo.agent_log IS
  'The start, end and rejected lines of the coord-agent logs: which host''s agent ran which job, and how it ended';

-- When the demo's clock ticked each simulated hour (real time).
CREATE TABLE agent_demo.ticks (
    sim  timestamptz PRIMARY KEY,
    at   timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp()
);
COMMENT ON TABLE agent_demo.ticks IS 'The demo clock: the real time of each coord.tick(sim)';

\set schema agent_demo
\ir ../lib/wait_until.sql
