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

-- ---------- metrics (issue 29): as sql/parts/metrics.sql and grants.sql ----------
-- Finished jobs per queue that the counters count but the history no longer
-- shows row by row: history rows finished before coord.metrics_state's
-- folded_to (coord.tick folds them in), history rows deleted before they
-- were folded (the trigger below: purges, coord.retry, a DELETE by hand),
-- and live jobs removed without a history row (a schedule's or an app's
-- unclaimed job, as cancelled).  The counters are this plus the history
-- rows finished since folded_to, plus (enqueued) the live and waiting jobs:
-- no job's enqueue, claim or finish writes anything for them.  Tables, so
-- WAL-logged: a promoted standby and a restarted server go on from them.
CREATE TABLE coord.queue_totals (
    queue     text PRIMARY KEY,
    done      bigint NOT NULL DEFAULT 0,
    dead      bigint NOT NULL DEFAULT 0,
    cancelled bigint NOT NULL DEFAULT 0
);
COMMENT ON TABLE coord.queue_totals IS
  'Per queue, finished jobs counted by coord.metrics that the history no longer lists after coord.metrics_state.folded_to (folded in by coord.tick, purged, retried, or removed unclaimed)';
REVOKE ALL ON coord.queue_totals FROM PUBLIC;

-- One row.  Lock order: the trigger takes it FOR SHARE, the tick's fold
-- FOR UPDATE SKIP LOCKED, then counts with a new snapshot: a history row is
-- counted by exactly one of them.
CREATE TABLE coord.metrics_state (
    one        boolean PRIMARY KEY DEFAULT true CHECK (one),
    folded_to  timestamptz NOT NULL DEFAULT '-infinity',
    counted_at timestamptz,
    large      boolean NOT NULL DEFAULT false
);
COMMENT ON TABLE coord.metrics_state IS
  'One row: history rows finished before folded_to are counted in coord.queue_totals; counted_at: when coord.tick last took coord.queue_counts; large: coord.metrics reads that snapshot instead of counting the live jobs';
REVOKE ALL ON coord.metrics_state FROM PUBLIC;
INSERT INTO coord.metrics_state DEFAULT VALUES;

-- The per-queue job counts as of counted_at, for large queues (counting a
-- million live jobs takes about a second; reading this, a millisecond).
CREATE TABLE coord.queue_counts (
    queue        text PRIMARY KEY,
    ready        bigint NOT NULL,
    scheduled    bigint NOT NULL,
    running      bigint NOT NULL,
    waiting      bigint NOT NULL,
    oldest_ready timestamptz,
    enqueued     bigint NOT NULL
);
COMMENT ON TABLE coord.queue_counts IS
  'Per queue, the live job counts and the enqueued counter as of coord.metrics_state.counted_at (taken by coord.tick while the live jobs are many)';
REVOKE ALL ON coord.queue_counts FROM PUBLIC;

CREATE FUNCTION coord.metrics_queues(OUT queue text, OUT ready bigint, OUT scheduled bigint,
    OUT running bigint, OUT waiting bigint, OUT dead bigint, OUT oldest_ready_age double precision,
    OUT enqueued bigint, OUT completed bigint, OUT failed bigint, OUT cancelled bigint)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'coord_metrics_queues'
LANGUAGE C VOLATILE PARALLEL RESTRICTED ROWS 100;
COMMENT ON FUNCTION coord.metrics_queues() IS
  'Per queue: jobs ready, scheduled, running, waiting and dead now, the oldest ready job''s age in seconds, and the counters of jobs enqueued, completed, failed (dead) and cancelled; for coord.metrics';

CREATE FUNCTION coord.metrics_purged()
RETURNS trigger AS 'MODULE_PATHNAME', 'coord_metrics_purged'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.metrics_purged() IS
  'Trigger of coord.job_history: adds the deleted rows not folded in yet to coord.queue_totals, so that no counter goes back';
CREATE TRIGGER metrics_purged
  AFTER DELETE ON coord.job_history REFERENCING OLD TABLE AS purged_rows
  FOR EACH STATEMENT EXECUTE FUNCTION coord.metrics_purged();
