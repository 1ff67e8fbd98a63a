-- pg_coord 0.1.0 as released (locks, requests, jobs): kept so that an
-- installation can be created at 0.1.0 and updated (ALTER EXTENSION ... UPDATE).
-- Do not edit: later versions change sql/parts and add update scripts.
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
GRANT SELECT ON coord.locks TO PUBLIC;

-- Forgets registered names no session holds or awaits now.
CREATE FUNCTION coord.purge_lock_names()
RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
  WITH gone AS (
    DELETE FROM coord.lock_names AS n
     WHERE NOT EXISTS (SELECT 1 FROM coord.lock_status() AS s
                        WHERE s.key OPERATOR(pg_catalog.=) n.key)
    RETURNING 1)
  SELECT pg_catalog.count(*) FROM gone
$$;
COMMENT ON FUNCTION coord.purge_lock_names() IS
  'Deletes registry rows of paths no session holds or awaits now; returns how many';
REVOKE ALL ON FUNCTION coord.purge_lock_names() FROM PUBLIC;

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
GRANT SELECT ON coord.requests TO PUBLIC;

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

-- Live work only: scheduled, ready and running jobs.  A session-bound claim
-- keeps state = 'ready' and holds an advisory lock on the id (namespace
-- 17204) instead, so a dead worker's job is claimable again at once.
CREATE TABLE coord.job (
    id           bigint PRIMARY KEY DEFAULT pg_catalog.nextval('coord.job_id_seq'::pg_catalog.regclass),
    queue        text NOT NULL,
    state        text NOT NULL DEFAULT 'ready'
                 CHECK (state OPERATOR(pg_catalog.=) ANY (ARRAY['ready', 'running'])),
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
    part         integer GENERATED ALWAYS AS (coord.job_part(key, id)) STORED
) WITH (fillfactor = 70);
COMMENT ON TABLE coord.job IS
  'Live jobs (scheduled, ready, running); finished ones move to coord.job_history';
REVOKE ALL ON coord.job FROM PUBLIC;
CREATE INDEX job_ready ON coord.job (queue, priority DESC, run_at, id)
  WHERE state OPERATOR(pg_catalog.=) 'ready';
COMMENT ON INDEX coord.job_ready IS 'The claim order: highest priority, then oldest run_at';
CREATE UNIQUE INDEX job_key ON coord.job (queue, key) WHERE key IS NOT NULL;
COMMENT ON INDEX coord.job_key IS 'At most one live job per (queue, key): enqueue dedupe';
CREATE INDEX job_group ON coord.job (queue, group_key, id) WHERE group_key IS NOT NULL;
COMMENT ON INDEX coord.job_group IS 'One job of a group at a time, in enqueue order';
CREATE INDEX job_lease ON coord.job (queue, lease_until) WHERE state OPERATOR(pg_catalog.=) 'running';
COMMENT ON INDEX coord.job_lease IS 'Finds expired leases';

CREATE TABLE coord.job_history (
    id           bigint PRIMARY KEY,
    queue        text NOT NULL,
    state        text NOT NULL
                 CHECK (state OPERATOR(pg_catalog.=) ANY (ARRAY['done', 'dead', 'cancelled'])),
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
    request_key  text
);
COMMENT ON TABLE coord.job_history IS
  'Finished jobs (done, dead, cancelled), kept for coord.job_history_retention';
REVOKE ALL ON coord.job_history FROM PUBLIC;
CREATE INDEX job_history_finished ON coord.job_history (finished_at);
COMMENT ON INDEX coord.job_history_finished IS 'Retention and recent-history queries';
CREATE INDEX job_history_queue ON coord.job_history (queue, state, finished_at);
COMMENT ON INDEX coord.job_history_queue IS 'Per-queue statistics';

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

