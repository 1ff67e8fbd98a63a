
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
