-- Catalogue hygiene for every concern: comments, volatility, parallel safety, grants.
-- Every object of the extension has a comment; writers are volatile and parallel unsafe.
SELECT pg_describe_object(classid, objid, objsubid) AS uncommented
  FROM pg_depend d
 WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_coord')
   AND obj_description(objid, (SELECT relname FROM pg_class WHERE oid = classid)) IS NULL
   -- from 17 a table's row type and array types are members too: made by the server, not by us
   AND NOT EXISTS (SELECT FROM pg_type t WHERE d.classid = 'pg_type'::regclass AND t.oid = d.objid
                    AND (t.typsubscript = 'array_subscript_handler'::regproc
                         OR (SELECT relkind FROM pg_class WHERE oid = t.typrelid) <> 'c'))
 ORDER BY 1;
SELECT proname, provolatile, proparallel FROM pg_proc
 WHERE pronamespace = 'coord'::regnamespace AND (provolatile <> 'v' OR proparallel <> 'u')
 ORDER BY proname;

-- Tables are the functions' business: no privileges for PUBLIC.
SELECT c.relname, a.privilege_type
  FROM pg_class c, aclexplode(c.relacl) a
 WHERE c.relnamespace = 'coord'::regnamespace AND c.relkind IN ('r', 'S')
   AND a.grantee = 0
 ORDER BY 1, 2;
-- Views are readable by coord_monitor, not by PUBLIC.
SELECT c.relname, a.privilege_type
  FROM pg_class c, aclexplode(c.relacl) a
 WHERE c.relnamespace = 'coord'::regnamespace AND c.relkind = 'v' AND a.grantee = 0
 ORDER BY 1, 2;

-- The monitoring views work for a member of coord_monitor with nothing else,
-- holder details included (read from backend status, not pg_stat_activity).
CREATE ROLE regress_coord_monitor IN ROLE coord_monitor;
SELECT coord.lock('/catalog/held'), coord.request('catalog-key');
SET ROLE regress_coord_monitor;
SELECT path, mode, granted, pid = pg_backend_pid() AS mine, backend_start IS NOT NULL AS has_start
  FROM coord.locks WHERE path LIKE '/catalog%' ORDER BY path;
SELECT key, state, owner_pid = pg_backend_pid() AS mine, owner_alive, waiters
  FROM coord.requests WHERE key = 'catalog-key';
SELECT count(*) >= 0 AS jobs_readable FROM coord.jobs;
SELECT count(*) >= 0 AS stats_readable FROM coord.queue_stats;
SELECT count(*) FROM coord.request_keys;
RESET ROLE;
SELECT coord.unlock('/catalog/held'), coord.release('catalog-key');
DROP ROLE regress_coord_monitor;
