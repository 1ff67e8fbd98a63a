
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