COMMENT ON TRIGGER metrics_purged ON coord.job_history IS
  'Keeps the counters of coord.metrics when history rows go (coord.purge_jobs, the tick''s purge, coord.retry, a DELETE by hand)';

CREATE VIEW coord.metrics AS
WITH q AS (SELECT * FROM coord.metrics_queues()),
lim AS (
  SELECT l.queue, NULL::text AS limit_key, l.concurrency, l.rate, l.per, l.burst,
         (SELECT pg_catalog.count(*) FROM coord.job_running AS r
            JOIN coord.job AS j ON j.id OPERATOR(pg_catalog.=) r.job_id AND j.token OPERATOR(pg_catalog.=) r.token
           WHERE r.queue OPERATOR(pg_catalog.=) l.queue AND NOT r.per_key
             AND (COALESCE(j.lease_until OPERATOR(pg_catalog.>) pg_catalog.now(), false) OR coord.job_claimed(j.id))) AS running,
         (SELECT coord.bucket_tokens(b.tokens, b.refilled_at, l.rate, l.per, COALESCE(l.burst, l.rate))
            FROM coord.job_bucket AS b
           WHERE b.queue OPERATOR(pg_catalog.=) l.queue AND b.limit_key OPERATOR(pg_catalog.=) '') AS tokens
    FROM coord.job_limit AS l WHERE NOT l.per_key),
pauses AS (
  SELECT p.queue, NULLIF(p.limit_key, '') AS limit_key
    FROM coord.job_pause AS p
   WHERE p.until IS NULL OR p.until OPERATOR(pg_catalog.>) pg_catalog.now()),
locks AS (SELECT s.granted, s.wait_start FROM coord.lock_status() AS s),
lead AS (
  SELECT e.election, e.term, (SELECT pg_catalog.count(*) FROM coord.leader(e.election)) AS leaders
    FROM coord.elections AS e),
