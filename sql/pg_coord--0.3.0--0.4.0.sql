-- pg_coord 0.3.0 -> 0.4.0: written by hand.  Every change to the catalog
-- after the 0.3.0 release goes here and into the fragments under sql/parts/
-- (which build the 0.4.0 install script); test/upgrade/upgrade_and_dump.sh
-- checks that an updated catalog matches a fresh 0.4.0 install object for
-- object.  Frozen once 0.4.0 is released.

\echo Use "ALTER EXTENSION pg_coord UPDATE TO '0.4.0'" to load this file. \quit

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
-- Workflows (job dependencies, batches): a batch column on jobs, and
-- enqueue / enqueue_many take after, on_parent_failure and batch after
-- expires_at.  The functions are dropped and created again (a default
-- cannot be added to a function's argument list in place); calls of the
-- 0.3.0 form, positional or named, resolve to the new ones.
ALTER TABLE coord.job ADD COLUMN batch bigint;
COMMENT ON COLUMN coord.job.batch IS 'The batch the job was enqueued into (coord.enqueue''s batch), or NULL';
ALTER TABLE coord.job_history ADD COLUMN batch bigint;
COMMENT ON COLUMN coord.job_history.batch IS 'The batch the job was enqueued into, or NULL';

DROP FUNCTION coord.enqueue(text, jsonb, timestamptz, integer, text, text, integer, text, text, integer, timestamptz);
CREATE FUNCTION coord.enqueue(queue text, payload jsonb DEFAULT '{}', run_at timestamptz DEFAULT NULL,
                              priority integer DEFAULT 0, key text DEFAULT NULL, host text DEFAULT NULL,
                              max_attempts integer DEFAULT 25, group_key text DEFAULT NULL,
                              limit_key text DEFAULT NULL, max_snoozes integer DEFAULT 100,
                              expires_at timestamptz DEFAULT NULL, after bigint[] DEFAULT NULL,
                              on_parent_failure text DEFAULT 'cancel', batch bigint DEFAULT NULL,
                              trace text DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_enqueue'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.enqueue(text, jsonb, timestamptz, integer, text, text, integer, text, text, integer, timestamptz, bigint[], text, bigint, text) IS
  'Adds a job and returns its id; with key, returns the id of the live job with that key instead of adding one; with after, it waits until those jobs are done; trace, a W3C traceparent, is stored and returned by its claims';
REVOKE ALL ON FUNCTION coord.enqueue(text, jsonb, timestamptz, integer, text, text, integer, text, text, integer, timestamptz, bigint[], text, bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION coord.enqueue(text, jsonb, timestamptz, integer, text, text, integer, text, text, integer, timestamptz, bigint[], text, bigint, text) TO coord_worker;

DROP FUNCTION coord.enqueue_many(text, jsonb[], timestamptz, integer, text, integer, text, integer, timestamptz);
CREATE FUNCTION coord.enqueue_many(queue text, payloads jsonb[], run_at timestamptz DEFAULT NULL,
                                   priority integer DEFAULT 0, host text DEFAULT NULL,
                                   max_attempts integer DEFAULT 25, limit_key text DEFAULT NULL,
                                   max_snoozes integer DEFAULT 100, expires_at timestamptz DEFAULT NULL,
                                   after bigint[] DEFAULT NULL, on_parent_failure text DEFAULT 'cancel',
                                   batch bigint DEFAULT NULL, trace text DEFAULT NULL)
RETURNS SETOF bigint AS 'MODULE_PATHNAME', 'coord_enqueue_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
COMMENT ON FUNCTION coord.enqueue_many(text, jsonb[], timestamptz, integer, text, integer, text, integer, timestamptz, bigint[], text, bigint, text) IS
  'Adds one job per payload; returns their ids in array order; with after, each waits until those jobs are done; trace (a W3C traceparent) is stored on each';
REVOKE ALL ON FUNCTION coord.enqueue_many(text, jsonb[], timestamptz, integer, text, integer, text, integer, timestamptz, bigint[], text, bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION coord.enqueue_many(text, jsonb[], timestamptz, integer, text, integer, text, integer, timestamptz, bigint[], text, bigint, text) TO coord_worker;

-- Job dependencies (docs/workflows.md): deps on coord.job, the waiting
-- jobs' table (made after every column change of coord.job above: it copies
-- them), coord.jobs showing waiting jobs, the edges and the functions.
ALTER TABLE coord.job ADD COLUMN deps smallint NOT NULL DEFAULT 0;
COMMENT ON COLUMN coord.job.deps IS
  'Workflows: 1 when jobs wait on this one, 2 when it was enqueued with after (its finish then goes to src/workflows/)';
COMMENT ON FUNCTION coord.job_state(bigint) IS
  'waiting, scheduled, ready, running, done, dead, cancelled, or NULL once purged';
-- job control's columns, and trace context's (issue 29), before
-- coord.job_wait, which copies coord.job's
ALTER TABLE coord.job ADD COLUMN enqueued_by oid, ADD COLUMN progress jsonb, ADD COLUMN trace text;
COMMENT ON COLUMN coord.job.enqueued_by IS
  'The role that enqueued the job (current_user of coord.enqueue; NULL for jobs of schedules and apps): it may cancel and await the job and read it in coord.my_jobs';
COMMENT ON COLUMN coord.job.progress IS 'The last progress the job''s holder reported (coord.progress)';
COMMENT ON COLUMN coord.job.trace IS
  'The W3C traceparent the job was enqueued with (coord.enqueue''s trace), returned by its claims; or NULL';
ALTER TABLE coord.job_history ADD COLUMN enqueued_by oid, ADD COLUMN progress jsonb, ADD COLUMN trace text;
COMMENT ON COLUMN coord.job_history.enqueued_by IS 'The role that enqueued the job (NULL for jobs of schedules and apps)';
COMMENT ON COLUMN coord.job_history.progress IS 'The last progress the job''s holder reported (coord.progress)';
COMMENT ON COLUMN coord.job_history.trace IS 'The W3C traceparent the job was enqueued with, or NULL';
-- coord.claim returns the trace (and so do complete_and_claim's and fail_and_claim's types below)
ALTER TYPE coord.claimed_job ADD ATTRIBUTE trace text;
COMMENT ON TYPE coord.claimed_job IS 'A claimed job, as coord.claim returns it (trace: the W3C traceparent it was enqueued with, or NULL)';


-- Waiting jobs (enqueued with after, a parent not ended yet): out of
-- coord.job, so that they are in no index a claim walks and cost claims
-- nothing.  The columns of coord.job, then the holder's: pending (parents
-- not ended) and on_parent_failure.  The transaction that ends the last
-- parent moves the row into coord.job (src/workflows/README.md).
CREATE TABLE coord.job_wait (
    LIKE coord.job INCLUDING DEFAULTS,
    pending           integer NOT NULL,
    on_parent_failure text NOT NULL,
    PRIMARY KEY (id)
);
COMMENT ON TABLE coord.job_wait IS
  'Waiting jobs: enqueued with after, moved into coord.job when their last parent ends';
REVOKE ALL ON coord.job_wait FROM PUBLIC;

-- ---------- job control (issue 27): progress, cancel, await, my_jobs ----------
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
       j.enqueued_by::pg_catalog.regrole AS enqueued_by, j.progress, j.trace
  FROM coord.job AS j
UNION ALL
SELECT h.id, h.queue, h.state, h.payload, h.run_at, h.priority, h.key, h.group_key, h.host,
       h.attempt, h.max_attempts, NULL::timestamptz, h.last_error, h.token, h.enqueued_at,
       h.claimed_at, h.finished_at, h.result, h.origin, NULL::pg_catalog.regrole,
       h.limit_key, h.snoozes, h.expires_at,
       h.enqueued_by::pg_catalog.regrole, h.progress, h.trace
  FROM coord.job_history AS h
UNION ALL
SELECT w.id, w.queue, 'waiting', w.payload, w.run_at, w.priority, w.key, w.group_key, w.host,
       w.attempt, w.max_attempts, NULL::timestamptz, w.last_error, w.token, w.enqueued_at,
       w.claimed_at, NULL::timestamptz, NULL::jsonb, w.origin, NULL::pg_catalog.regrole,
       w.limit_key, w.snoozes, w.expires_at,
       w.enqueued_by::pg_catalog.regrole, w.progress, w.trace
  FROM coord.job_wait AS w;
COMMENT ON VIEW coord.jobs IS
  'Every live job (waiting ones too) and every finished job still in the history; token, payload, result, last_error and progress for coord_admin only';


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
GRANT EXECUTE ON FUNCTION coord.parent_results(bigint, bigint), coord.enqueue_flow(jsonb) TO coord_worker;
REVOKE ALL ON FUNCTION coord.parent_results(bigint, bigint), coord.enqueue_flow(jsonb) FROM PUBLIC;
-- Batches (issue 27; sql/parts/batches.sql, src/workflows/README.md)
CREATE SEQUENCE coord.batch_id_seq;
CREATE TABLE coord.batch (
    id               bigint PRIMARY KEY DEFAULT pg_catalog.nextval('coord.batch_id_seq'::pg_catalog.regclass),
    callback_queue   text NOT NULL,
    callback_payload jsonb NOT NULL,
    on_success       boolean NOT NULL,
    opened_by        oid NOT NULL,
    opened_at        timestamptz NOT NULL DEFAULT pg_catalog.now(),
    sealed_at        timestamptz
);
ALTER SEQUENCE coord.batch_id_seq OWNED BY coord.batch.id;
COMMENT ON SEQUENCE coord.batch_id_seq IS 'Batch ids (coord.open_batch)';
COMMENT ON TABLE coord.batch IS 'Batches opened by coord.open_batch: the callback to enqueue, who opened it, whether it is sealed';
COMMENT ON COLUMN coord.batch.on_success IS 'true for on => ''success'': no callback when a job of the batch died or was cancelled';
COMMENT ON COLUMN coord.batch.opened_by IS 'The role that called coord.open_batch (it, or coord_admin, may enqueue into it and seal it)';
REVOKE ALL ON coord.batch FROM PUBLIC;

-- One row per (batch, backend number): a backend adds its own counts, so two
-- concurrent transactions never update the same row.
CREATE TABLE coord.batch_tally (
    batch     bigint NOT NULL REFERENCES coord.batch (id) ON DELETE CASCADE,
    stripe    integer NOT NULL,
    enqueued  bigint NOT NULL DEFAULT 0,
    done      bigint NOT NULL DEFAULT 0,
    dead      bigint NOT NULL DEFAULT 0,
    cancelled bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (batch, stripe)
);
COMMENT ON TABLE coord.batch_tally IS 'Counts of a batch''s jobs, one row per backend number that enqueued or finished some; coord.batches sums them';
REVOKE ALL ON coord.batch_tally FROM PUBLIC;

-- The row that ends a batch: inserted once, by the transaction that saw the
-- sealed batch's last job finish (or by seal_batch when none was left).
CREATE TABLE coord.batch_end (
    batch        bigint PRIMARY KEY REFERENCES coord.batch (id) ON DELETE CASCADE,
    callback_job bigint,
    ended_at     timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE coord.batch_end IS 'Ended batches: the callback job enqueued (NULL when on => ''success'' and a job died or was cancelled)';
REVOKE ALL ON coord.batch_end FROM PUBLIC;

CREATE FUNCTION coord.open_batch(callback_queue text, callback_payload jsonb DEFAULT '{}', "on" text DEFAULT 'complete')
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_open_batch'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.open_batch(text, jsonb, text) IS
  'Opens a batch: jobs join it with coord.enqueue(..., batch => id); once it is sealed and all of them have finished, a job is enqueued into callback_queue with callback_payload plus the counts (on => ''success'': only if none died or was cancelled)';

CREATE FUNCTION coord.seal_batch(batch bigint)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_seal_batch'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.seal_batch(bigint) IS
  'Seals a batch: no more jobs join it; the callback follows its last job (now, if none is left). false if it was sealed already';

CREATE VIEW coord.batches AS
SELECT b.id AS batch, b.callback_queue, b.sealed_at IS NOT NULL AS sealed,
       t.total, t.done, t.dead, t.cancelled,
       t.total OPERATOR(pg_catalog.-) t.done OPERATOR(pg_catalog.-) t.dead
         OPERATOR(pg_catalog.-) t.cancelled AS waiting,
       e.callback_job
  FROM coord.batch AS b
  CROSS JOIN LATERAL (
    SELECT COALESCE(pg_catalog.sum(s.enqueued), 0)::pg_catalog.int8 AS total,
           COALESCE(pg_catalog.sum(s.done), 0)::pg_catalog.int8 AS done,
           COALESCE(pg_catalog.sum(s.dead), 0)::pg_catalog.int8 AS dead,
           COALESCE(pg_catalog.sum(s.cancelled), 0)::pg_catalog.int8 AS cancelled
      FROM coord.batch_tally AS s WHERE s.batch OPERATOR(pg_catalog.=) b.id) AS t
  LEFT JOIN coord.batch_end AS e ON e.batch OPERATOR(pg_catalog.=) b.id;
COMMENT ON VIEW coord.batches IS
  'Batches: total jobs enqueued into each, how many ended done, dead, cancelled, how many have not finished yet (waiting), and the callback job once enqueued';

-- users' state: dumped (sql/parts/dump.sql explains)
SELECT pg_catalog.pg_extension_config_dump('coord.batch', '');
SELECT pg_catalog.pg_extension_config_dump('coord.batch_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('coord.batch_tally', '');
SELECT pg_catalog.pg_extension_config_dump('coord.batch_end', '');
REVOKE ALL ON FUNCTION coord.open_batch(text, jsonb, text), coord.seal_batch(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION coord.open_batch(text, jsonb, text), coord.seal_batch(bigint) TO coord_worker;
GRANT SELECT ON coord.batches TO coord_admin, coord_monitor;

-- the new enqueued_by and trace to coord_monitor (progress is withheld, as result is)
GRANT SELECT (enqueued_by, trace) ON coord.jobs TO coord_monitor;

CREATE VIEW coord.my_jobs WITH (security_barrier) AS
SELECT j.* FROM coord.jobs AS j
 WHERE j.enqueued_by IS NOT NULL
   AND pg_catalog.pg_has_role(j.enqueued_by::pg_catalog.oid, 'USAGE');
COMMENT ON VIEW coord.my_jobs IS
  'The coord.jobs rows of jobs enqueued by current_user or a role whose privileges it has, with every column (result, last_error, progress)';
REVOKE ALL ON coord.my_jobs FROM PUBLIC;
GRANT SELECT ON coord.my_jobs TO coord_admin, coord_worker, coord_monitor;

-- ---------- the tick's health for coord_monitor (sql/parts/schedules.sql) ----------
-- The tick's health for monitors, who read views, not tables.
CREATE VIEW coord.tick_health AS
SELECT t.ticked_at, t.last_tick_at, t.ticks,
       pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) t.ticked_at AS age
  FROM coord.tick_state AS t;
COMMENT ON VIEW coord.tick_health IS
  'When coord.tick last ran (ticked_at, by the server''s clock), the now it was given (last_tick_at), how many ticks ran, and how long ago, by the clock, the last one ran (age; NULL before the first)';
REVOKE ALL ON coord.tick_health FROM PUBLIC;
GRANT SELECT ON coord.tick_health TO coord_admin, coord_monitor;

-- The tick purges ended batches (issue 27 follow-up; sql/parts/batches.sql)
CREATE INDEX batch_end_ended_at ON coord.batch_end (ended_at);
COMMENT ON INDEX coord.batch_end_ended_at IS 'The tick''s purge finds the batches that ended longest ago';
-- ---------- one commit per job (issue 28): as sql/parts/jobs.sql and grants.sql ----------
-- One commit per job (0.4.0): finish a job and claim the next ones of its
-- queue in one statement.  One row per job claimed, each with what
-- coord.complete (completed) or coord.fail (state) returned; exactly one row,
-- the job columns NULL, when nothing was claimed.
-- Their rows: what complete (completed) or fail (state) returned, then the
-- columns of coord.claimed_job.  Composite types rather than RETURNS TABLE:
-- a function with OUT columns builds its row type from pg_proc at every
-- executor start and call (about 20,000 instructions a call).
CREATE TYPE coord.claimed_after_complete AS (
    completed   boolean,
    id          bigint,
    queue       text,
    payload     jsonb,
    attempt     integer,
    token       bigint,
    lease_until timestamptz,
    key         text,
    group_key   text,
    host        text,
    run_at      timestamptz,
    trace       text
);
COMMENT ON TYPE coord.claimed_after_complete IS
  'A row of coord.complete_and_claim: completed (what coord.complete returned), then a claimed job as coord.claim returns it (NULL when none was claimed)';
CREATE TYPE coord.claimed_after_fail AS (
    state       text,
    id          bigint,
    queue       text,
    payload     jsonb,
    attempt     integer,
    token       bigint,
    lease_until timestamptz,
    key         text,
    group_key   text,
    host        text,
    run_at      timestamptz,
    trace       text
);
COMMENT ON TYPE coord.claimed_after_fail IS
  'A row of coord.fail_and_claim: state (what coord.fail returned), then a claimed job as coord.claim returns it (NULL when none was claimed)';

CREATE FUNCTION coord.complete_and_claim(id bigint, token bigint, result jsonb DEFAULT NULL,
                                         n integer DEFAULT 1, lease interval DEFAULT '5 minutes',
                                         session_bound boolean DEFAULT false, host text DEFAULT NULL,
                                         partition_group text DEFAULT NULL)
RETURNS SETOF coord.claimed_after_complete AS 'MODULE_PATHNAME', 'coord_complete_and_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;
COMMENT ON FUNCTION coord.complete_and_claim(bigint, bigint, jsonb, integer, interval, boolean, text, text) IS
  'Completes a claimed job as coord.complete does (completed: false, and no change, when the claim is no longer the caller''s) and claims up to n jobs of its queue as coord.claim does, in one statement; one row per job claimed, or one row with NULL job columns';

CREATE FUNCTION coord.fail_and_claim(id bigint, token bigint, error text DEFAULT NULL,
                                     retry_after interval DEFAULT NULL, pause_key boolean DEFAULT false,
                                     n integer DEFAULT 1, lease interval DEFAULT '5 minutes',
                                     session_bound boolean DEFAULT false, host text DEFAULT NULL,
                                     partition_group text DEFAULT NULL)
RETURNS SETOF coord.claimed_after_fail AS 'MODULE_PATHNAME', 'coord_fail_and_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;
COMMENT ON FUNCTION coord.fail_and_claim(bigint, bigint, text, interval, boolean, integer, interval, boolean, text, text) IS
  'Fails a claimed job as coord.fail does (state: scheduled, dead, or NULL when the claim is not the caller''s) and claims up to n jobs of its queue as coord.claim does, in one statement; one row per job claimed, or one row with NULL job columns';
REVOKE ALL ON FUNCTION coord.complete_and_claim(bigint, bigint, jsonb, integer, interval, boolean, text, text),
  coord.fail_and_claim(bigint, bigint, text, interval, boolean, integer, interval, boolean, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION coord.complete_and_claim(bigint, bigint, jsonb, integer, interval, boolean, text, text),
  coord.fail_and_claim(bigint, bigint, text, interval, boolean, integer, interval, boolean, text, text)
  TO coord_worker;

-- ---------- batch claims stay HOT (issue 28): as sql/parts/jobs.sql ----------
-- A claim of n jobs writes n new row versions in one transaction; at
-- fillfactor 70 half of a 100-job claim's went off their page (an insert
-- into every index each).  Pages written from now on keep room for a
-- claimed version of each of their rows.
ALTER TABLE coord.job SET (fillfactor = 45);
