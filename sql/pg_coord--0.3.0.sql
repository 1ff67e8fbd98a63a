/* pg_coord install script: built by the Makefile from sql/parts/head.sql and one
 * fragment per concern.  Plain CREATE throughout, everything
 * schema-qualified, built-ins from pg_catalog. */

\echo Use "CREATE EXTENSION pg_coord" to load this file. \quit

-- Fails if a schema coord already exists, so nobody else's objects are adopted.
CREATE SCHEMA coord;
COMMENT ON SCHEMA coord IS 'pg_coord: locks, requests, jobs, schedules and apps for worker fleets';
REVOKE ALL ON SCHEMA coord FROM PUBLIC;
GRANT USAGE ON SCHEMA coord TO PUBLIC;

-------------------------------------------------------------------------------
-- Locks (src/locks.c)
-------------------------------------------------------------------------------

-- The name registry: which path each lock key stands for.
CREATE TABLE coord.lock_names (
    key           bigint PRIMARY KEY,
    path          text NOT NULL,
    registered_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE coord.lock_names IS
  'Registry of lock paths by 64-bit name key, written at first use; refuses two paths with one key';
REVOKE ALL ON coord.lock_names FROM PUBLIC;

-- Fencing tokens: the newest token issued per path.
CREATE SEQUENCE coord.fence_seq AS bigint;
COMMENT ON SEQUENCE coord.fence_seq IS 'Source of fencing tokens for every path';
REVOKE ALL ON coord.fence_seq FROM PUBLIC;

CREATE TABLE coord.fences (
    path      text PRIMARY KEY,
    token     bigint NOT NULL,
    fenced_at timestamptz NOT NULL
);
COMMENT ON TABLE coord.fences IS 'Newest fencing token issued for each lock path';
REVOKE ALL ON coord.fences FROM PUBLIC;

CREATE FUNCTION coord.lock(path text, timeout interval DEFAULT NULL, shared boolean DEFAULT false)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_lock'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.lock(text, interval, boolean) IS
  'Session lock on a path, waiting up to timeout (NULL: no limit); false on timeout. Reentrant';

CREATE FUNCTION coord.try_lock(path text, shared boolean DEFAULT false)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_try_lock'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.try_lock(text, boolean) IS 'Session lock on a path if free now; never waits';

CREATE FUNCTION coord.unlock(path text, shared boolean DEFAULT false)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_unlock'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.unlock(text, boolean) IS
  'Releases one hold of a session lock; false with a WARNING if not held';

CREATE FUNCTION coord.unlock_all()
RETURNS integer AS 'MODULE_PATHNAME', 'coord_unlock_all'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.unlock_all() IS
  'Releases every session lock this session took through pg_coord; returns how many holds';

CREATE FUNCTION coord.xact_lock(path text, timeout interval DEFAULT NULL, shared boolean DEFAULT false)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_xact_lock'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.xact_lock(text, interval, boolean) IS
  'Transaction lock on a path, released at commit or rollback; false on timeout';

CREATE FUNCTION coord.try_xact_lock(path text, shared boolean DEFAULT false)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_try_xact_lock'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.try_xact_lock(text, boolean) IS 'Transaction lock on a path if free now';

CREATE FUNCTION coord.lock_first(paths text[], shared boolean DEFAULT false)
RETURNS text AS 'MODULE_PATHNAME', 'coord_lock_first'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.lock_first(text[], boolean) IS
  'Session lock on the first path, in array order, that is free without waiting; NULL if none';

CREATE FUNCTION coord.lock_all(paths text[], timeout interval DEFAULT NULL, shared boolean DEFAULT false)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_lock_all'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.lock_all(text[], interval, boolean) IS
  'Session locks on every path or on none (false) within timeout, taken in one canonical order; each distinct path needs one coord.unlock';

CREATE FUNCTION coord.fence(path text)
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_fence'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.fence(text) IS
  'Fencing token for a path the caller holds exclusively: larger than every token issued before, durable at commit';

CREATE FUNCTION coord.fence_ok(path text, token bigint)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_fence_ok'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.fence_ok(text, bigint) IS
  'True iff token is the newest token issued for path; then locks the path''s fence until the transaction ends, so a newer token waits for the guarded write';

CREATE FUNCTION coord.path_key(path text)
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_path_key'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION coord.path_key(text) IS
  'The 64-bit name key of a lock path (pg_locks classid/objid, with objsubid 17201)';

CREATE FUNCTION coord.lock_status(
    OUT key bigint, OUT mode text, OUT granted boolean, OUT pid integer,
    OUT application_name text, OUT client_addr inet, OUT backend_start timestamptz,
    OUT wait_start timestamptz)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'coord_lock_status'
LANGUAGE C VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION coord.lock_status() IS
  'pg_coord locks held and awaited in this database, by name key, with holder details';

CREATE VIEW coord.locks AS
SELECT COALESCE(n.path, '#' OPERATOR(pg_catalog.||) s.key::text) AS path,
       s.mode, s.granted, s.pid, s.application_name, s.client_addr,
       s.backend_start, s.wait_start, s.key
  FROM coord.lock_status() AS s
  LEFT JOIN coord.lock_names AS n ON n.key OPERATOR(pg_catalog.=) s.key;
COMMENT ON VIEW coord.locks IS
  'pg_coord locks by path: mode, granted or waiting, and the holder''s pid, application, address and start';

-- Forgets registered names no session holds or awaits now.
CREATE FUNCTION coord.purge_lock_names()
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_purge_lock_names'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.purge_lock_names() IS
  'Deletes registry rows of paths no session holds or awaits now; returns how many';

-------------------------------------------------------------------------------
-- Requests: the duplicate-work coordinator (src/requests.c)
-------------------------------------------------------------------------------

CREATE TABLE coord.request_keys (
    key          text PRIMARY KEY,
    state        text NOT NULL
                 CHECK (state OPERATOR(pg_catalog.=) ANY (ARRAY['requested', 'queued', 'done'])),
    owner_pid    integer,
    owner_start  timestamptz,
    requested_at timestamptz,
    queued_at    timestamptz,
    done_at      timestamptz
) WITH (fillfactor = 80);
COMMENT ON TABLE coord.request_keys IS
  'State of each request key; the owner of a requested key also holds its advisory lock (namespace 17203)';
REVOKE ALL ON coord.request_keys FROM PUBLIC;
CREATE INDEX request_keys_done_at ON coord.request_keys (done_at)
  WHERE state OPERATOR(pg_catalog.=) 'done';
COMMENT ON INDEX coord.request_keys_done_at IS 'Finds done keys for coord.purge_requests';

CREATE FUNCTION coord.request(key text, wait boolean DEFAULT true,
                              stale_after interval DEFAULT NULL, timeout interval DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_request'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.request(text, boolean, interval, interval) IS
  'True when the caller now owns the work for key; false when it is queued or done, or held by another session (without wait, or past timeout)';

CREATE FUNCTION coord.mark_queued(key text)
RETURNS void AS 'MODULE_PATHNAME', 'coord_mark_queued'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.mark_queued(text) IS
  'requested by this session -> queued; waiters answer false after commit. Any other state: ERROR 55000';

CREATE FUNCTION coord.mark_done(key text)
RETURNS void AS 'MODULE_PATHNAME', 'coord_mark_done'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.mark_done(text) IS
  'Sets the key done whatever its state; an owner''s waiters answer false after commit';

CREATE FUNCTION coord.release(key text)
RETURNS void AS 'MODULE_PATHNAME', 'coord_release'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.release(text) IS
  'Gives up this session''s request; after commit the first waiter gets true';

CREATE FUNCTION coord.request_state(key text)
RETURNS text AS 'MODULE_PATHNAME', 'coord_request_state'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION coord.request_state(text) IS 'requested, queued, done, or NULL';

CREATE FUNCTION coord.purge_requests(older_than interval)
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_purge_requests'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.purge_requests(interval) IS
  'Deletes done keys older than older_than; returns how many';

CREATE FUNCTION coord.key_hash(key text)
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_key_hash'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION coord.key_hash(text) IS
  'The 64-bit name key of a request key (pg_locks classid/objid, with objsubid 17203)';

CREATE FUNCTION coord.backend_alive(pid integer, started timestamptz)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_backend_alive'
LANGUAGE C VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION coord.backend_alive(integer, timestamptz) IS
  'Whether the backend with this pid and start time is still running (pid reuse cannot fool it)';

CREATE FUNCTION coord.request_lock_status(
    OUT key bigint, OUT mode text, OUT granted boolean, OUT pid integer,
    OUT application_name text, OUT client_addr inet, OUT backend_start timestamptz,
    OUT wait_start timestamptz)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'coord_request_lock_status'
LANGUAGE C VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION coord.request_lock_status() IS
  'Owners and waiters of request keys in this database, by name key';

CREATE VIEW coord.requests AS
SELECT r.key, r.state, r.owner_pid,
       CASE WHEN r.state OPERATOR(pg_catalog.=) 'requested'
            THEN coord.backend_alive(r.owner_pid, r.owner_start) END AS owner_alive,
       COALESCE(w.waiters, 0) AS waiters,
       r.requested_at, r.queued_at, r.done_at
  FROM coord.request_keys AS r
  LEFT JOIN (SELECT s.key, pg_catalog.count(*) AS waiters
               FROM coord.request_lock_status() AS s
              WHERE NOT s.granted
              GROUP BY s.key) AS w
    ON w.key OPERATOR(pg_catalog.=) coord.key_hash(r.key);
COMMENT ON VIEW coord.requests IS
  'Request keys: state, the session that requested it last, whether that owner is alive (requested keys only), how many wait, and when it was requested, queued, done';

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
    expires_at   timestamptz
) WITH (fillfactor = 70);
COMMENT ON TABLE coord.job IS
  'Live jobs (scheduled, ready, running); finished ones move to coord.job_history';
COMMENT ON COLUMN coord.job.claimed_by IS
  'The role that made the last claim: only it (or coord_admin) may complete, fail or heartbeat a lease claim';
REVOKE ALL ON coord.job FROM PUBLIC;
-- A claim changes only unindexed columns (attempt, token, lease,
-- lease_until, claimed_at, claimed_by, last_error), so it is a HOT update:
-- no index grows when work is claimed.  Claims update rows, and completions insert history
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
    expires_at   timestamptz
);
COMMENT ON TABLE coord.job_history IS
  'Finished jobs (done, dead, cancelled), kept for coord.job_history_retention';