CREATE FUNCTION coord.complete(id bigint, token bigint, result jsonb DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_complete'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.complete(bigint, bigint, jsonb) IS
  'Marks a claimed job done; false, and no change, when the claim is no longer the caller''s';

CREATE FUNCTION coord.complete(ids bigint[], tokens bigint[])
RETURNS integer AS 'MODULE_PATHNAME', 'coord_complete_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.complete(bigint[], bigint[]) IS
  'Marks claimed jobs done; returns how many were still the caller''s';

CREATE FUNCTION coord.fail(id bigint, token bigint, error text DEFAULT NULL, retry_after interval DEFAULT NULL)
RETURNS text AS 'MODULE_PATHNAME', 'coord_fail'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.fail(bigint, bigint, text, interval) IS
  'Fails a claimed job: scheduled again with backoff, or dead after max_attempts; retry_after sets the delay and uses up no attempt. NULL when the claim is not the caller''s';

CREATE FUNCTION coord.heartbeat(id bigint, token bigint, lease interval DEFAULT NULL)
RETURNS timestamptz AS 'MODULE_PATHNAME', 'coord_heartbeat'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.heartbeat(bigint, bigint, interval) IS
  'Extends a lease; returns the new lease end (infinity for a session-bound claim), NULL if the claim is not the caller''s';

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

CREATE VIEW coord.jobs AS
SELECT j.id, j.queue,
       CASE WHEN j.state OPERATOR(pg_catalog.=) 'running' OR coord.job_claimed(j.id) THEN 'running'
            WHEN j.run_at OPERATOR(pg_catalog.>) pg_catalog.now() THEN 'scheduled'
            ELSE 'ready' END AS state,
       j.payload, j.run_at, j.priority, j.key, j.group_key, j.host, j.attempt, j.max_attempts,
       j.lease_until, j.last_error, j.token, j.enqueued_at, j.claimed_at,
       NULL::timestamptz AS finished_at, NULL::jsonb AS result
  FROM coord.job AS j
UNION ALL
SELECT h.id, h.queue, h.state, h.payload, h.run_at, h.priority, h.key, h.group_key, h.host,
       h.attempt, h.max_attempts, NULL::timestamptz, h.last_error, h.token, h.enqueued_at,
       h.claimed_at, h.finished_at, h.result
  FROM coord.job_history AS h;
COMMENT ON VIEW coord.jobs IS 'Every live job and every finished job still in the history';
GRANT SELECT ON coord.jobs TO PUBLIC;

CREATE VIEW coord.queue_stats AS
WITH live AS (
  SELECT j.queue,
         pg_catalog.count(*) FILTER (WHERE j.state OPERATOR(pg_catalog.=) 'ready'
             AND j.run_at OPERATOR(pg_catalog.<=) pg_catalog.now() AND NOT coord.job_claimed(j.id)) AS ready,
         pg_catalog.count(*) FILTER (WHERE j.state OPERATOR(pg_catalog.=) 'ready'
             AND j.run_at OPERATOR(pg_catalog.>) pg_catalog.now() AND NOT coord.job_claimed(j.id)) AS scheduled,
         pg_catalog.count(*) FILTER (WHERE j.state OPERATOR(pg_catalog.=) 'running' OR coord.job_claimed(j.id)) AS running,
         pg_catalog.min(j.run_at) FILTER (WHERE j.state OPERATOR(pg_catalog.=) 'ready'
             AND j.run_at OPERATOR(pg_catalog.<=) pg_catalog.now() AND NOT coord.job_claimed(j.id)) AS oldest_ready
    FROM coord.job AS j GROUP BY j.queue),
hist AS (
  SELECT h.queue,
         pg_catalog.count(*) FILTER (WHERE h.state OPERATOR(pg_catalog.=) 'dead') AS dead,
         pg_catalog.count(*) FILTER (WHERE h.state OPERATOR(pg_catalog.=) 'done'
             AND h.finished_at OPERATOR(pg_catalog.>) (pg_catalog.now() OPERATOR(pg_catalog.-) '1 hour'::interval)) AS done_last_hour
    FROM coord.job_history AS h GROUP BY h.queue)
SELECT COALESCE(l.queue, h.queue) AS queue,
       COALESCE(l.ready, 0) AS ready, COALESCE(l.scheduled, 0) AS scheduled,
       COALESCE(l.running, 0) AS running, COALESCE(h.dead, 0) AS dead,
       COALESCE(h.done_last_hour, 0) AS done_last_hour,
       pg_catalog.now() OPERATOR(pg_catalog.-) l.oldest_ready AS oldest_ready_age
  FROM live AS l FULL JOIN hist AS h ON h.queue OPERATOR(pg_catalog.=) l.queue;
COMMENT ON VIEW coord.queue_stats IS
  'Per queue: ready, scheduled, running, dead, done in the last hour, age of the oldest ready job';
GRANT SELECT ON coord.queue_stats TO PUBLIC;
