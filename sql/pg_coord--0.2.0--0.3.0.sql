-- pg_coord 0.2.0 -> 0.3.0: written by hand.  Every change to the catalog
-- after the 0.2.0 release goes here and into the fragments under sql/parts/
-- (which build the 0.3.0 install script); test/upgrade/upgrade_and_dump.sh
-- checks that an updated catalog matches a fresh 0.3.0 install object for
-- object.  Frozen once 0.3.0 is released.

\echo Use "ALTER EXTENSION pg_coord UPDATE TO '0.3.0'" to load this file. \quit

-- The 0.3.0 library checks the catalog's version before it serves a
-- database, so the update also moves the version.

-- ---------- leader election (sql/parts/election.sql) ----------
CREATE SEQUENCE coord.election_term_seq AS bigint;
COMMENT ON SEQUENCE coord.election_term_seq IS 'Source of the terms of every election';
REVOKE ALL ON coord.election_term_seq FROM PUBLIC;

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

REVOKE ALL ON FUNCTION coord.campaign(text, text, interval), coord.resign(text), coord.leader(text)
  FROM PUBLIC;
GRANT EXECUTE ON FUNCTION coord.campaign(text, text, interval), coord.resign(text),
  coord.leader(text) TO coord_worker;
GRANT EXECUTE ON FUNCTION coord.leader(text) TO coord_monitor;

SELECT pg_catalog.pg_extension_config_dump('coord.elections', '');
SELECT pg_catalog.pg_extension_config_dump('coord.election_term_seq', '');

-- ---------- coord.lock_all and lease locks (issue 16) ----------
CREATE FUNCTION coord.lock_all(paths text[], timeout interval DEFAULT NULL, shared boolean DEFAULT false)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_lock_all'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.lock_all(text[], interval, boolean) IS
  'Session locks on every path or on none (false) within timeout, taken in one canonical order; each distinct path needs one coord.unlock';

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

SELECT pg_catalog.pg_extension_config_dump('coord.lease', '');

REVOKE ALL ON FUNCTION coord.lock_all(text[], interval, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION coord.lease_lock(text, interval, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION coord.renew(text, bigint, interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION coord.lease_unlock(text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION coord.lock_all(text[], interval, boolean) TO coord_worker;
GRANT EXECUTE ON FUNCTION coord.lease_lock(text, interval, text) TO coord_worker;
GRANT EXECUTE ON FUNCTION coord.renew(text, bigint, interval) TO coord_worker;
GRANT EXECUTE ON FUNCTION coord.lease_unlock(text, bigint) TO coord_worker;
GRANT SELECT ON coord.leases TO coord_admin;
GRANT SELECT (path, holder, taken_at, expires_at, live) ON coord.leases TO coord_monitor;
