-- Released with pg_coord 0.2.0 (2026-12-01) and frozen: never edit this file.
-- Later changes go into pg_coord--0.2.0--0.3.0.sql (sql/released.sha256).
-- pg_coord 0.1.0 -> 0.2.0, part 1: the job tables.  The rest of the update
-- script is made (by the Makefile) from the fragments that define the new
-- objects: jobs_views.sql, schedules.sql, apps.sql and grants.sql.
--
-- Claims no longer move a row between states: a lease claim sets
-- lease_until, a session-bound claim holds a lock, and "running" is derived.
-- A job a lease claim holds keeps its lease_until; a session-bound job stays
-- claimed by its session's lock.  The generated partition column is gone
-- (the claim computes it), jobs gain an origin (schedules, app runs), and the
-- history keeps one btree and no CHECK on state.  Claims are one statement
-- (coord.claim_take), over a claim index that leads with a hash of the queue.

\echo Use "ALTER EXTENSION pg_coord UPDATE TO '0.2.0'" to load this file. \quit

-- purge_lock_names runs through the owner switch (a SQL function ran as
-- its caller, and coord_admin has no rights on coord.lock_names)
DROP FUNCTION coord.purge_lock_names();
CREATE FUNCTION coord.purge_lock_names()
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_purge_lock_names'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.purge_lock_names() IS
  'Deletes registry rows of paths no session holds or awaits now; returns how many';

DROP VIEW coord.queue_stats;
DROP VIEW coord.jobs;

DROP INDEX coord.job_lease;
DROP INDEX coord.job_ready;
ALTER TABLE coord.job DROP COLUMN part;
-- a running lease claim is told apart by its lease_until from now on
UPDATE coord.job SET lease_until = pg_catalog.now()
 WHERE state OPERATOR(pg_catalog.=) 'running' AND lease_until IS NULL;
ALTER TABLE coord.job DROP COLUMN state;
ALTER TABLE coord.job ADD COLUMN origin text;
-- claims record their role from now on; a lease claim made before the
-- update has none, so only coord_admin can finish it (or its lease runs out)
ALTER TABLE coord.job ADD COLUMN claimed_by oid;
COMMENT ON COLUMN coord.job.claimed_by IS
  'The role that made the last claim: only it (or coord_admin) may complete, fail or heartbeat a lease claim';
CREATE INDEX job_ready ON coord.job (pg_catalog.hashtextextended(queue, 0), priority DESC, run_at, id);
COMMENT ON INDEX coord.job_ready IS 'The claim order within a queue: highest priority, then oldest run_at';
CREATE UNIQUE INDEX job_origin ON coord.job (origin) WHERE origin IS NOT NULL;
COMMENT ON INDEX coord.job_origin IS
  'At most one live job per origin: the instance of a schedule (s:<name>), the run of an app for a period (a:<app>:<period>)';
COMMENT ON TABLE coord.job IS
  'Live jobs (scheduled, ready, running); finished ones move to coord.job_history';
-- keys dedupe jobs without an origin only: app runs' keys are their own
DROP INDEX coord.job_key;
CREATE UNIQUE INDEX job_key ON coord.job (queue, key) WHERE key IS NOT NULL AND origin IS NULL;
COMMENT ON INDEX coord.job_key IS
  'At most one live job per (queue, key) among jobs without an origin: enqueue dedupe';

ALTER TABLE coord.job_history ADD COLUMN origin text;
ALTER TABLE coord.job_history DROP CONSTRAINT job_history_state_check;
COMMENT ON COLUMN coord.job_history.state IS 'done, dead or cancelled';
DROP INDEX coord.job_history_finished;
DROP INDEX coord.job_history_queue;
CREATE INDEX job_history_finished ON coord.job_history USING brin (finished_at);
COMMENT ON INDEX coord.job_history_finished IS 'Retention and recent-history queries';
CREATE INDEX job_history_failed ON coord.job_history (queue, finished_at)
  WHERE state OPERATOR(pg_catalog.<>) 'done';
COMMENT ON INDEX coord.job_history_failed IS 'Dead and cancelled jobs per queue';

-- Claims are one statement, which calls this for each row it has locked.
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

-- The batch complete is no longer an overload of coord.complete: drivers
-- that send untyped parameters (node-postgres) found coord.complete($1, $2)
-- ambiguous.
DROP FUNCTION coord.complete(bigint[], bigint[]);
CREATE FUNCTION coord.complete_many(ids bigint[], tokens bigint[])
RETURNS integer AS 'MODULE_PATHNAME', 'coord_complete_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.complete_many(bigint[], bigint[]) IS
  'Marks claimed jobs done (ids[i] with tokens[i]); returns how many were still the caller''s';

-- A session-bound claim's heartbeat answers a far-future instant drivers can
-- read, no longer infinity.
COMMENT ON FUNCTION coord.heartbeat(bigint, bigint, interval) IS
  'Extends a lease; returns the new lease end (9999-01-01 00:00:00+00 for a session-bound claim), NULL if the claim is not the caller''s';

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
