
-------------------------------------------------------------------------------
-- Jobs: the queue (src/jobs/jobs.c)
-------------------------------------------------------------------------------

CREATE SEQUENCE coord.job_id_seq AS bigint;
COMMENT ON SEQUENCE coord.job_id_seq IS 'Job ids';
REVOKE ALL ON coord.job_id_seq FROM PUBLIC;
CREATE SEQUENCE coord.job_token_seq AS bigint;
COMMENT ON SEQUENCE coord.job_token_seq IS 'Claim tokens: every claim of every job takes a new one';
REVOKE ALL ON coord.job_token_seq FROM PUBLIC;

CREATE FUNCTION coord.job_part(key text, id bigint)
RETURNS integer AS 'MODULE_PATHNAME', 'coord_job_part'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION coord.job_part(text, bigint) IS
  'Hash-space position (0 .. 2^31-1) of a job: of its key, or of its id when it has none';

-- Live work only: scheduled, ready and running jobs.  The state is derived:
-- a lease claim sets lease_until (claimable again once it has passed); a
-- session-bound claim holds an advisory lock on the id (namespace 17204), so
-- a dead worker's job is claimable again at once.
CREATE TABLE coord.job (
    id           bigint PRIMARY KEY DEFAULT pg_catalog.nextval('coord.job_id_seq'::pg_catalog.regclass),
    queue        text NOT NULL,
    payload      jsonb NOT NULL,
    run_at       timestamptz NOT NULL,
    priority     integer NOT NULL,
    key          text,
    group_key    text,
    host         text,
    attempt      integer NOT NULL DEFAULT 0,
    max_attempts integer NOT NULL,
    token        bigint NOT NULL DEFAULT 0,
    lease        interval,
    lease_until  timestamptz,
    enqueued_at  timestamptz NOT NULL DEFAULT pg_catalog.now(),
    claimed_at   timestamptz,
    last_error   text,
    request_key  text,
    origin       text,
    claimed_by   oid,
    limit_key    text,
    snoozes      integer NOT NULL DEFAULT 0,
    max_snoozes  integer NOT NULL DEFAULT 100,
    expires_at   timestamptz,
    batch        bigint,
    deps         smallint NOT NULL DEFAULT 0,
    enqueued_by  oid,
    progress     jsonb,
    trace        text
) WITH (fillfactor = 45);
COMMENT ON TABLE coord.job IS
  'Live jobs (scheduled, ready, running); finished ones move to coord.job_history';
COMMENT ON COLUMN coord.job.claimed_by IS
  'The role that made the last claim: only it (or coord_admin) may complete, fail or heartbeat a lease claim';
COMMENT ON COLUMN coord.job.batch IS 'The batch the job was enqueued into (coord.enqueue''s batch), or NULL';
COMMENT ON COLUMN coord.job.deps IS
  'Workflows: 1 when jobs wait on this one, 2 when it was enqueued with after (its finish then goes to src/workflows/)';
COMMENT ON COLUMN coord.job.enqueued_by IS
  'The role that enqueued the job (current_user of coord.enqueue; NULL for jobs of schedules and apps): it may cancel and await the job and read it in coord.my_jobs';
COMMENT ON COLUMN coord.job.progress IS 'The last progress the job''s holder reported (coord.progress)';
COMMENT ON COLUMN coord.job.trace IS
  'The W3C traceparent the job was enqueued with (coord.enqueue''s trace), returned by its claims; or NULL';
REVOKE ALL ON coord.job FROM PUBLIC;
-- A claim changes only unindexed columns (attempt, token, lease,
-- lease_until, claimed_at, claimed_by, last_error), so it is a HOT update:
-- no index grows when work is claimed.  That needs room on the row's page
-- for its new version: a claim of n jobs writes n new versions in one
-- transaction, so none of the old ones can be pruned before it commits, and
-- a page must have room for a claimed version of each of its rows
-- (fillfactor 45: at 70, a claim of 100 jobs updated half of them off their
-- page, inserting into every index; 0.4.0).  Claims update rows, and completions insert history
-- rows, through the table access method: triggers, CHECK constraints,
-- defaults and generated columns added to these two tables would not apply.  The claim
-- index leads with a hash of the queue rather than its name: every key is
-- then of fixed width, and a btree scan, which tests each entry of a leaf
-- page against its keys, reads them at cached offsets (a claim spent a
-- tenth of its CPU finding the columns after a text one).  Claims test the
-- queue name itself on the row.
CREATE INDEX job_ready ON coord.job (pg_catalog.hashtextextended(queue, 0), priority DESC, run_at, id);
COMMENT ON INDEX coord.job_ready IS 'The claim order within a queue: highest priority, then oldest run_at';
-- Jobs with an origin (schedule instances, app runs) dedupe by origin, not
-- by key: a caller's job with an app run's key neither blocks that run nor
-- is taken for it.
CREATE UNIQUE INDEX job_key ON coord.job (queue, key) WHERE key IS NOT NULL AND origin IS NULL;
COMMENT ON INDEX coord.job_key IS
  'At most one live job per (queue, key) among jobs without an origin: enqueue dedupe';
