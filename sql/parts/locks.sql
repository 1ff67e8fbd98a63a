
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
