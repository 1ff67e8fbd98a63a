-- Released with pg_coord 0.2.0 (2026-12-01) and frozen: never edit this file.
-- Later changes go into pg_coord--0.2.0--0.3.0.sql (sql/released.sha256).
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

CREATE FUNCTION coord.fence(path text)
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_fence'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.fence(text) IS
  'Fencing token for a path the caller holds exclusively: larger than every token issued before, durable at commit';

CREATE FUNCTION coord.fence_ok(path text, token bigint)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_fence_ok'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION coord.fence_ok(text, bigint) IS 'True iff token is the newest token issued for path';

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
-- Jobs: the queue (src/jobs.c)
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
    claimed_by   oid
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
    origin       text
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
                              max_attempts integer DEFAULT 25, group_key text DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_enqueue'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.enqueue(text, jsonb, timestamptz, integer, text, text, integer, text) IS
  'Adds a job and returns its id; with key, returns the id of the live job with that key instead of adding one';

CREATE FUNCTION coord.enqueue_many(queue text, payloads jsonb[], run_at timestamptz DEFAULT NULL,
                                   priority integer DEFAULT 0, host text DEFAULT NULL,
                                   max_attempts integer DEFAULT 25)
RETURNS SETOF bigint AS 'MODULE_PATHNAME', 'coord_enqueue_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
COMMENT ON FUNCTION coord.enqueue_many(text, jsonb[], timestamptz, integer, text, integer) IS
  'Adds one job per payload; returns their ids in array order';

CREATE FUNCTION coord.claim(queue text, n integer DEFAULT 1, lease interval DEFAULT '5 minutes',
                            host text DEFAULT NULL, session_bound boolean DEFAULT false,
                            "partition" integer DEFAULT NULL, partitions integer DEFAULT NULL)
RETURNS SETOF coord.claimed_job AS 'MODULE_PATHNAME', 'coord_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 10;
COMMENT ON FUNCTION coord.claim(text, integer, interval, text, boolean, integer, integer) IS
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
CREATE FUNCTION coord.claim_free(id bigint, queue text, group_key text, row_xmax xid)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_claim_free'
LANGUAGE C VOLATILE PARALLEL UNSAFE COST 10;
COMMENT ON FUNCTION coord.claim_free(bigint, text, text, xid) IS
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

CREATE FUNCTION coord.fail(id bigint, token bigint, error text DEFAULT NULL, retry_after interval DEFAULT NULL)
RETURNS text AS 'MODULE_PATHNAME', 'coord_fail'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.fail(bigint, bigint, text, interval) IS
  'Fails a claimed job: scheduled again with backoff, or dead after max_attempts; retry_after sets the delay and uses up no attempt. NULL when the claim is not the caller''s';

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
       j.claimed_by::pg_catalog.regrole AS claimed_by
  FROM coord.job AS j
UNION ALL
SELECT h.id, h.queue, h.state, h.payload, h.run_at, h.priority, h.key, h.group_key, h.host,
       h.attempt, h.max_attempts, NULL::timestamptz, h.last_error, h.token, h.enqueued_at,
       h.claimed_at, h.finished_at, h.result, h.origin, NULL::pg_catalog.regrole
  FROM coord.job_history AS h;
COMMENT ON VIEW coord.jobs IS
  'Every live job and every finished job still in the history; token, payload, result and last_error for coord_admin only';

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
queues AS (
  SELECT queue FROM live_stats UNION SELECT queue FROM dead UNION SELECT queue FROM done)
SELECT q.queue,
       COALESCE(l.ready, 0) AS ready, COALESCE(l.scheduled, 0) AS scheduled,
       COALESCE(l.running, 0) AS running, COALESCE(d.dead, 0) AS dead,
       COALESCE(r.done_last_hour, 0) AS done_last_hour,
       pg_catalog.now() OPERATOR(pg_catalog.-) l.oldest_ready AS oldest_ready_age
  FROM queues AS q
  LEFT JOIN live_stats AS l ON l.queue OPERATOR(pg_catalog.=) q.queue
  LEFT JOIN dead AS d ON d.queue OPERATOR(pg_catalog.=) q.queue
  LEFT JOIN done AS r ON r.queue OPERATOR(pg_catalog.=) q.queue;
COMMENT ON VIEW coord.queue_stats IS
  'Per queue: ready, scheduled, running, dead, done in the last hour, age of the oldest ready job';

-- ---------- schedules (DESIGN.md 3.4) and coord.tick ----------

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
                               fixed_rate boolean DEFAULT false, host text DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_schedule'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.schedule(text, text, interval, text, jsonb, timestamptz, boolean, text) IS
  'Creates or replaces a recurring event (every interval, or a 5-field cron expression in UTC); at most one instance is outstanding';

CREATE FUNCTION coord.unschedule(name text)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_unschedule'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.unschedule(text) IS
  'Drops a schedule and its unclaimed instance; a running instance finishes and is not followed';

CREATE FUNCTION coord.cron_next(cron text, after timestamptz DEFAULT pg_catalog.now())
RETURNS timestamptz AS 'MODULE_PATHNAME', 'coord_cron_next_sql'
LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION coord.cron_next(text, timestamptz) IS
  'The first fire time (UTC) of a 5-field cron expression strictly after after; NULL if it never fires';

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
       j.id AS job_id, s.payload, s.host, s.starts_at, s.last_error
  FROM coord.schedule_defs AS s
  LEFT JOIN coord.job AS j
    ON j.origin OPERATOR(pg_catalog.=) ('s:' OPERATOR(pg_catalog.||) s.name);
COMMENT ON VIEW coord.schedules IS
  'Schedules: next and last run, how the last one ended, and whether an instance is running now';

-- ---------- apps: period-keyed dependency scheduling (DESIGN.md 3.5) ----------

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
    updated_at   timestamptz NOT NULL DEFAULT pg_catalog.now()
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
  'One row per (app, period) that has a run, created once: live while its job (origin a:<app>:<YYYY-MM-DD-HH24MI>) is, then done, dead or cancelled';
COMMENT ON COLUMN coord.app_runs.claim_token IS 'The claim of the run''s job that a tick last saw (runs with a timeout)';
COMMENT ON COLUMN coord.app_runs.claim_seen_at IS 'The tick time at which that claim was first seen';
REVOKE ALL ON coord.app_runs FROM PUBLIC;
CREATE INDEX app_runs_live ON coord.app_runs (app, period_start)
  WHERE state OPERATOR(pg_catalog.=) 'live';
COMMENT ON INDEX coord.app_runs_live IS 'Unfinished runs: timeouts, catch-up limits, repairs';

CREATE FUNCTION coord.define_app(name text, starts text DEFAULT NULL, depends jsonb DEFAULT '{}',
                                 timeout interval DEFAULT NULL, host text DEFAULT NULL,
                                 queue text DEFAULT 'apps', catchup_from timestamptz DEFAULT NULL,
                                 conf jsonb DEFAULT '{}')
RETURNS void AS 'MODULE_PATHNAME', 'coord_define_app'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.define_app(text, text, jsonb, interval, text, text, timestamptz, jsonb) IS
  'Creates or replaces an app: runs per hourly/daily/weekly/monthly/yearly period (UTC), created when the period starts or when the runs it depends on are done';

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
                             'job_state', 'job_claimed', 'job_part', 'cron_next']),
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