CREATE INDEX job_group ON coord.job (queue, group_key, id) WHERE group_key IS NOT NULL;
COMMENT ON INDEX coord.job_group IS 'One job of a group at a time, in enqueue order';
CREATE UNIQUE INDEX job_origin ON coord.job (origin) WHERE origin IS NOT NULL;
COMMENT ON INDEX coord.job_origin IS
  'At most one live job per origin: the instance of a schedule (s:<name>), the run of an app for a period (a:<app>:<period>)';

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

CREATE TABLE coord.job_history (
    id           bigint PRIMARY KEY,
    queue        text NOT NULL,
    state        text NOT NULL,
    payload      jsonb NOT NULL,
    run_at       timestamptz NOT NULL,
    priority     integer NOT NULL,
    key          text,
    group_key    text,
    host         text,
    attempt      integer NOT NULL,
    max_attempts integer NOT NULL,
    token        bigint NOT NULL,
    enqueued_at  timestamptz NOT NULL,
    claimed_at   timestamptz,
    finished_at  timestamptz NOT NULL,
    last_error   text,
    result       jsonb,
    request_key  text,
    origin       text,
    limit_key    text,
    snoozes      integer NOT NULL DEFAULT 0,
    max_snoozes  integer NOT NULL DEFAULT 100,
    expires_at   timestamptz,
    batch        bigint,
    enqueued_by  oid,
    progress     jsonb,
    trace        text
);
COMMENT ON TABLE coord.job_history IS
  'Finished jobs (done, dead, cancelled), kept for coord.job_history_retention';
