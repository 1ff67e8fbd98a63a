
-- ---------- roles and privileges (least privilege) ----------
--
-- Three NOLOGIN roles, created if missing (roles belong to the cluster, not
-- to a database, so a second CREATE EXTENSION finds them there; DROP
-- EXTENSION leaves them):
--   coord_worker   claim, complete, fail, heartbeat, enqueue, locks, requests
--   coord_monitor  the views, and the functions they call
--   coord_admin    schedules, apps, tick, purge, cancel, retry; and both above
-- PUBLIC keeps USAGE on schema coord and nothing else: no function, no view.
-- Functions run their SQL as the extension owner (CoordBecomeOwner), so no
-- function is SECURITY DEFINER and no table is granted to anyone.
DO $roles$
DECLARE
  r text;
BEGIN
  FOREACH r IN ARRAY ARRAY['coord_worker', 'coord_monitor', 'coord_admin'] LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) r) THEN
      EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', r);
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
  FOR vw IN SELECT c.oid::pg_catalog.regclass FROM pg_catalog.pg_class AS c
            WHERE c.relnamespace OPERATOR(pg_catalog.=) 'coord'::pg_catalog.regnamespace
              AND c.relkind OPERATOR(pg_catalog.=) 'v'
  LOOP
    EXECUTE pg_catalog.format('GRANT SELECT ON %s TO coord_monitor', vw);
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