-- No CHECK on state: only pg_coord's functions write it, and PostgreSQL
-- parses a CHECK expression anew in every statement that inserts (a
-- twentieth of a completion's CPU).
COMMENT ON COLUMN coord.job_history.state IS 'done, dead or cancelled';
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
    run_at      timestamptz
);
COMMENT ON TYPE coord.claimed_job IS 'A claimed job, as coord.claim returns it';

CREATE FUNCTION coord.enqueue(queue text, payload jsonb DEFAULT '{}', run_at timestamptz DEFAULT NULL,
                              priority integer DEFAULT 0, key text DEFAULT NULL, host text DEFAULT NULL,
                              max_attempts integer DEFAULT 25, group_key text DEFAULT NULL,
                              limit_key text DEFAULT NULL, max_snoozes integer DEFAULT 100,
                              expires_at timestamptz DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_enqueue'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.enqueue(text, jsonb, timestamptz, integer, text, text, integer, text, text, integer, timestamptz) IS
  'Adds a job and returns its id; with key, returns the id of the live job with that key instead of adding one';

CREATE FUNCTION coord.enqueue_many(queue text, payloads jsonb[], run_at timestamptz DEFAULT NULL,
                                   priority integer DEFAULT 0, host text DEFAULT NULL,
                                   max_attempts integer DEFAULT 25, limit_key text DEFAULT NULL,
                                   max_snoozes integer DEFAULT 100, expires_at timestamptz DEFAULT NULL)
RETURNS SETOF bigint AS 'MODULE_PATHNAME', 'coord_enqueue_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
COMMENT ON FUNCTION coord.enqueue_many(text, jsonb[], timestamptz, integer, text, integer, text, integer, timestamptz) IS
  'Adds one job per payload; returns their ids in array order';

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

CREATE FUNCTION coord.heartbeat(id bigint, token bigint, lease interval DEFAULT NULL)
RETURNS timestamptz AS 'MODULE_PATHNAME', 'coord_heartbeat'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.heartbeat(bigint, bigint, interval) IS
  'Extends a lease; returns the new lease end (9999-01-01 00:00:00+00 for a session-bound claim), NULL if the claim is not the caller''s';

CREATE FUNCTION coord.cancel(id bigint)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_cancel'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.cancel(bigint) IS 'Cancels a job that has not finished; its claimer can no longer complete it';

CREATE FUNCTION coord.retry(id bigint)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_retry'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.retry(bigint) IS 'Puts a dead job back to ready, with its attempts reset';

CREATE FUNCTION coord.job_state(id bigint)
RETURNS text AS 'MODULE_PATHNAME', 'coord_job_state'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION coord.job_state(bigint) IS
  'scheduled, ready, running, done, dead, cancelled, or NULL once purged';

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

-------------------------------------------------------------------------------
-- Flow control (src/jobs/jobs_limits.c): concurrency and rate limits per queue
-- and per limit_key, pauses, and the running claims the limits count.
-------------------------------------------------------------------------------

-- One row per (queue, per_key): per_key false is the limit of the whole
-- queue, true the limit of each limit_key of the queue.  Changing a row
-- (coord.set_limit, coord.drop_limit) invalidates this table's relcache
-- entry, which is what makes every backend read the limits again: claims
-- keep them cached (and the fact that a queue has none).
CREATE TABLE coord.job_limit (
    queue       text NOT NULL,
    per_key     boolean NOT NULL,
    concurrency integer CHECK (concurrency > 0),
    rate        integer CHECK (rate > 0),
    per         interval NOT NULL DEFAULT '1 second',
    burst       integer CHECK (burst > 0),
    PRIMARY KEY (queue, per_key)
);
COMMENT ON TABLE coord.job_limit IS
  'Flow-control limits: of a whole queue (per_key false) or of each limit_key of it; concurrency, and a token bucket of rate claims per per with burst';
REVOKE ALL ON coord.job_limit FROM PUBLIC;

-- Pauses: limit_key '' is the whole queue (a limit_key has 1 to 1024
-- bytes); until NULL is until coord.resume.  Rows whose until has passed
-- mean nothing and are deleted by the next pause or resume of the queue,
-- or by coord.tick coord.retention later.
CREATE TABLE coord.job_pause (
    queue     text NOT NULL,
    limit_key text NOT NULL,
    until     timestamptz,
    PRIMARY KEY (queue, limit_key)
);
COMMENT ON TABLE coord.job_pause IS
  'Paused queues (limit_key '''') and keys: claims skip them until until (NULL: until coord.resume)';
REVOKE ALL ON coord.job_pause FROM PUBLIC;

-- Token buckets: written only by a claim that holds the transaction lock
-- of the (queue, key) (namespace 17220), so never contended on a row lock.
-- Logged, not unlogged: coord.limits and coord.queue_stats read it, and an
-- unlogged table cannot be read on a standby.
CREATE TABLE coord.job_bucket (
    queue       text NOT NULL,
    limit_key   text NOT NULL,
    tokens      float8 NOT NULL,
    refilled_at timestamptz NOT NULL,
    PRIMARY KEY (queue, limit_key)
);
COMMENT ON TABLE coord.job_bucket IS
  'Token buckets of rate limits (limit_key '''' for the whole queue): tokens as of refilled_at, refilled lazily on the server''s clock';
REVOKE ALL ON coord.job_bucket FROM PUBLIC;

-- Slots of concurrency limits: a row per (queue, scope, slot) naming the
-- job (and claim token) that took the slot last; per_key false is the whole
-- queue's limit (limit_key ''), true a limit_key's.  A slot is taken while
-- its claim is live (the job is in coord.job with that token, and its lease
-- has not passed or a session holds its claim lock), so a dead worker's slot
-- frees by itself and finishing a job writes nothing here; a claim takes a
-- free slot by overwriting its row.  At most `concurrency` rows per scope
-- (more only for claims running when the limit was set or lowered).
CREATE TABLE coord.job_running (
    queue     text NOT NULL,
    per_key   boolean NOT NULL,
    limit_key text NOT NULL,
    slot      integer NOT NULL,
    job_id    bigint NOT NULL,
    token     bigint NOT NULL,
    PRIMARY KEY (queue, per_key, limit_key, slot)
) WITH (fillfactor = 50);
COMMENT ON TABLE coord.job_running IS
  'Slots of concurrency limits: the job and claim token that took each last; a slot is taken only while that claim is live';
REVOKE ALL ON coord.job_running FROM PUBLIC;
CREATE INDEX job_limit_key ON coord.job (queue, limit_key) WHERE limit_key IS NOT NULL;
COMMENT ON INDEX coord.job_limit_key IS 'Jobs per limit_key: coord.next_due and coord.limits';
CREATE INDEX job_expires ON coord.job (expires_at) WHERE expires_at IS NOT NULL;
COMMENT ON INDEX coord.job_expires IS 'Jobs with a deadline: coord.tick kills those past it';

CREATE FUNCTION coord.set_limit(queue text, concurrency integer DEFAULT NULL, rate integer DEFAULT NULL,
                                per interval DEFAULT '1 second', burst integer DEFAULT NULL,
                                per_key boolean DEFAULT false)
RETURNS void AS 'MODULE_PATHNAME', 'coord_set_limit'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.set_limit(text, integer, integer, interval, integer, boolean) IS
  'Sets the limit of a queue (per_key: of each limit_key of it): at most concurrency running claims, and a token bucket of rate claims per per with burst (default rate); NULL removes that part';

CREATE FUNCTION coord.drop_limit(queue text, per_key boolean DEFAULT false)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_drop_limit'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.drop_limit(text, boolean) IS
  'Removes the limit of a queue (per_key: of its keys); false if there was none';

CREATE FUNCTION coord.pause(queue text, until timestamptz DEFAULT NULL, limit_key text DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_pause'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.pause(text, timestamptz, text) IS
  'Claims skip the queue (or its limit_key) until until, or until coord.resume; false if it was paused already (the new until applies)';

CREATE FUNCTION coord.resume(queue text, limit_key text DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_resume'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.resume(text, text) IS
  'Ends a pause of the queue (or of its limit_key) and wakes its idle claimers; false if it was not paused';

CREATE FUNCTION coord.next_due(queue text)
RETURNS timestamptz AS 'MODULE_PATHNAME', 'coord_next_due'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.next_due(text) IS
  'When the next job of the queue could be claimed (its run_at, a pause''s end, a bucket''s refill, a lease''s end), for idle workers'' sleep; NULL when no job waits or all wait for coord.resume';

CREATE FUNCTION coord.job_snoozes(id bigint)
RETURNS integer AS 'MODULE_PATHNAME', 'coord_job_snoozes'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION coord.job_snoozes(bigint) IS
  'How many times a live job was snoozed (failed with retry_after); NULL once it finished';

-- Internal to coord.limits: a bucket's tokens now (refilled to the moment).
CREATE FUNCTION coord.bucket_tokens(tokens float8, refilled_at timestamptz, rate integer, per interval, burst integer)
RETURNS float8 AS 'MODULE_PATHNAME', 'coord_bucket_tokens'
LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION coord.bucket_tokens(float8, timestamptz, integer, interval, integer) IS
  'A token bucket''s tokens now: tokens as of refilled_at plus rate per per since, at most burst';

-- The job views: in a fragment of their own, because the 0.1.0 -> 0.2.0
-- update script drops and re-creates them around the table changes.
CREATE VIEW coord.jobs AS
SELECT j.id, j.queue,
       CASE WHEN j.lease_until OPERATOR(pg_catalog.>) pg_catalog.now() OR coord.job_claimed(j.id) THEN 'running'
            WHEN j.run_at OPERATOR(pg_catalog.>) pg_catalog.now() THEN 'scheduled'
            ELSE 'ready' END AS state,
       j.payload, j.run_at, j.priority, j.key, j.group_key, j.host, j.attempt, j.max_attempts,
       j.lease_until, j.last_error, j.token, j.enqueued_at, j.claimed_at,
       NULL::timestamptz AS finished_at, NULL::jsonb AS result, j.origin,
       j.claimed_by::pg_catalog.regrole AS claimed_by,
       j.limit_key, j.snoozes, j.expires_at
  FROM coord.job AS j
UNION ALL
SELECT h.id, h.queue, h.state, h.payload, h.run_at, h.priority, h.key, h.group_key, h.host,
       h.attempt, h.max_attempts, NULL::timestamptz, h.last_error, h.token, h.enqueued_at,
       h.claimed_at, h.finished_at, h.result, h.origin, NULL::pg_catalog.regrole,
       h.limit_key, h.snoozes, h.expires_at
  FROM coord.job_history AS h;
COMMENT ON VIEW coord.jobs IS
  'Every live job and every finished job still in the history; token, payload, result and last_error for coord_admin only';

CREATE VIEW coord.limits AS
WITH live AS (
  SELECT r.queue, r.per_key, r.limit_key
    FROM coord.job_running AS r
    JOIN coord.job AS j ON j.id OPERATOR(pg_catalog.=) r.job_id AND j.token OPERATOR(pg_catalog.=) r.token
   WHERE COALESCE(j.lease_until OPERATOR(pg_catalog.>) pg_catalog.now(), false) OR coord.job_claimed(j.id)),
pauses AS (
  SELECT p.queue, p.limit_key, COALESCE(p.until, 'infinity'::timestamptz) AS until
    FROM coord.job_pause AS p
   WHERE p.until IS NULL OR p.until OPERATOR(pg_catalog.>) pg_catalog.now()),
keys AS (
  SELECT l.queue, ''::text AS limit_key FROM coord.job_limit AS l WHERE NOT l.per_key
  UNION
  SELECT j.queue, j.limit_key FROM coord.job AS j
    JOIN coord.job_limit AS l ON l.queue OPERATOR(pg_catalog.=) j.queue AND l.per_key
   WHERE j.limit_key IS NOT NULL
  UNION
  SELECT b.queue, b.limit_key FROM coord.job_bucket AS b
  UNION
  SELECT p.queue, p.limit_key FROM pauses AS p)
SELECT k.queue, NULLIF(k.limit_key, '') AS limit_key, l.concurrency,
       (SELECT pg_catalog.count(*) FROM live AS v
         WHERE v.queue OPERATOR(pg_catalog.=) k.queue
           AND v.per_key OPERATOR(pg_catalog.=) (k.limit_key OPERATOR(pg_catalog.<>) '')
           AND v.limit_key OPERATOR(pg_catalog.=) k.limit_key) AS running,
       l.rate, l.per, l.burst,
       CASE WHEN l.rate IS NOT NULL THEN
         coord.bucket_tokens(b.tokens, b.refilled_at, l.rate, l.per, COALESCE(l.burst, l.rate)) END AS tokens,
       p.until AS paused_until
  FROM keys AS k
  LEFT JOIN coord.job_limit AS l ON l.queue OPERATOR(pg_catalog.=) k.queue
   AND l.per_key OPERATOR(pg_catalog.=) (k.limit_key OPERATOR(pg_catalog.<>) '')
  LEFT JOIN coord.job_bucket AS b ON b.queue OPERATOR(pg_catalog.=) k.queue
   AND b.limit_key OPERATOR(pg_catalog.=) k.limit_key
  LEFT JOIN pauses AS p ON p.queue OPERATOR(pg_catalog.=) k.queue
   AND p.limit_key OPERATOR(pg_catalog.=) k.limit_key
 WHERE l.queue IS NOT NULL OR p.queue IS NOT NULL;
COMMENT ON VIEW coord.limits IS
  'Flow control: per queue (limit_key NULL) and per limit_key, the concurrency limit and running claims, the rate limit and its bucket''s tokens, and the pause''s end (infinity: until coord.resume)';

CREATE VIEW coord.queue_stats AS
WITH live AS (
  SELECT j.queue,
         COALESCE(j.lease_until OPERATOR(pg_catalog.>) pg_catalog.now(), false)
           OR coord.job_claimed(j.id) AS running,
         j.run_at
    FROM coord.job AS j),
live_stats AS (
  SELECT l.queue,
         pg_catalog.count(*) FILTER (WHERE NOT l.running
             AND l.run_at OPERATOR(pg_catalog.<=) pg_catalog.now()) AS ready,
         pg_catalog.count(*) FILTER (WHERE NOT l.running
             AND l.run_at OPERATOR(pg_catalog.>) pg_catalog.now()) AS scheduled,
         pg_catalog.count(*) FILTER (WHERE l.running) AS running,
         pg_catalog.min(l.run_at) FILTER (WHERE NOT l.running
             AND l.run_at OPERATOR(pg_catalog.<=) pg_catalog.now()) AS oldest_ready
    FROM live AS l GROUP BY l.queue),
dead AS (
  SELECT h.queue, pg_catalog.count(*) AS dead
    FROM coord.job_history AS h
   WHERE h.state OPERATOR(pg_catalog.<>) 'done' AND h.state OPERATOR(pg_catalog.=) 'dead'
   GROUP BY h.queue),
done AS (
  SELECT h.queue, pg_catalog.count(*) AS done_last_hour
    FROM coord.job_history AS h
   WHERE h.finished_at OPERATOR(pg_catalog.>) (pg_catalog.now() OPERATOR(pg_catalog.-) '1 hour'::interval)
     AND h.state OPERATOR(pg_catalog.=) 'done'
   GROUP BY h.queue),
flow AS (
  SELECT f.queue,
         pg_catalog.max(f.paused_until) FILTER (WHERE f.limit_key IS NULL) AS paused_until,
         pg_catalog.count(*) FILTER (WHERE f.limit_key IS NOT NULL AND f.paused_until IS NOT NULL) AS paused_keys,
         pg_catalog.count(*) FILTER (WHERE f.limit_key IS NOT NULL
             AND f.running OPERATOR(pg_catalog.>=) f.concurrency) AS limited_keys
    FROM coord.limits AS f GROUP BY f.queue),
queues AS (
  SELECT queue FROM live_stats UNION SELECT queue FROM dead UNION SELECT queue FROM done
  UNION SELECT queue FROM flow)
SELECT q.queue,
       COALESCE(l.ready, 0) AS ready, COALESCE(l.scheduled, 0) AS scheduled,
       COALESCE(l.running, 0) AS running, COALESCE(d.dead, 0) AS dead,
       COALESCE(r.done_last_hour, 0) AS done_last_hour,
       pg_catalog.now() OPERATOR(pg_catalog.-) l.oldest_ready AS oldest_ready_age,
       f.paused_until, COALESCE(f.paused_keys, 0) AS paused_keys,
       COALESCE(f.limited_keys, 0) AS limited_keys
  FROM queues AS q
  LEFT JOIN live_stats AS l ON l.queue OPERATOR(pg_catalog.=) q.queue
  LEFT JOIN dead AS d ON d.queue OPERATOR(pg_catalog.=) q.queue
  LEFT JOIN done AS r ON r.queue OPERATOR(pg_catalog.=) q.queue
  LEFT JOIN flow AS f ON f.queue OPERATOR(pg_catalog.=) q.queue;
COMMENT ON VIEW coord.queue_stats IS
  'Per queue: ready, scheduled, running, dead, done in the last hour, age of the oldest ready job; the queue''s pause end, its paused keys and its keys at their concurrency limit';

-- ---------- schedules (docs/schedules.md) and coord.tick ----------

CREATE TABLE coord.schedule_defs (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         text NOT NULL UNIQUE,
    queue        text NOT NULL,
    every        interval,
    cron         text,
    payload      jsonb NOT NULL,
    starts_at    timestamptz NOT NULL,
    fixed_rate   boolean NOT NULL,
    host         text,
    next_run_at  timestamptz,
    last_run_at  timestamptz,
    last_state   text,
    last_error   text,
    created_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    tz           text NOT NULL DEFAULT 'UTC',
    CHECK ((every IS NULL) OPERATOR(pg_catalog.<>) (cron IS NULL))
);
COMMENT ON TABLE coord.schedule_defs IS
  'Recurring events; each has at most one live instance, a job with origin s:<name>';
COMMENT ON COLUMN coord.schedule_defs.next_run_at IS
  'Slot of the outstanding instance, or of the next one; NULL when a cron expression never fires again';
COMMENT ON COLUMN coord.schedule_defs.last_run_at IS 'When the last instance finished';
COMMENT ON COLUMN coord.schedule_defs.last_state IS 'How the last instance finished: done, dead or cancelled';
COMMENT ON COLUMN coord.schedule_defs.last_error IS
  'Why the last tick could not repair the schedule, or (with next_run_at NULL) why it stopped after an instance finished; NULL once an instance is put on';
COMMENT ON COLUMN coord.schedule_defs.tz IS
  'Time zone whose wall time the cron fields match (PostgreSQL''s name for it); UTC for every schedules';
REVOKE ALL ON coord.schedule_defs FROM PUBLIC;
COMMENT ON SEQUENCE coord.schedule_defs_id_seq IS 'Schedule ids';

CREATE TABLE coord.tick_state (
    singleton    boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    last_tick_at timestamptz,
    ticked_at    timestamptz,
    ticks        bigint NOT NULL DEFAULT 0
);
COMMENT ON TABLE coord.tick_state IS
  'One row: the now of the last coord.tick, the clock time it ran, and how many ticks ran';
REVOKE ALL ON coord.tick_state FROM PUBLIC;
INSERT INTO coord.tick_state DEFAULT VALUES;

CREATE FUNCTION coord.schedule(name text, queue text, every interval DEFAULT NULL, cron text DEFAULT NULL,
                               payload jsonb DEFAULT '{}', starts_at timestamptz DEFAULT NULL,
                               fixed_rate boolean DEFAULT false, host text DEFAULT NULL,
                               tz text DEFAULT 'UTC')
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_schedule'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.schedule(text, text, interval, text, jsonb, timestamptz, boolean, text, text) IS
  'Creates or replaces a recurring event (every interval of absolute time, or a 5-field cron expression in the wall time of tz); at most one instance is outstanding';

CREATE FUNCTION coord.unschedule(name text)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_unschedule'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.unschedule(text) IS
  'Drops a schedule and its unclaimed instance; a running instance finishes and is not followed';

CREATE FUNCTION coord.cron_next(cron text, after timestamptz DEFAULT pg_catalog.now(), tz text DEFAULT 'UTC')
RETURNS timestamptz AS 'MODULE_PATHNAME', 'coord_cron_next_sql'
LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION coord.cron_next(text, timestamptz, text) IS
  'The first fire time of a 5-field cron expression strictly after after, its fields matching the wall time of tz (a minute or hour field beginning with * fires whenever the clock shows a match; otherwise a skipped time fires at the end of the gap, a repeated one at its first occurrence); NULL if it never fires';

CREATE FUNCTION coord.tick(now timestamptz DEFAULT pg_catalog.now())
RETURNS integer AS 'MODULE_PATHNAME', 'coord_tick'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.tick(timestamptz) IS
  'All time-driven work: schedule instances, app period runs and timeouts, dead leases, history retention; idempotent';

CREATE FUNCTION coord.cron_install(schedule text DEFAULT '* * * * *')
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_cron_install'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.cron_install(text) IS
  'Registers SELECT coord.tick() with pg_cron (job name coord-tick); returns the pg_cron job id';

CREATE VIEW coord.schedules AS
SELECT s.name, s.queue, s.every, s.cron, s.fixed_rate, s.next_run_at, s.last_run_at, s.last_state,
       COALESCE(j.lease_until OPERATOR(pg_catalog.>) pg_catalog.now(), false)
         OR COALESCE(coord.job_claimed(j.id), false) AS running,
       j.id AS job_id, s.payload, s.host, s.starts_at, s.last_error, s.tz
  FROM coord.schedule_defs AS s
  LEFT JOIN coord.job AS j
    ON j.origin OPERATOR(pg_catalog.=) ('s:' OPERATOR(pg_catalog.||) s.name);
COMMENT ON VIEW coord.schedules IS
  'Schedules: next and last run, how the last one ended, and whether an instance is running now';

-- ---------- apps: period-keyed dependency scheduling (docs/apps.md) ----------

CREATE TABLE coord.app_defs (
    name         text PRIMARY KEY,
    starts       text CHECK (starts OPERATOR(pg_catalog.=) ANY (ARRAY['hourly', 'daily', 'weekly', 'monthly', 'yearly'])),
    depends      jsonb NOT NULL,
    timeout      interval,
    host         text,
    queue        text NOT NULL,
    catchup_from timestamptz,
    conf         jsonb NOT NULL,
    grain        text NOT NULL
                 CHECK (grain OPERATOR(pg_catalog.=) ANY (ARRAY['hourly', 'daily', 'weekly', 'monthly', 'yearly'])),
    first_period timestamptz,
    next_period  timestamptz,
    last_error   text,
    created_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    tz           text NOT NULL DEFAULT 'UTC',
    deadline     interval
);
COMMENT ON TABLE coord.app_defs IS
  'Apps: period length, dependencies, timeout, host and queue of each; see coord.define_app';
COMMENT ON COLUMN coord.app_defs.grain IS
  'The length of the app''s periods: starts, or the coarsest period named in depends';
COMMENT ON COLUMN coord.app_defs.first_period IS
  'Start of the first period the app has runs for: catchup_from, else the period of the first tick after its definition';
COMMENT ON COLUMN coord.app_defs.next_period IS
  'Periods before this one all have a run (or never will); coord.tick creates and repairs from here';
COMMENT ON COLUMN coord.app_defs.last_error IS
  'Why the last tick, or the last completion of an upstream run, could not create or time out this app''s runs; NULL after a tick that could';
COMMENT ON COLUMN coord.app_defs.tz IS
  'Time zone whose local calendar periods the app runs for (PostgreSQL''s name for it); UTC by default';
COMMENT ON COLUMN coord.app_defs.deadline IS
  'How long after its period ends a run may be unfinished before it is late: coord.tick then raises a deadline alert (coord.alerts)';
REVOKE ALL ON coord.app_defs FROM PUBLIC;

CREATE TABLE coord.app_runs (
    app           text NOT NULL,
    period_start  timestamptz NOT NULL,
    period_end    timestamptz NOT NULL,
    queue         text NOT NULL,
    host          text,
    state         text NOT NULL
                  CHECK (state OPERATOR(pg_catalog.=) ANY (ARRAY['live', 'done', 'dead', 'cancelled'])),
    attempts      integer NOT NULL DEFAULT 0,
    job_id        bigint,
    created_at    timestamptz NOT NULL DEFAULT pg_catalog.now(),
    finished_at   timestamptz,
    result        jsonb,
    claim_token   bigint,
    claim_seen_at timestamptz,
    PRIMARY KEY (app, period_start)
);
COMMENT ON TABLE coord.app_runs IS
  'One row per (app, period) that has a run, created once: live while its job (origin a:<app>:<YYYY-MM-DD-HH24MI>, with the UTC offset after it in a zone other than UTC) is, then done, dead or cancelled';
COMMENT ON COLUMN coord.app_runs.claim_token IS 'The claim of the run''s job that a tick last saw (runs with a timeout)';
COMMENT ON COLUMN coord.app_runs.claim_seen_at IS 'The tick time at which that claim was first seen';
REVOKE ALL ON coord.app_runs FROM PUBLIC;
CREATE INDEX app_runs_live ON coord.app_runs (app, period_start)
  WHERE state OPERATOR(pg_catalog.=) 'live';
COMMENT ON INDEX coord.app_runs_live IS 'Unfinished runs: timeouts, catch-up limits, repairs';

CREATE FUNCTION coord.define_app(name text, starts text DEFAULT NULL, depends jsonb DEFAULT '{}',
                                 timeout interval DEFAULT NULL, host text DEFAULT NULL,
                                 queue text DEFAULT 'apps', catchup_from timestamptz DEFAULT NULL,
                                 conf jsonb DEFAULT '{}', tz text DEFAULT 'UTC',
                                 deadline interval DEFAULT NULL)
RETURNS void AS 'MODULE_PATHNAME', 'coord_define_app'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.define_app(text, text, jsonb, interval, text, text, timestamptz, jsonb, text, interval) IS
  'Creates or replaces an app: runs per hourly/daily/weekly/monthly/yearly local period of tz (a local day has 23, 24 or 25 hours), created when the period starts or when the runs it depends on are done; a run unfinished deadline after its period ends raises an alert (coord.alerts); changing tz of an app with runs is refused';

CREATE FUNCTION coord.drop_app(name text)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_drop_app'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.drop_app(text) IS
  'Drops an app, its runs and their unclaimed jobs; ERROR while other apps depend on it';

CREATE VIEW coord.runs AS
SELECT r.app, r.period_start, r.period_end, r.host,
       CASE WHEN j.id IS NULL THEN
                 CASE WHEN r.state OPERATOR(pg_catalog.=) 'live' THEN 'missing' ELSE r.state END
            WHEN j.lease_until OPERATOR(pg_catalog.>) pg_catalog.now() OR coord.job_claimed(j.id) THEN 'running'
            WHEN j.run_at OPERATOR(pg_catalog.>) pg_catalog.now() THEN 'scheduled'
            ELSE 'ready' END AS state,
       COALESCE(j.attempt, r.attempts) AS attempts, r.job_id, r.created_at, r.finished_at, r.result,
       r.queue, j.last_error, d.last_error AS app_error
  FROM coord.app_runs AS r
  LEFT JOIN coord.job AS j ON j.id OPERATOR(pg_catalog.=) r.job_id
  LEFT JOIN coord.app_defs AS d ON d.name OPERATOR(pg_catalog.=) r.app;
COMMENT ON VIEW coord.runs IS
  'App runs, one per (app, period): state scheduled, ready, running, done, dead, cancelled (or missing: its job was deleted; the next tick puts it back)';

CREATE FUNCTION coord.grid("from" timestamptz DEFAULT pg_catalog.now() OPERATOR(pg_catalog.-) '1 day'::interval,
                           "to" timestamptz DEFAULT pg_catalog.now(), apps text[] DEFAULT NULL)
RETURNS SETOF text AS 'MODULE_PATHNAME', 'coord_grid'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 10;
COMMENT ON FUNCTION coord.grid(timestamptz, timestamptz, text[]) IS
  'A text picture of apps x periods: one line per app with a symbol per run state, a header with period labels and a legend';

-- ---------- apps' alerts: deadlines, dead runs, timeouts (issue 18; src/apps/apps_alerts.c) ----------

CREATE TABLE coord.app_alerts (
    app          text NOT NULL,
    period_start timestamptz NOT NULL,
    kind         text NOT NULL
                 CHECK (kind OPERATOR(pg_catalog.=) ANY (ARRAY['deadline', 'dead', 'timeout'])),
    raised_at    timestamptz NOT NULL,
    cleared_at   timestamptz,
    detail       text NOT NULL,
    events       integer NOT NULL DEFAULT 1,
    PRIMARY KEY (app, period_start, kind, raised_at)
);
COMMENT ON TABLE coord.app_alerts IS
  'Alerts of app runs: deadline (unfinished that long after its period ended), dead (died after its last attempt), timeout (its claim revoked by its timeout); open until cleared_at';
COMMENT ON COLUMN coord.app_alerts.raised_at IS
  'The now of the coord.tick that raised it (deadline, timeout), or when the run died (dead)';
COMMENT ON COLUMN coord.app_alerts.cleared_at IS
  'When the run finished (deadline, timeout: done, dead or cancelled; dead: done after a retry or a rerun); NULL while open';
COMMENT ON COLUMN coord.app_alerts.events IS
  'How many times it happened while open (timeouts of the same run)';
REVOKE ALL ON coord.app_alerts FROM PUBLIC;
CREATE UNIQUE INDEX app_alerts_open ON coord.app_alerts (app, period_start, kind)
  WHERE cleared_at IS NULL;
COMMENT ON INDEX coord.app_alerts_open IS 'At most one open alert of each kind per run, whatever the number of ticks';
CREATE INDEX app_alerts_cleared ON coord.app_alerts (cleared_at)
  WHERE cleared_at IS NOT NULL;
COMMENT ON INDEX coord.app_alerts_cleared IS 'Retention of cleared alerts (coord.job_history_retention, by coord.tick)';

CREATE VIEW coord.alerts AS
SELECT a.app, a.period_start, a.kind, a.raised_at, a.cleared_at, a.detail, a.events
  FROM coord.app_alerts AS a;
COMMENT ON VIEW coord.alerts IS
  'Alerts of app runs (deadline, dead, timeout), open while cleared_at is NULL; a NOTIFY on "coord:alerts" (payload {"app", "period_start", "kind"}) at the commit that raises one';

-- ---------- apps: reruns and backfills (docs/apps.md, Reruns and backfills) ----------

CREATE TABLE coord.app_run_history (
    app          text NOT NULL REFERENCES coord.app_defs (name) ON DELETE CASCADE,
    period_start timestamptz NOT NULL,
    attempt_no   integer NOT NULL,
    period_end   timestamptz NOT NULL,
    queue        text NOT NULL,
    host         text,
    state        text NOT NULL,
    attempts     integer NOT NULL,
    job_id       bigint,
    created_at   timestamptz NOT NULL,
    finished_at  timestamptz,
    result       jsonb,
    replaced_at  timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (app, period_start, attempt_no)
);
COMMENT ON TABLE coord.app_run_history IS
  'Earlier attempts of app runs: a finished run that coord.rerun replaced, numbered from 1 per (app, period)';
REVOKE ALL ON coord.app_run_history FROM PUBLIC;

CREATE TABLE coord.app_reruns (
    app          text NOT NULL REFERENCES coord.app_defs (name) ON DELETE CASCADE,
    period_start timestamptz NOT NULL,
    period_end   timestamptz NOT NULL,
    requested_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (app, period_start)
);
COMMENT ON TABLE coord.app_reruns IS
  'Periods whose run coord.rerun reset and that have no new run yet: coord.tick creates them (at most 24 unfinished runs per app), or the completion of their last upstream does';
REVOKE ALL ON coord.app_reruns FROM PUBLIC;

CREATE FUNCTION coord.rerun(app text, "from" timestamptz, "to" timestamptz, downstream boolean DEFAULT true)
RETURNS integer AS 'MODULE_PATHNAME', 'coord_rerun'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.rerun(text, timestamptz, timestamptz, boolean) IS
  'Reruns every finished run of an app whose period starts in [from, to) (the old one stays in coord.runs as an earlier attempt) and, with downstream, resets every dependent run containing such a period to wait for its upstreams again; returns how many runs were reset';

CREATE OR REPLACE VIEW coord.runs AS
SELECT r.app, r.period_start, r.period_end, r.host,
       CASE WHEN j.id IS NULL THEN
                 CASE WHEN r.state OPERATOR(pg_catalog.=) 'live' THEN 'missing' ELSE r.state END
            WHEN j.lease_until OPERATOR(pg_catalog.>) pg_catalog.now() OR coord.job_claimed(j.id) THEN 'running'
            WHEN j.run_at OPERATOR(pg_catalog.>) pg_catalog.now() THEN 'scheduled'
            ELSE 'ready' END AS state,
       COALESCE(j.attempt, r.attempts) AS attempts, r.job_id, r.created_at, r.finished_at, r.result,
       r.queue, j.last_error, d.last_error AS app_error,
       (SELECT pg_catalog.count(*) FROM coord.app_run_history AS h
         WHERE h.app OPERATOR(pg_catalog.=) r.app
           AND h.period_start OPERATOR(pg_catalog.=) r.period_start)::integer OPERATOR(pg_catalog.+) 1 AS attempt_no,
       true AS current
  FROM coord.app_runs AS r
  LEFT JOIN coord.job AS j ON j.id OPERATOR(pg_catalog.=) r.job_id
  LEFT JOIN coord.app_defs AS d ON d.name OPERATOR(pg_catalog.=) r.app
UNION ALL
SELECT p.app, p.period_start, p.period_end, d.host, 'waiting', 0, NULL::bigint, p.requested_at, NULL::timestamptz,
       NULL::jsonb, d.queue, NULL::text, d.last_error,
       (SELECT pg_catalog.count(*) FROM coord.app_run_history AS h
         WHERE h.app OPERATOR(pg_catalog.=) p.app
           AND h.period_start OPERATOR(pg_catalog.=) p.period_start)::integer OPERATOR(pg_catalog.+) 1,
       true
  FROM coord.app_reruns AS p
  JOIN coord.app_defs AS d ON d.name OPERATOR(pg_catalog.=) p.app
 WHERE NOT EXISTS (SELECT 1 FROM coord.app_runs AS r2
                    WHERE r2.app OPERATOR(pg_catalog.=) p.app
                      AND r2.period_start OPERATOR(pg_catalog.=) p.period_start)
UNION ALL
SELECT h.app, h.period_start, h.period_end, h.host, h.state, h.attempts, h.job_id, h.created_at, h.finished_at,
       h.result, h.queue, NULL::text, NULL::text, h.attempt_no, false
  FROM coord.app_run_history AS h;
COMMENT ON VIEW coord.runs IS
  'App runs: per (app, period) its current run (current true: state scheduled, ready, running, done, dead, cancelled, missing when its job was deleted, waiting when coord.rerun reset it and its new run is not created yet) and the earlier attempts coord.rerun replaced (current false), numbered by attempt_no';

-------------------------------------------------------------------------------
-- Leader election (src/election.c)
-------------------------------------------------------------------------------

-- Terms of every election come from one sequence: a term is never handed
-- out twice, not even one of a campaign that rolled back.
CREATE SEQUENCE coord.election_term_seq AS bigint;
COMMENT ON SEQUENCE coord.election_term_seq IS 'Source of the terms of every election';
REVOKE ALL ON coord.election_term_seq FROM PUBLIC;

-- One row per election: its newest committed term and that term's leader
-- (pid and backend_start are NULL once the leader resigned).  Whether the
-- leader still leads is the lock manager's to say: coord.leader.
CREATE TABLE coord.elections (
    election      text PRIMARY KEY,
    term          bigint NOT NULL,
    value         text,
    pid           integer,
    backend_start timestamptz,
    since         timestamptz NOT NULL
);
COMMENT ON TABLE coord.elections IS
  'Newest term of each election, with its leader''s value, pid, backend start and since';
REVOKE ALL ON coord.elections FROM PUBLIC;

CREATE FUNCTION coord.campaign(election text, value text DEFAULT NULL, timeout interval DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_campaign'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.campaign(text, text, interval) IS
  'Waits (first come, first served) until this session leads the election; returns its term, larger than every earlier one and durable at commit; NULL on timeout';

CREATE FUNCTION coord.leader(election text,
    OUT value text, OUT pid integer, OUT since timestamptz, OUT term bigint)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'coord_leader'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;
COMMENT ON FUNCTION coord.leader(text) IS
  'The live leader of an election (value, pid, since, term), or no row; never a leader whose session ended';

CREATE FUNCTION coord.resign(election text)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_resign'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.resign(text) IS
  'Gives up leading the election when this transaction commits; false if this session does not lead it';

CREATE FUNCTION coord.drop_election(election text)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_drop_election'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.drop_election(text) IS
  'Deletes an election''s row now (coord.tick deletes one without a leader after coord.retention); the next campaign gets a larger term all the same; false when there is none; ERROR while a session leads it';

-- Terms survive a dump and restore, so they keep growing.
SELECT pg_catalog.pg_extension_config_dump('coord.elections', '');
SELECT pg_catalog.pg_extension_config_dump('coord.election_term_seq', '');

-------------------------------------------------------------------------------
-- Lease locks (src/leases.c)
-------------------------------------------------------------------------------

-- One row per lease: live while expires_at is ahead of the server's clock.
-- The "C" collation lets one range scan of the key find a path's descendants.
CREATE TABLE coord.lease (
    path       text COLLATE pg_catalog."C" PRIMARY KEY,
    token      bigint NOT NULL,
    holder     text,
    taken_at   timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
COMMENT ON TABLE coord.lease IS
  'Lease locks: one row per path, live until expires_at on the server''s clock; token from coord.fence_seq';
REVOKE ALL ON coord.lease FROM PUBLIC;

CREATE FUNCTION coord.lease_lock(path text, ttl interval, holder text DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_lease_lock'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.lease_lock(text, interval, text) IS
  'A lease on path until ttl passes on the server''s clock; its token (larger than any before for path), or NULL while a conflicting lease is live or a conflicting lock is held';

CREATE FUNCTION coord.renew(path text, token bigint, ttl interval)
RETURNS timestamptz AS 'MODULE_PATHNAME', 'coord_renew'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.renew(text, bigint, interval) IS
  'Extends the live lease whose token this is to ttl from now on the server''s clock; the new expiry, or NULL when token is not the live lease''s';

CREATE FUNCTION coord.lease_unlock(path text, token bigint)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_lease_unlock'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.lease_unlock(text, bigint) IS
  'Ends the lease whose token this is; true if it was live';

CREATE VIEW coord.leases AS
SELECT l.path, l.holder, l.token, l.taken_at, l.expires_at,
       l.expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp() AS live
  FROM coord.lease AS l;
COMMENT ON VIEW coord.leases IS
  'Lease locks: path, holder, token, when taken, expiry, and whether live now on the server''s clock';

-- a lease outlives its session, so a dump and restore keeps it (until its TTL)
SELECT pg_catalog.pg_extension_config_dump('coord.lease', '');

-- ---------- partition groups (docs/partition-groups.md) ----------
-- A group divides segments 0 .. segments-1 among its live members in
-- proportion to their weights (src/partitions/partitions_assign.c).
-- Membership is session-bound: a member row counts while the backend it
-- names is alive, and the member also holds a session lock (namespace 17208)
-- on its name, so two sessions never join under one name.  A segment belongs
-- to the session its row names while that session is alive; it changes
-- hands only when that owner lets it go or is gone
-- (src/partitions/partitions.c).
CREATE TABLE coord.partition_groups (
    partition_group text PRIMARY KEY,
    segments        integer NOT NULL CHECK (segments BETWEEN 1 AND 65536),
    assignor        text NOT NULL CHECK (assignor IN ('sticky', 'range', 'rendezvous')),
    created_at      timestamptz NOT NULL DEFAULT pg_catalog.now(),
    empty_since     timestamptz
);
COMMENT ON TABLE coord.partition_groups IS
  'Partition groups: their segment count and assignor, fixed at the first join';
COMMENT ON COLUMN coord.partition_groups.empty_since IS
  'When coord.tick found the group without a live member (NULL: it had one, or a member joined since); the tick deletes it coord.retention later';
REVOKE ALL ON coord.partition_groups FROM PUBLIC;

CREATE TABLE coord.partition_members (
    partition_group text NOT NULL REFERENCES coord.partition_groups ON DELETE CASCADE,
    member          text NOT NULL,
    weight          real NOT NULL CHECK (weight > 0),
    meta            jsonb NOT NULL,
    pid             integer NOT NULL,
    backend_start   timestamptz NOT NULL,
    joined_at       timestamptz NOT NULL,
    PRIMARY KEY (partition_group, member)
);
COMMENT ON TABLE coord.partition_members IS
  'Members of partition groups: a row counts while the backend (pid, backend_start) is alive; others are deleted lazily';
REVOKE ALL ON coord.partition_members FROM PUBLIC;

-- Every change of the members (joins, leaves, a dead member's row removed,
-- changes by hand, a group's deletion) invalidates what backends cache of
-- them at its commit: a settled member's coord.owned reads no row until then.
CREATE FUNCTION coord.partition_members_changed()
RETURNS trigger AS 'MODULE_PATHNAME', 'coord_partition_members_changed'
LANGUAGE C;
COMMENT ON FUNCTION coord.partition_members_changed() IS
  'Trigger of coord.partition_members: at commit, backends read the members of partition groups again';
REVOKE ALL ON FUNCTION coord.partition_members_changed() FROM PUBLIC;
CREATE TRIGGER partition_members_changed
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON coord.partition_members
  FOR EACH STATEMENT EXECUTE FUNCTION coord.partition_members_changed();
COMMENT ON TRIGGER partition_members_changed ON coord.partition_members IS
  'Invalidates the backends'' cache of partition group members at commit';

CREATE TABLE coord.partition_segments (
    partition_group text NOT NULL REFERENCES coord.partition_groups ON DELETE CASCADE,
    segment         integer NOT NULL,
    owner_pid       integer,
    owner_start     timestamptz,
    token           bigint NOT NULL,
    taken_at        timestamptz NOT NULL,
    PRIMARY KEY (partition_group, segment)
);
COMMENT ON TABLE coord.partition_segments IS
  'Segment owners: a segment is its owner''s while that backend is alive; every acquisition takes a new, larger token (a fencing token)';
REVOKE ALL ON coord.partition_segments FROM PUBLIC;

-- Segment tokens come from a sequence, which a rollback does not turn back:
-- a token an aborted acquisition handed out is never handed out again.
CREATE SEQUENCE coord.segment_token_seq AS bigint;
COMMENT ON SEQUENCE coord.segment_token_seq IS 'Source of the fencing tokens of every partition segment';
REVOKE ALL ON coord.segment_token_seq FROM PUBLIC;

CREATE FUNCTION coord.join(partition_group text, member text, weight double precision DEFAULT 1,
                           meta jsonb DEFAULT '{}', segments integer DEFAULT NULL,
                           assignor text DEFAULT NULL)
RETURNS integer[] AS 'MODULE_PATHNAME', 'coord_join'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.join(text, text, double precision, jsonb, integer, text) IS
  'Joins a partition group as member (or updates this session''s weight, stored as real, and meta); returns the segments this session owns now. segments (1024) and assignor (sticky) fix the group at its first join; NULL keeps the group''s';

CREATE FUNCTION coord.leave(partition_group text)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_leave'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.leave(text) IS
  'Leaves a partition group and gives this session''s segments up now; false when it was no member';

CREATE FUNCTION coord.drop_group(partition_group text)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_drop_group'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.drop_group(text) IS
  'Deletes a partition group and its segments now (coord.tick deletes one without members after coord.retention); false when there is none; ERROR while it has a live member';

CREATE FUNCTION coord.owned(partition_group text)
RETURNS integer[] AS 'MODULE_PATHNAME', 'coord_owned'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.owned(text) IS
  'The segments this session owns now, after taking any that became free and letting go of any that moved away';

CREATE FUNCTION coord.segment_of(partition_group text, key text)
RETURNS integer AS 'MODULE_PATHNAME', 'coord_segment_of'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION coord.segment_of(text, text) IS
  'The segment of a key in a partition group: coord.job_part(key, NULL) modulo the group''s segments';

-- Keys of other types hash as their text, the key a job of theirs would
-- have: segment_of(g, 42) = segment_of(g, '42').  An untyped literal still
-- picks text; integer and smallint keys resolve to bigint.
CREATE FUNCTION coord.segment_of(partition_group text, key bigint)
RETURNS integer AS 'MODULE_PATHNAME', 'coord_segment_of_int8'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION coord.segment_of(text, bigint) IS
  'The segment of an integer key in a partition group: that of its text, coord.segment_of(partition_group, key::text)';

CREATE FUNCTION coord.segment_of(partition_group text, key uuid)
RETURNS integer AS 'MODULE_PATHNAME', 'coord_segment_of_uuid'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION coord.segment_of(text, uuid) IS
  'The segment of a uuid key in a partition group: that of its text, coord.segment_of(partition_group, key::text)';

CREATE FUNCTION coord.segment_token(partition_group text, segment integer)
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_segment_token'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION coord.segment_token(text, integer) IS
  'The fencing token this session got when it took segment; NULL when it does not own it';

CREATE FUNCTION coord.member_alive(partition_group text, member text, pid integer, backend_start timestamptz)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_member_alive'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION coord.member_alive(text, text, integer, timestamptz) IS
  'Does the member row (partition_group, member, pid, backend_start) count: while that session holds its member lock in this database';

CREATE VIEW coord.members AS
SELECT m.partition_group, m.member, m.weight, m.meta, m.alive, m.pid, m.joined_at,
       CASE WHEN m.alive THEN m.owned ELSE 0 END AS owned,
       CASE WHEN m.alive THEN m.weight::pg_catalog.float8 OPERATOR(pg_catalog./)
            pg_catalog.sum(m.weight::pg_catalog.float8) FILTER (WHERE m.alive)
              OVER (PARTITION BY m.partition_group) END AS target_share,
       CASE WHEN m.alive THEN m.owned ELSE 0 END::pg_catalog.float8 OPERATOR(pg_catalog./)
         g.segments::pg_catalog.float8 AS owned_share
  FROM (SELECT p.*, coord.member_alive(p.partition_group, p.member, p.pid, p.backend_start) AS alive,
               (SELECT pg_catalog.count(*)::integer FROM coord.partition_segments AS s
                 WHERE s.partition_group OPERATOR(pg_catalog.=) p.partition_group
                   AND s.owner_pid OPERATOR(pg_catalog.=) p.pid
                   AND s.owner_start OPERATOR(pg_catalog.=) p.backend_start) AS owned
          FROM coord.partition_members AS p) AS m
  JOIN coord.partition_groups AS g ON g.partition_group OPERATOR(pg_catalog.=) m.partition_group;
COMMENT ON VIEW coord.members IS
  'Members of partition groups: weight, meta, liveness, segments owned, target share (of the live weight) and owned share';

-- Groups and segment rows are dumped: a restored group keeps its segment
-- count, and its tokens stay larger than any issued before.  Members and
-- owners are sessions: after a restore no owner is alive.
SELECT pg_catalog.pg_extension_config_dump('coord.partition_groups', '');
SELECT pg_catalog.pg_extension_config_dump('coord.partition_segments', '');
SELECT pg_catalog.pg_extension_config_dump('coord.segment_token_seq', '');

-------------------------------------------------------------------------------
-- Semaphores (src/semaphores.c)
-------------------------------------------------------------------------------

-- Labels of permits: who took each one last, with what size, since when.
-- The lock table says who holds a permit; a label counts only while it
-- names a live holder of that permit (coord.semaphores), so it is not
-- logged; coord.tick deletes the labels of backends that are gone.
CREATE UNLOGGED TABLE coord.permit_holders (
    key           bigint NOT NULL,
    permit        integer NOT NULL,
    path          text NOT NULL,
    permits       integer NOT NULL,
    pid           integer NOT NULL,
    backend_start timestamptz NOT NULL,
    since         timestamptz,
    PRIMARY KEY (key, permit)
) WITH (fillfactor = 50);
COMMENT ON TABLE coord.permit_holders IS
  'Latest holder of each semaphore permit (path, size asked for, pid, since); valid only while that holder holds the permit';
REVOKE ALL ON coord.permit_holders FROM PUBLIC;

CREATE FUNCTION coord.acquire_permit(path text, permits integer, timeout interval DEFAULT NULL,
                                     xact boolean DEFAULT false)
RETURNS integer AS 'MODULE_PATHNAME', 'coord_acquire_permit'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.acquire_permit(text, integer, interval, boolean) IS
  'A permit (0 .. permits-1) of the counting semaphore at path, waiting first come first served up to timeout; NULL on timeout. Session scope (or xact); reentrant';

CREATE FUNCTION coord.release_permit(path text)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_release_permit'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.release_permit(text) IS
  'Lets go of one hold of this session''s permit of path at commit; false with a WARNING if none';

CREATE FUNCTION coord.permit_status(
    gate boolean,
    OUT key bigint, OUT mode text, OUT granted boolean, OUT pid integer,
    OUT application_name text, OUT client_addr inet, OUT backend_start timestamptz,
    OUT wait_start timestamptz)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'coord_permit_status'
LANGUAGE C VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION coord.permit_status(boolean) IS
  'Semaphore permit locks (gate: the waiters'' gate locks) held and awaited in this database';

CREATE VIEW coord.semaphores AS
WITH held AS (
  SELECT s.key OPERATOR(pg_catalog.&) '-65536'::pg_catalog.int8 AS key,
         (s.key OPERATOR(pg_catalog.&) '65535'::pg_catalog.int8)::pg_catalog.int4 AS permit,
         s.pid, s.backend_start
    FROM coord.permit_status(false) AS s
   WHERE s.granted
), labelled AS (
  SELECT h.key, h.permit, h.pid, l.permits, l.since
    FROM held AS h
    LEFT JOIN coord.permit_holders AS l
      ON l.key OPERATOR(pg_catalog.=) h.key AND l.permit OPERATOR(pg_catalog.=) h.permit
     AND l.pid OPERATOR(pg_catalog.=) h.pid
     AND l.backend_start OPERATOR(pg_catalog.=) h.backend_start
), waiting AS (
  SELECT g.key, pg_catalog.count(DISTINCT g.pid) AS n
    FROM coord.permit_status(true) AS g
   GROUP BY g.key
), sems AS (
  SELECT h.key, pg_catalog.count(*) AS holders, pg_catalog.max(h.permits) AS permits
    FROM labelled AS h GROUP BY h.key
  UNION ALL
  SELECT w.key, 0, NULL FROM waiting AS w
   WHERE NOT EXISTS (SELECT 1 FROM held AS h WHERE h.key OPERATOR(pg_catalog.=) w.key)
)
SELECT COALESCE(n.path, '#' OPERATOR(pg_catalog.||) s.key::pg_catalog.text) AS path,
       COALESCE(s.permits, n.permits) AS permits,
       s.holders,
       COALESCE(w.n, 0) AS waiters,
       l.pid, l.permit, l.since, s.key
  FROM sems AS s
  LEFT JOIN labelled AS l ON l.key OPERATOR(pg_catalog.=) s.key
  LEFT JOIN waiting AS w ON w.key OPERATOR(pg_catalog.=) s.key
  LEFT JOIN LATERAL (
    SELECT x.path, x.permits FROM coord.permit_holders AS x
     WHERE x.key OPERATOR(pg_catalog.=) s.key
     ORDER BY x.since DESC NULLS LAST LIMIT 1) AS n ON true;
COMMENT ON VIEW coord.semaphores IS
  'Counting semaphores in use: path, permits, holders and waiters, one row per holder (pid, permit, since)';

-- ---------- signals: external inputs of apps (docs/apps.md) ----------
-- A dependency written "@name": "<grain>" in coord.define_app's depends is
-- met, for each period of that grain, by a row of coord.app_signals whose
-- period_start lies in it (src/apps/apps.c, section "signals").
CREATE TABLE coord.app_signals (
    name         text NOT NULL,
    period_start timestamptz NOT NULL,
    payload      jsonb NOT NULL,
    signalled_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    signalled_by text NOT NULL,
    PRIMARY KEY (name, period_start)
);
COMMENT ON TABLE coord.app_signals IS
  'External inputs: one row per (signal, period_start) given to coord.signal, kept for the apps that depend on "@name"';
COMMENT ON COLUMN coord.app_signals.signalled_by IS 'The role that called coord.signal';
REVOKE ALL ON coord.app_signals FROM PUBLIC;

CREATE FUNCTION coord.signal(name text, period_start timestamptz, payload jsonb DEFAULT '{}')
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_signal'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.signal(text, timestamptz, jsonb) IS
  'An external input for the period containing period_start: meets the dependencies written "@name" and creates the runs it completes, in this transaction; false if already signalled';

CREATE VIEW coord.signals AS
SELECT s.name, s.period_start, s.signalled_at, s.signalled_by, s.payload,
       ARRAY(SELECT d.name FROM coord.app_defs AS d
              WHERE d.depends OPERATOR(pg_catalog.?) ('@' OPERATOR(pg_catalog.||) s.name)
              ORDER BY d.name COLLATE pg_catalog."C") AS apps
  FROM coord.app_signals AS s;
COMMENT ON VIEW coord.signals IS
  'Signals given to coord.signal, with the apps that depend on each (written "@name" in their depends)';
-- users' state: dumped (sql/parts/dump.sql explains)
SELECT pg_catalog.pg_extension_config_dump('coord.app_signals', '');

-- ---------- roles and privileges (least privilege) ----------
--
-- Three NOLOGIN roles, created if missing (roles belong to the cluster, not
-- to a database, so a second CREATE EXTENSION finds them there; DROP
-- EXTENSION leaves them):
--   coord_worker   claim, complete, fail, heartbeat, enqueue, locks, requests
--   coord_monitor  the views, and the functions they call, but no column
--                  that holds a live claim token or what callers store
--                  (token, payload, result, last_error: these can carry
--                  secrets, and a token is what forges a completion)
--   coord_admin    schedules, apps, tick, purge, cancel, retry; and both above
-- PUBLIC keeps USAGE on schema coord and nothing else: no function, no view.
-- Functions run their SQL as the extension owner (CoordBecomeOwner), so no
-- function is SECURITY DEFINER and no table is granted to anyone.
--
-- A role of that name that already exists is adopted only if it is a plain
-- group role: NOLOGIN, none of SUPERUSER, CREATEROLE, CREATEDB, REPLICATION
-- or BYPASSRLS, and a member of no role (coord_admin: of coord_worker and
-- coord_monitor only).  Anything else is refused, since every role later
-- granted it would inherit what it carries.  Members it has are kept: they
-- are the users an administrator granted it to.
DO $roles$
DECLARE
  r text;
  a record;
  m text;
BEGIN
  FOREACH r IN ARRAY ARRAY['coord_worker', 'coord_monitor', 'coord_admin'] LOOP
    SELECT * INTO a FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) r;
    IF NOT FOUND THEN
      EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', r);
      CONTINUE;
    END IF;
    IF a.rolcanlogin OR a.rolsuper OR a.rolcreaterole OR a.rolcreatedb OR a.rolreplication OR a.rolbypassrls THEN
      RAISE EXCEPTION 'role "%" already exists with attributes pg_coord does not give it', r
        USING ERRCODE = 'duplicate_object',
              DETAIL = pg_catalog.concat_ws(' ', 'It has',
                CASE WHEN a.rolcanlogin THEN 'LOGIN' END, CASE WHEN a.rolsuper THEN 'SUPERUSER' END,
                CASE WHEN a.rolcreaterole THEN 'CREATEROLE' END, CASE WHEN a.rolcreatedb THEN 'CREATEDB' END,
                CASE WHEN a.rolreplication THEN 'REPLICATION' END, CASE WHEN a.rolbypassrls THEN 'BYPASSRLS' END),
              HINT = 'Drop or rename that role, or make it NOLOGIN NOSUPERUSER NOCREATEROLE NOCREATEDB NOREPLICATION NOBYPASSRLS, then install again.';
    END IF;
    SELECT pg_catalog.string_agg(g.rolname::pg_catalog.text, ', ' ORDER BY g.rolname) INTO m
      FROM pg_catalog.pg_auth_members AS am
      JOIN pg_catalog.pg_roles AS g ON g.oid OPERATOR(pg_catalog.=) am.roleid
     WHERE am.member OPERATOR(pg_catalog.=) a.oid
       AND NOT (r OPERATOR(pg_catalog.=) 'coord_admin'
                AND g.rolname OPERATOR(pg_catalog.=) ANY ('{coord_worker,coord_monitor}'::pg_catalog.name[]));
    IF m IS NOT NULL THEN
      RAISE EXCEPTION 'role "%" already exists as a member of other roles', r
        USING ERRCODE = 'duplicate_object',
              DETAIL = pg_catalog.format('It is a member of %s.', m),
              HINT = 'Drop or rename that role, or revoke those memberships, then install again.';
    END IF;
  END LOOP;
END
$roles$;
COMMENT ON ROLE coord_worker IS 'pg_coord: claim, complete, fail, heartbeat, enqueue, locks, requests';
COMMENT ON ROLE coord_monitor IS 'pg_coord: read the coord.* views';
COMMENT ON ROLE coord_admin IS 'pg_coord: schedules, apps, tick, purge, cancel, retry, and all of coord_worker and coord_monitor';
GRANT coord_worker, coord_monitor TO coord_admin;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA coord FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA coord FROM PUBLIC;

DO $grants$
DECLARE
  g record;
  fn pg_catalog.regprocedure;
  vw pg_catalog.regclass;
  cols text;
  withheld integer;
BEGIN
  FOR g IN SELECT * FROM (VALUES
      ('coord_worker', ARRAY['lock', 'try_lock', 'unlock', 'unlock_all', 'xact_lock', 'try_xact_lock',
                             'lock_first', 'fence', 'fence_ok', 'path_key',
                             'request', 'mark_queued', 'mark_done', 'release', 'request_state', 'key_hash',
                             'enqueue', 'enqueue_many', 'claim', 'complete', 'complete_many', 'fail', 'heartbeat',
                             'job_state', 'job_claimed', 'job_part', 'cron_next', 'claim_state']),
      ('coord_monitor', ARRAY['job_state', 'request_state', 'cron_next', 'grid']),
      ('coord_admin', ARRAY['schedule', 'unschedule', 'tick', 'cron_install', 'define_app', 'drop_app',
                            'purge_jobs', 'purge_requests', 'purge_lock_names', 'cancel', 'retry']))
      AS t(role, names)
  LOOP
    FOR fn IN SELECT p.oid::pg_catalog.regprocedure FROM pg_catalog.pg_proc AS p
              WHERE p.pronamespace OPERATOR(pg_catalog.=) 'coord'::pg_catalog.regnamespace
                AND p.proname OPERATOR(pg_catalog.=) ANY (g.names::pg_catalog.name[])
    LOOP
      EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %I', fn, g.role);
    END LOOP;
  END LOOP;
  -- coord_admin reads every column of every view; coord_monitor every
  -- column but the withheld ones (column privileges: SELECT * of such a view
  -- fails for it, naming the columns works).  The REVOKE first: 0.1.0 granted
  -- whole views.
  FOR vw IN SELECT c.oid::pg_catalog.regclass FROM pg_catalog.pg_class AS c
            WHERE c.relnamespace OPERATOR(pg_catalog.=) 'coord'::pg_catalog.regnamespace
              AND c.relkind OPERATOR(pg_catalog.=) 'v'
  LOOP
    EXECUTE pg_catalog.format('REVOKE SELECT ON %s FROM coord_monitor', vw);
    EXECUTE pg_catalog.format('GRANT SELECT ON %s TO coord_admin', vw);
    SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', ' ORDER BY a.attnum)
             FILTER (WHERE a.attname OPERATOR(pg_catalog.<>) ALL
                     ('{token,payload,result,last_error}'::pg_catalog.name[])),
           pg_catalog.count(*) FILTER (WHERE a.attname OPERATOR(pg_catalog.=) ANY
                     ('{token,payload,result,last_error}'::pg_catalog.name[]))
      INTO cols, withheld
      FROM pg_catalog.pg_attribute AS a
     WHERE a.attrelid OPERATOR(pg_catalog.=) vw AND a.attnum OPERATOR(pg_catalog.>) 0
       AND NOT a.attisdropped;
    IF withheld OPERATOR(pg_catalog.=) 0 THEN
      EXECUTE pg_catalog.format('GRANT SELECT ON %s TO coord_monitor', vw);
    ELSE
      EXECUTE pg_catalog.format('GRANT SELECT (%s) ON %s TO coord_monitor', cols, vw);
    END IF;
  END LOOP;
  -- a view's functions run with the reader's privileges: the monitor needs them
  FOR fn IN SELECT DISTINCT d.refobjid::pg_catalog.regprocedure
              FROM pg_catalog.pg_depend AS d
              JOIN pg_catalog.pg_rewrite AS r ON r.oid OPERATOR(pg_catalog.=) d.objid
              JOIN pg_catalog.pg_class AS c ON c.oid OPERATOR(pg_catalog.=) r.ev_class
              JOIN pg_catalog.pg_proc AS p ON p.oid OPERATOR(pg_catalog.=) d.refobjid
             WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_rewrite'::pg_catalog.regclass
               AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
               AND c.relnamespace OPERATOR(pg_catalog.=) 'coord'::pg_catalog.regnamespace
               AND p.pronamespace OPERATOR(pg_catalog.=) 'coord'::pg_catalog.regnamespace
  LOOP
    EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO coord_monitor', fn);
  END LOOP;
END
$grants$;

-- Leader election: candidates are workers; monitors may ask who leads (the
-- value is what a candidate announces to the others, like an
-- application_name: it is shown to both).
GRANT EXECUTE ON FUNCTION coord.campaign(text, text, interval), coord.resign(text),
  coord.leader(text) TO coord_worker;
GRANT EXECUTE ON FUNCTION coord.leader(text) TO coord_monitor;
-- lock_all and lease locks (issue 16): coord_worker uses them; the view
-- coord.leases got its monitor grants (all but token) from the loop above.
GRANT EXECUTE ON FUNCTION coord.lock_all(text[], interval, boolean) TO coord_worker;
GRANT EXECUTE ON FUNCTION coord.lease_lock(text, interval, text) TO coord_worker;
GRANT EXECUTE ON FUNCTION coord.renew(text, bigint, interval) TO coord_worker;
GRANT EXECUTE ON FUNCTION coord.lease_unlock(text, bigint) TO coord_worker;
-- partition groups: members use them (coord.members is granted above, as
-- every view: meta holds a member's labels, at most 8 kB, not a payload)
GRANT EXECUTE ON FUNCTION coord.join(text, text, double precision, jsonb, integer, text), coord.leave(text),
  coord.owned(text), coord.segment_of(text, text), coord.segment_of(text, bigint), coord.segment_of(text, uuid),
  coord.segment_token(text, integer) TO coord_worker;
-- coord.members calls it as its reader: workers and monitors
GRANT EXECUTE ON FUNCTION coord.member_alive(text, text, integer, timestamptz) TO coord_monitor, coord_worker;
-- Semaphores: the functions for coord_worker (the view and its function
-- reach coord_monitor through the loop above).
GRANT EXECUTE ON FUNCTION coord.acquire_permit(text, integer, interval, boolean) TO coord_worker;
GRANT EXECUTE ON FUNCTION coord.release_permit(text) TO coord_worker;
-- Flow control (issue 17): limits and pauses are the administrator's (a
-- worker that could set them could starve every other worker's queue);
-- a worker pauses only the key of a job it holds, through
-- coord.fail(..., pause_key => true), which it was granted above.  Workers
-- and monitors may ask coord.next_due and a job's snoozes; coord.limits got
-- its grants from the loop above (it holds no token or payload).
GRANT EXECUTE ON FUNCTION coord.set_limit(text, integer, integer, interval, integer, boolean),
  coord.drop_limit(text, boolean), coord.pause(text, timestamptz, text), coord.resume(text, text)
  TO coord_admin;
GRANT EXECUTE ON FUNCTION coord.next_due(text), coord.job_snoozes(bigint) TO coord_worker, coord_monitor;
-- Signals (external inputs of apps): coord_admin only.  An outside system
-- that reports its inputs gets EXECUTE on coord.signal alone, granted to
-- its own role (SECURITY.md), not a coord_* role; coord.signals reaches
-- coord_monitor through the loop above, without payload.
GRANT EXECUTE ON FUNCTION coord.signal(text, timestamptz, jsonb) TO coord_admin;
-- Reruns (issue 18): coord_admin only, like define_app; the history rows
-- reach coord_monitor through coord.runs (granted by the loop above).
GRANT EXECUTE ON FUNCTION coord.rerun(text, timestamptz, timestamptz, boolean) TO coord_admin;
-- Retention (issue 23): dropping a group or an election at once is the
-- administrator's (coord.tick drops them by itself once dead and old).
GRANT EXECUTE ON FUNCTION coord.drop_group(text), coord.drop_election(text) TO coord_admin;

-- ---------- pg_dump ----------
-- Tables and sequences that hold users' state are extension configuration:
-- pg_dump dumps their contents, so a dump and restore keeps queues, history,
-- requests, fences, schedules and apps (the sequences too, so that fencing
-- tokens and claim tokens stay larger than any issued before).  Locks and
-- session-bound claims live in the lock manager and end with their
-- sessions, as they would at a restart.  coord.tick_state is left out: its
-- one row comes with CREATE EXTENSION.
SELECT pg_catalog.pg_extension_config_dump('coord.job', '');
SELECT pg_catalog.pg_extension_config_dump('coord.job_history', '');
SELECT pg_catalog.pg_extension_config_dump('coord.job_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('coord.job_token_seq', '');
SELECT pg_catalog.pg_extension_config_dump('coord.fences', '');
SELECT pg_catalog.pg_extension_config_dump('coord.fence_seq', '');
SELECT pg_catalog.pg_extension_config_dump('coord.lock_names', '');
SELECT pg_catalog.pg_extension_config_dump('coord.request_keys', '');
SELECT pg_catalog.pg_extension_config_dump('coord.schedule_defs', '');
SELECT pg_catalog.pg_extension_config_dump('coord.app_defs', '');
SELECT pg_catalog.pg_extension_config_dump('coord.app_runs', '');
-- Flow control: limits and pauses are dumped; buckets and
-- running claims (sessions and leases of the old cluster) are not.
SELECT pg_catalog.pg_extension_config_dump('coord.job_limit', '');
SELECT pg_catalog.pg_extension_config_dump('coord.job_pause', '');
SELECT pg_catalog.pg_extension_config_dump('coord.app_run_history', '');
SELECT pg_catalog.pg_extension_config_dump('coord.app_reruns', '');
SELECT pg_catalog.pg_extension_config_dump('coord.app_alerts', '');
