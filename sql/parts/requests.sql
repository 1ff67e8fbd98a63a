
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