-- No CHECK on state: only pg_coord's functions write it, and PostgreSQL
-- parses a CHECK expression anew in every statement that inserts (a
-- twentieth of a completion's CPU).
COMMENT ON COLUMN coord.job_history.state IS 'done, dead or cancelled';
COMMENT ON COLUMN coord.job_history.batch IS 'The batch the job was enqueued into, or NULL';
COMMENT ON COLUMN coord.job_history.enqueued_by IS 'The role that enqueued the job (NULL for jobs of schedules and apps)';
COMMENT ON COLUMN coord.job_history.progress IS 'The last progress the job''s holder reported (coord.progress)';
COMMENT ON COLUMN coord.job_history.trace IS 'The W3C traceparent the job was enqueued with, or NULL';
REVOKE ALL ON coord.job_history FROM PUBLIC;
-- Every completion inserts here: one btree (the key) and a BRIN on the
-- finish time (rows arrive in finish order) keep that cheap; dead and
-- cancelled jobs, which are few, get an index of their own.
CREATE INDEX job_history_finished ON coord.job_history USING brin (finished_at);
COMMENT ON INDEX coord.job_history_finished IS 'Retention and recent-history queries';
CREATE INDEX job_history_failed ON coord.job_history (queue, finished_at)
  WHERE state OPERATOR(pg_catalog.<>) 'done';
COMMENT ON INDEX coord.job_history_failed IS 'Dead and cancelled jobs per queue';

CREATE TYPE coord.claimed_job AS (
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
COMMENT ON TYPE coord.claimed_job IS 'A claimed job, as coord.claim returns it (trace: the W3C traceparent it was enqueued with, or NULL)';

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

CREATE FUNCTION coord.claim(queue text, n integer DEFAULT 1, lease interval DEFAULT '5 minutes',
                            host text DEFAULT NULL, session_bound boolean DEFAULT false,
                            "partition" integer DEFAULT NULL, partitions integer DEFAULT NULL,
                            partition_group text DEFAULT NULL)
RETURNS SETOF coord.claimed_job AS 'MODULE_PATHNAME', 'coord_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 10;
COMMENT ON FUNCTION coord.claim(text, integer, interval, text, boolean, integer, integer, text) IS
  'Claims up to n due jobs, highest priority first, then oldest run_at; never one another claimer holds';

-- Internal: the claim statement calls it for each row it has locked.  Not
-- granted to anyone: coord.claim runs its statement as the extension owner.
CREATE FUNCTION coord.claim_take(id bigint, spent boolean, priority integer, run_at timestamptz)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_claim_take'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.claim_take(bigint, boolean, integer, timestamptz) IS
  'Internal to coord.claim: takes the claim lock of a job its statement has locked; errors when called otherwise';

-- Internal: the claim statement's test, below its row locks, of whether it
-- may lock a row (no session holds the job's claim lock; for a job of a
-- group, no earlier job of it waits and none of it runs): a claim never
-- row-locks a job it then skips.  Not granted to anyone.
CREATE FUNCTION coord.claim_free(id bigint, queue text, group_key text, row_xmax xid, limit_key text)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_claim_free'
LANGUAGE C VOLATILE PARALLEL UNSAFE COST 10;
COMMENT ON FUNCTION coord.claim_free(bigint, text, text, xid, text) IS
  'Internal to coord.claim: whether no session holds the job''s claim lock and its group lets it run; errors when called otherwise';

CREATE FUNCTION coord.complete(id bigint, token bigint, result jsonb DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_complete'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.complete(bigint, bigint, jsonb) IS
  'Marks a claimed job done; false, and no change, when the claim is no longer the caller''s';

-- Not an overload of coord.complete: drivers that send untyped parameters
-- (node-postgres) would find coord.complete($1, $2) ambiguous.
CREATE FUNCTION coord.complete_many(ids bigint[], tokens bigint[])
RETURNS integer AS 'MODULE_PATHNAME', 'coord_complete_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.complete_many(bigint[], bigint[]) IS
  'Marks claimed jobs done (ids[i] with tokens[i]); returns how many were still the caller''s';

CREATE FUNCTION coord.fail(id bigint, token bigint, error text DEFAULT NULL, retry_after interval DEFAULT NULL,
                           pause_key boolean DEFAULT false)
RETURNS text AS 'MODULE_PATHNAME', 'coord_fail'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.fail(bigint, bigint, text, interval, boolean) IS
  'Fails a claimed job: scheduled again with backoff, or dead after max_attempts; retry_after sets the delay, uses up no attempt but counts a snooze (dead after max_snoozes or past expires_at); pause_key pauses the job''s limit_key for retry_after. NULL when the claim is not the caller''s';

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

CREATE FUNCTION coord.heartbeat(id bigint, token bigint, lease interval DEFAULT NULL)
RETURNS timestamptz AS 'MODULE_PATHNAME', 'coord_heartbeat'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.heartbeat(bigint, bigint, interval) IS
  'Extends a lease; returns the new lease end (9999-01-01 00:00:00+00 for a session-bound claim), NULL if the claim is not the caller''s';

CREATE FUNCTION coord.cancel(id bigint)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_cancel'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.cancel(bigint) IS
  'Cancels a job that has not finished (coord_admin, or the role that enqueued it); its holder can no longer complete it and is sent NOTIFY cancel on "coord:job:<id>"';

CREATE FUNCTION coord.progress(id bigint, token bigint, progress jsonb)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_progress'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.progress(bigint, bigint, jsonb) IS
  'The holder of a claim reports progress (coord.jobs.progress, NOTIFY on "coord:job:<id>" at commit); false, and no change, when the claim is no longer the caller''s';

CREATE FUNCTION coord.await(id bigint, timeout interval DEFAULT NULL,
                            OUT state text, OUT result jsonb, OUT error text)
RETURNS record AS 'MODULE_PATHNAME', 'coord_await'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.await(bigint, interval) IS
  'Waits until the job has finished (done, dead or cancelled) and returns how; state NULL at the timeout. For the role that enqueued it, coord_monitor and coord_admin';

CREATE FUNCTION coord.retry(id bigint)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_retry'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.retry(bigint) IS 'Puts a dead job back to ready, with its attempts reset';

CREATE FUNCTION coord.job_state(id bigint)
RETURNS text AS 'MODULE_PATHNAME', 'coord_job_state'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION coord.job_state(bigint) IS
  'waiting, scheduled, ready, running, done, dead, cancelled, or NULL once purged';

-- For a worker whose complete or fail has an unknown outcome (the answer
-- lost with the connection, or a synchronous standby's wait cancelled):
-- which one committed, exactly.
CREATE FUNCTION coord.claim_state(id bigint, token bigint)
RETURNS text AS 'MODULE_PATHNAME', 'coord_claim_state'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION coord.claim_state(bigint, bigint) IS
  'What became of a claim (its token): claimed, released (a session-bound claim whose session ended unreported), scheduled (failed back), done, dead or cancelled; NULL once claimed again, purged, or when the live claim is another role''s';

CREATE FUNCTION coord.job_claimed(id bigint)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_job_claimed'
LANGUAGE C VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION coord.job_claimed(bigint) IS
  'Whether a session holds the job''s claim lock (session-bound claims)';

CREATE FUNCTION coord.purge_jobs(older_than interval DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_purge_jobs'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.purge_jobs(interval) IS
  'Deletes finished jobs older than older_than (default: the coord.job_history_retention setting)';

CREATE FUNCTION coord.mark_queued(key text, queue text, payload jsonb DEFAULT '{}',
                                  run_at timestamptz DEFAULT NULL, priority integer DEFAULT 0,
                                  host text DEFAULT NULL, max_attempts integer DEFAULT 25)
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_mark_queued_job'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.mark_queued(text, text, jsonb, timestamptz, integer, text, integer) IS
  'mark_queued(key), and enqueues a job linked to the key in the same transaction: completing it marks the key done, its death removes the key';
