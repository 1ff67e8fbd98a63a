-- S5: an application server's scheduler -- recurring events run by several
-- worker processes -- on pg_coord.
--
-- The events themselves are pg_coord schedules (coord.schedule); their
-- instances are jobs on queue 'events' that the workers (worker.py) claim
-- session-bound and complete.  The tables below are only the workers' own
-- record of what they ran, and the demo's samples of coord.jobs, so that
-- overlapping runs, lost runs or a second live instance would show.
--
-- Apply with:  psql -d <db> -f examples/s5/schema.sql   (needs CREATE EXTENSION pg_coord)

\set ON_ERROR_STOP on
SET client_min_messages = warning;

CREATE SCHEMA s5;
COMMENT ON SCHEMA s5 IS 'S5 example: the runs of the recurring events, and samples of their live instances';

-- One row per run.  The claiming statement inserts it (and commits it, so a
-- worker killed right after its claim still leaves the row, with started_at
-- and no finished_at); the transaction that calls coord.complete sets
-- finished_at before the call, and next_job_id/next_run_at (the instance
-- that complete put on for the next run) after it, and commits only if
-- complete answered true.  killed_at is set by the demo for the run of the
-- worker it SIGKILLed.  Deliberately no unique constraint on job_id.
CREATE TABLE s5.runs (
    id          bigserial PRIMARY KEY,
    event       text NOT NULL,
    job_id      bigint NOT NULL,
    worker      text NOT NULL,
    token       bigint NOT NULL,
    attempt     integer NOT NULL,
    slot        timestamptz NOT NULL,             -- the instance's run_at
    payload     jsonb NOT NULL,
    pid         integer NOT NULL DEFAULT pg_catalog.pg_backend_pid(),
    started_at  timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    finished_at timestamptz,
    next_job_id bigint,
    next_run_at timestamptz,
    killed_at   timestamptz
);
CREATE INDEX ON s5.runs (event, started_at);
CREATE INDEX ON s5.runs (job_id);
COMMENT ON TABLE s5.runs IS
  'One row per run of an event: written at claim time, finished in the transaction that completes the instance';

-- What s5.watch saw: per schedule, how many instances were live (scheduled,
-- ready or running) and how many running, in one snapshot.
CREATE TABLE s5.samples (
    at      timestamptz NOT NULL,
    event   text NOT NULL,
    live    integer NOT NULL,
    running integer NOT NULL
);
COMMENT ON TABLE s5.samples IS 'Live and running instances per schedule, sampled by s5.watch';

CREATE TABLE s5.ticks (
    at    timestamptz NOT NULL,
    done  integer,             -- what coord.tick returned: how much work it found
    error text                 -- or the error it raised
);
COMMENT ON TABLE s5.ticks IS 'What each coord.tick called by s5.watch returned, or the error it raised';

CREATE TABLE s5.watch_stop (stop boolean PRIMARY KEY);
COMMENT ON TABLE s5.watch_stop IS 'A row here stops s5.watch';

-- Samples coord.jobs every `every_ms` until a row appears in s5.watch_stop
-- (or `seconds` have passed), committing each sample; every `tick_every`-th
-- sample it also calls coord.tick(), as pg_cron would once a minute (0:
-- never).  The instances of a schedule are put on eagerly, so a tick should
-- find nothing to do; it runs here to show that it does not disturb them.
-- Run it with CALL in a session of its own.
-- (No SET search_path clause: a procedure with one cannot COMMIT; every name
-- inside is schema-qualified or in pg_catalog.)
CREATE PROCEDURE s5.watch(queue text, seconds numeric, every_ms integer, tick_every integer DEFAULT 0)
LANGUAGE plpgsql
AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + seconds * interval '1 second';
    n bigint := 0;
BEGIN
    WHILE clock_timestamp() < deadline AND NOT EXISTS (SELECT FROM s5.watch_stop) LOOP
        INSERT INTO s5.samples (at, event, live, running)
        SELECT clock_timestamp(), s.name,
               count(j.id) FILTER (WHERE j.state IN ('scheduled', 'ready', 'running')),
               count(j.id) FILTER (WHERE j.state = 'running')
          FROM coord.schedule_defs AS s
          LEFT JOIN coord.jobs AS j ON j.origin = 's:' || s.name
         WHERE s.queue = watch.queue
         GROUP BY s.name;
        COMMIT;
        n := n + 1;
        IF tick_every > 0 AND n % tick_every = 0 THEN
            BEGIN
                INSERT INTO s5.ticks (at, done) VALUES (clock_timestamp(), coord.tick());
            EXCEPTION WHEN OTHERS THEN   -- recorded for the demo's check; the sampling goes on
                INSERT INTO s5.ticks (at, error) VALUES (clock_timestamp(), SQLERRM);
            END;
            COMMIT;
        END IF;
        PERFORM pg_sleep(every_ms / 1000.0);
    END LOOP;
END $$;
COMMENT ON PROCEDURE s5.watch(text, numeric, integer, integer) IS
  'For the demo: samples the live instances of the schedules of a queue into s5.samples, and calls coord.tick now and then';

\set schema s5
\ir ../lib/wait_until.sql