m AS (
  SELECT 'coord_queue_ready' AS metric, pg_catalog.jsonb_build_object('queue', q.queue) AS labels,
         q.ready::float8 AS value, 'gauge' AS kind, 'Jobs ready to be claimed now' AS help FROM q
  UNION ALL SELECT 'coord_queue_scheduled', pg_catalog.jsonb_build_object('queue', q.queue), q.scheduled,
         'gauge', 'Jobs waiting for their run_at (retries in backoff included)' FROM q
  UNION ALL SELECT 'coord_queue_running', pg_catalog.jsonb_build_object('queue', q.queue), q.running,
         'gauge', 'Jobs claimed now (a live lease or a session-bound claim)' FROM q
  UNION ALL SELECT 'coord_queue_waiting', pg_catalog.jsonb_build_object('queue', q.queue), q.waiting,
         'gauge', 'Jobs waiting for their parents (enqueued with after)' FROM q
  UNION ALL SELECT 'coord_queue_dead', pg_catalog.jsonb_build_object('queue', q.queue), q.dead,
         'gauge', 'Dead jobs in the history (failed after their last attempt, not retried or purged yet)' FROM q
  UNION ALL SELECT 'coord_queue_oldest_ready_age_seconds', pg_catalog.jsonb_build_object('queue', q.queue),
         COALESCE(q.oldest_ready_age, 0), 'gauge', 'How long the oldest ready job has been due (0 when none is ready)' FROM q
  UNION ALL SELECT 'coord_jobs_enqueued_total', pg_catalog.jsonb_build_object('queue', q.queue), q.enqueued,
         'counter', 'Jobs enqueued (a retry of a dead job counts again)' FROM q
  UNION ALL SELECT 'coord_jobs_completed_total', pg_catalog.jsonb_build_object('queue', q.queue), q.completed,
         'counter', 'Jobs completed (done)' FROM q
  UNION ALL SELECT 'coord_jobs_failed_total', pg_catalog.jsonb_build_object('queue', q.queue), q.failed,
         'counter', 'Jobs that died (failed after their last attempt, lost their last lease, or expired)' FROM q
  UNION ALL SELECT 'coord_jobs_cancelled_total', pg_catalog.jsonb_build_object('queue', q.queue), q.cancelled,
         'counter', 'Jobs cancelled (or removed unclaimed with their schedule or app)' FROM q
  UNION ALL SELECT 'coord_queue_paused', pg_catalog.jsonb_build_object('queue', p.queue) OPERATOR(pg_catalog.||)
           CASE WHEN p.limit_key IS NULL THEN '{}'::jsonb ELSE pg_catalog.jsonb_build_object('limit_key', p.limit_key) END,
         1, 'gauge', 'A pause in force (of the whole queue, or of one limit_key)' FROM pauses AS p
  UNION ALL SELECT 'coord_limit_concurrency', pg_catalog.jsonb_build_object('queue', l.queue), l.concurrency,
         'gauge', 'The queue''s concurrency limit' FROM lim AS l WHERE l.concurrency IS NOT NULL
  UNION ALL SELECT 'coord_limit_running', pg_catalog.jsonb_build_object('queue', l.queue), l.running,
         'gauge', 'Running claims counted against the queue''s concurrency limit' FROM lim AS l WHERE l.concurrency IS NOT NULL
  UNION ALL SELECT 'coord_limit_tokens', pg_catalog.jsonb_build_object('queue', l.queue), COALESCE(l.tokens, COALESCE(l.burst, l.rate)),
         'gauge', 'Tokens in the queue''s rate-limit bucket now' FROM lim AS l WHERE l.rate IS NOT NULL
  UNION ALL SELECT 'coord_schedule_lag_seconds', pg_catalog.jsonb_build_object('schedule', s.name),
         CASE WHEN j.id IS NOT NULL AND j.run_at OPERATOR(pg_catalog.<=) pg_catalog.now()
                   AND NOT (COALESCE(j.lease_until OPERATOR(pg_catalog.>) pg_catalog.now(), false) OR coord.job_claimed(j.id))
              THEN pg_catalog.date_part('epoch', pg_catalog.now() OPERATOR(pg_catalog.-) j.run_at) ELSE 0 END,
         'gauge', 'How long the schedule''s due instance has waited for a worker (0 when none waits)'
    FROM coord.schedule_defs AS s
    LEFT JOIN coord.job AS j ON j.origin OPERATOR(pg_catalog.=) ('s:' OPERATOR(pg_catalog.||) s.name)
  UNION ALL SELECT 'coord_app_late_runs', pg_catalog.jsonb_build_object('app', d.name),
         (SELECT pg_catalog.count(*) FROM coord.app_alerts AS a
           WHERE a.app OPERATOR(pg_catalog.=) d.name AND a.kind OPERATOR(pg_catalog.=) 'deadline' AND a.cleared_at IS NULL),
         'gauge', 'Runs of the app past their deadline and not finished (open deadline alerts)' FROM coord.app_defs AS d
  UNION ALL SELECT 'coord_alerts_open', pg_catalog.jsonb_build_object('app', a.app, 'kind', a.kind), pg_catalog.count(*),
         'gauge', 'Open alerts of app runs, by kind (deadline, dead, timeout)'
    FROM coord.app_alerts AS a WHERE a.cleared_at IS NULL GROUP BY a.app, a.kind
  UNION ALL SELECT 'coord_lock_holders', '{}'::jsonb, (SELECT pg_catalog.count(*) FROM locks AS k WHERE k.granted),
         'gauge', 'pg_coord locks held now (a shared lock counts once per holder)'
  UNION ALL SELECT 'coord_lock_waiters', '{}'::jsonb, (SELECT pg_catalog.count(*) FROM locks AS k WHERE NOT k.granted),
         'gauge', 'Sessions waiting for a pg_coord lock now'
  UNION ALL SELECT 'coord_lock_longest_wait_seconds', '{}'::jsonb,
         COALESCE((SELECT pg_catalog.date_part('epoch', pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) pg_catalog.min(k.wait_start))
                     FROM locks AS k WHERE NOT k.granted), 0),
         'gauge', 'How long the longest waiter for a pg_coord lock has waited (0 when none waits)'
  UNION ALL SELECT 'coord_election_term', pg_catalog.jsonb_build_object('election', e.election), e.term,
         'gauge', 'The election''s newest term' FROM lead AS e
  UNION ALL SELECT 'coord_election_leader', pg_catalog.jsonb_build_object('election', e.election), e.leaders,
         'gauge', 'Whether the election has a live leader (1) or not (0)' FROM lead AS e
  UNION ALL SELECT 'coord_group_segments', pg_catalog.jsonb_build_object('partition_group', g.partition_group), g.segments,
         'gauge', 'Segments of the partition group' FROM coord.partition_groups AS g
  UNION ALL SELECT 'coord_group_members', pg_catalog.jsonb_build_object('partition_group', g.partition_group),
         (SELECT pg_catalog.count(*) FROM coord.members AS b
           WHERE b.partition_group OPERATOR(pg_catalog.=) g.partition_group AND b.alive),
         'gauge', 'Live members of the partition group' FROM coord.partition_groups AS g
  UNION ALL SELECT 'coord_group_member_owned', pg_catalog.jsonb_build_object('partition_group', b.partition_group, 'member', b.member),
         b.owned, 'gauge', 'Segments the member owns' FROM coord.members AS b WHERE b.alive
  UNION ALL SELECT 'coord_group_member_share', pg_catalog.jsonb_build_object('partition_group', b.partition_group, 'member', b.member),
         b.owned_share, 'gauge', 'The member''s owned share of the segments (0 to 1)' FROM coord.members AS b WHERE b.alive
  UNION ALL SELECT 'coord_group_member_target_share', pg_catalog.jsonb_build_object('partition_group', b.partition_group, 'member', b.member),
         b.target_share, 'gauge', 'The member''s share by weight (its weight over the live members'' weight)' FROM coord.members AS b WHERE b.alive
  UNION ALL SELECT 'coord_tick_age_seconds', '{}'::jsonb,
         COALESCE(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) t.ticked_at), -1),
         'gauge', 'Seconds since coord.tick last ran (-1: never)' FROM coord.tick_state AS t
  UNION ALL SELECT 'coord_metrics_counts_age_seconds', '{}'::jsonb,
         CASE WHEN s.large THEN pg_catalog.date_part('epoch', pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) s.counted_at) ELSE 0 END,
         'gauge', 'Age of the per-queue job counts (0: counted now; with many live jobs, taken by coord.tick)'
    FROM coord.metrics_state AS s)
