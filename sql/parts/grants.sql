
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
                             'job_state', 'job_claimed', 'job_part', 'cron_next', 'claim_state',
                             'progress', 'cancel', 'await']),
      ('coord_monitor', ARRAY['job_state', 'request_state', 'cron_next', 'grid', 'await']),
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
                     ('{token,payload,result,last_error,progress}'::pg_catalog.name[])),
           pg_catalog.count(*) FILTER (WHERE a.attname OPERATOR(pg_catalog.=) ANY
                     ('{token,payload,result,last_error,progress}'::pg_catalog.name[]))
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
-- Durable steps (issue 27): for workers, acting only for the claims they
-- hold (the token, and the claimant as complete checks it); coord.job_steps
-- reaches coord_monitor through the loop above, without result.
GRANT EXECUTE ON FUNCTION coord.step(bigint, bigint, text), coord.step_done(bigint, bigint, text, jsonb)
  TO coord_worker;
-- One commit per job (issue 28): complete or fail and claim, for workers,
-- with the checks of complete, fail and claim.
GRANT EXECUTE ON FUNCTION coord.complete_and_claim(bigint, bigint, jsonb, integer, interval, boolean, text, text),
  coord.fail_and_claim(bigint, bigint, text, interval, boolean, integer, interval, boolean, text, text)
  TO coord_worker;
-- Workflows: a worker enqueues flows and reads its own claim's parents
-- (parent_results checks the claim, as heartbeat does).
GRANT EXECUTE ON FUNCTION coord.parent_results(bigint, bigint), coord.enqueue_flow(jsonb) TO coord_worker;
-- Batches (issue 27): producers are workers; seal_batch and enqueue into a
-- batch check themselves that the caller acts for the role that opened it
-- (or is coord_admin); coord.batches reaches coord_monitor through the loop
-- above.
GRANT EXECUTE ON FUNCTION coord.open_batch(text, jsonb, text), coord.seal_batch(bigint) TO coord_worker;
-- Job control (issue 27): cancel and await act only on the caller's own
-- jobs unless it is coord_admin (await: or coord_monitor), which the
-- functions check (42501); coord.my_jobs shows each reader only its own
-- jobs, so it is granted whole (the loop above gave coord_monitor its
-- columns without the withheld ones: it gets them for its own jobs here).
REVOKE SELECT ON coord.my_jobs FROM coord_monitor;
GRANT SELECT ON coord.my_jobs TO coord_worker, coord_monitor;