SELECT m.metric, m.labels, m.value::double precision AS value, m.kind, m.help
  FROM m ORDER BY m.metric, m.labels;
COMMENT ON VIEW coord.metrics IS
  'One row per metric series (metric, labels, value, kind gauge or counter, help): per queue depth, age and counters, limits, pauses, schedules'' lag, apps'' late runs and alerts, locks, elections, partition groups, the tick; docs/operations/metrics.md';
REVOKE ALL ON FUNCTION coord.metrics_queues(), coord.metrics_purged() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION coord.metrics_queues() TO coord_monitor;
GRANT SELECT ON coord.metrics TO coord_admin, coord_monitor;
-- coord.metrics calls coord.leader, so a fresh install's view loop grants it
-- to coord_monitor before the election grants name coord_worker: the same
-- privileges, granted again in that order, so the two catalogs match.
REVOKE EXECUTE ON FUNCTION coord.leader(text) FROM coord_worker, coord_monitor;
GRANT EXECUTE ON FUNCTION coord.leader(text) TO coord_monitor;
GRANT EXECUTE ON FUNCTION coord.leader(text) TO coord_worker;

-- coord.job_parents (issue 29: coordctl job and the dashboard show a job's parents)
CREATE VIEW coord.job_parents AS
  SELECT d.child AS job, d.parent, d.ended FROM coord.job_dep AS d;
COMMENT ON VIEW coord.job_parents IS
  'The parents of each job not finished yet (its after): job, parent, and whether that parent has ended';
GRANT SELECT ON coord.job_parents TO coord_admin;
GRANT SELECT ON coord.job_parents TO coord_monitor;
