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

-- ===== partition groups (issue 16, section 1) =====

-- ---------- partition groups (README.md, Partition groups) ----------
-- A group divides segments 0 .. segments-1 among its live members in
-- proportion to their weights (src/partitions_assign.c).  Membership is
-- session-bound: a member row counts while the backend it names is alive,
-- and the member also holds a session lock (namespace 17208) on its name,
-- so two sessions never join under one name.  A segment belongs to the
-- session its row names while that session is alive; it changes hands only
-- when that owner lets it go or is gone (src/partitions.c).
CREATE TABLE coord.partition_groups (
    partition_group text PRIMARY KEY,
    segments        integer NOT NULL CHECK (segments BETWEEN 1 AND 65536),
    assignor        text NOT NULL CHECK (assignor IN ('sticky', 'range')),
    created_at      timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE coord.partition_groups IS
  'Partition groups: their segment count and assignor, fixed at the first join';
REVOKE ALL ON coord.partition_groups FROM PUBLIC;

CREATE TABLE coord.partition_members (
    partition_group text NOT NULL REFERENCES coord.partition_groups ON DELETE CASCADE,
    member          text NOT NULL,
    weight          real NOT NULL CHECK (weight > 0),
    meta            jsonb NOT NULL,
    pid             integer NOT NULL,
    backend_start   timestamptz NOT NULL,
    joined_at       timestamptz NOT NULL,
    PRIMARY KEY (partition_group, member)
);
COMMENT ON TABLE coord.partition_members IS
  'Members of partition groups: a row counts while the backend (pid, backend_start) is alive; others are deleted lazily';
REVOKE ALL ON coord.partition_members FROM PUBLIC;

CREATE TABLE coord.partition_segments (
    partition_group text NOT NULL REFERENCES coord.partition_groups ON DELETE CASCADE,
    segment         integer NOT NULL,
    owner_pid       integer,
    owner_start     timestamptz,
    token           bigint NOT NULL,
    taken_at        timestamptz NOT NULL,
    PRIMARY KEY (partition_group, segment)
);
COMMENT ON TABLE coord.partition_segments IS
  'Segment owners: a segment is its owner''s while that backend is alive; every acquisition takes a new, larger token (a fencing token)';
REVOKE ALL ON coord.partition_segments FROM PUBLIC;

-- Segment tokens come from a sequence, which a rollback does not turn back:
-- a token an aborted acquisition handed out is never handed out again.
CREATE SEQUENCE coord.segment_token_seq AS bigint;
COMMENT ON SEQUENCE coord.segment_token_seq IS 'Source of the fencing tokens of every partition segment';
REVOKE ALL ON coord.segment_token_seq FROM PUBLIC;

CREATE FUNCTION coord.join(partition_group text, member text, weight real DEFAULT 1,
                           meta jsonb DEFAULT '{}', segments integer DEFAULT NULL,
                           assignor text DEFAULT NULL)
RETURNS integer[] AS 'MODULE_PATHNAME', 'coord_join'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.join(text, text, real, jsonb, integer, text) IS
  'Joins a partition group as member (or updates this session''s weight and meta); returns the segments this session owns now. segments (1024) and assignor (sticky) fix the group at its first join; NULL keeps the group''s';

CREATE FUNCTION coord.leave(partition_group text)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_leave'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.leave(text) IS
  'Leaves a partition group and gives this session''s segments up now; false when it was no member';

CREATE FUNCTION coord.owned(partition_group text)
RETURNS integer[] AS 'MODULE_PATHNAME', 'coord_owned'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.owned(text) IS
  'The segments this session owns now, after taking any that became free and letting go of any that moved away';

CREATE FUNCTION coord.segment_of(partition_group text, key text)
RETURNS integer AS 'MODULE_PATHNAME', 'coord_segment_of'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION coord.segment_of(text, text) IS
  'The segment of a key in a partition group: coord.job_part(key, NULL) modulo the group''s segments';

CREATE FUNCTION coord.segment_token(partition_group text, segment integer)
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_segment_token'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION coord.segment_token(text, integer) IS
  'The fencing token this session got when it took segment; NULL when it does not own it';

CREATE VIEW coord.members AS
SELECT m.partition_group, m.member, m.weight, m.meta, m.alive, m.pid, m.joined_at,
       CASE WHEN m.alive THEN m.owned ELSE 0 END AS owned,
       CASE WHEN m.alive THEN m.weight::pg_catalog.float8 OPERATOR(pg_catalog./)
            pg_catalog.sum(m.weight::pg_catalog.float8) FILTER (WHERE m.alive)
              OVER (PARTITION BY m.partition_group) END AS target_share,
       CASE WHEN m.alive THEN m.owned ELSE 0 END::pg_catalog.float8 OPERATOR(pg_catalog./)
         g.segments::pg_catalog.float8 AS owned_share
  FROM (SELECT p.*, coord.backend_alive(p.pid, p.backend_start) AS alive,
               (SELECT pg_catalog.count(*)::integer FROM coord.partition_segments AS s
                 WHERE s.partition_group OPERATOR(pg_catalog.=) p.partition_group
                   AND s.owner_pid OPERATOR(pg_catalog.=) p.pid
                   AND s.owner_start OPERATOR(pg_catalog.=) p.backend_start) AS owned
          FROM coord.partition_members AS p) AS m
  JOIN coord.partition_groups AS g ON g.partition_group OPERATOR(pg_catalog.=) m.partition_group;
COMMENT ON VIEW coord.members IS
  'Members of partition groups: weight, meta, liveness, segments owned, target share (of the live weight) and owned share';

-- Groups and segment rows are dumped: a restored group keeps its segment
-- count, and its tokens stay larger than any issued before.  Members and
-- owners are sessions: after a restore no owner is alive.
SELECT pg_catalog.pg_extension_config_dump('coord.partition_groups', '');
SELECT pg_catalog.pg_extension_config_dump('coord.partition_segments', '');
SELECT pg_catalog.pg_extension_config_dump('coord.segment_token_seq', '');

REVOKE ALL ON FUNCTION coord.join(text, text, real, jsonb, integer, text), coord.leave(text),
  coord.owned(text), coord.segment_of(text, text), coord.segment_token(text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION coord.join(text, text, real, jsonb, integer, text), coord.leave(text),
  coord.owned(text), coord.segment_of(text, text), coord.segment_token(text, integer) TO coord_worker;
GRANT SELECT ON coord.members TO coord_admin, coord_monitor;

-- coord.claim gains partition_group (last, DEFAULT NULL: every call that
-- worked keeps working); its grant and comment as before
DROP FUNCTION coord.claim(text, integer, interval, text, boolean, integer, integer);
CREATE FUNCTION coord.claim(queue text, n integer DEFAULT 1, lease interval DEFAULT '5 minutes',
                            host text DEFAULT NULL, session_bound boolean DEFAULT false,
                            "partition" integer DEFAULT NULL, partitions integer DEFAULT NULL,
                            partition_group text DEFAULT NULL)
RETURNS SETOF coord.claimed_job AS 'MODULE_PATHNAME', 'coord_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 10;
COMMENT ON FUNCTION coord.claim(text, integer, interval, text, boolean, integer, integer, text) IS
  'Claims up to n due jobs, highest priority first, then oldest run_at; never one another claimer holds';
REVOKE ALL ON FUNCTION coord.claim(text, integer, interval, text, boolean, integer, integer, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION coord.claim(text, integer, interval, text, boolean, integer, integer, text) TO coord_worker;

-- ---------- semaphores (src/semaphores.c) ----------
-- Labels of permits: who took each one last, with what size, since when.
-- The lock table says who holds a permit; a label counts only while it
-- names a live holder of that permit (coord.semaphores), so it needs no
-- cleaning and is not logged.
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
REVOKE ALL ON FUNCTION coord.acquire_permit(text, integer, interval, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION coord.release_permit(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION coord.permit_status(boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION coord.acquire_permit(text, integer, interval, boolean) TO coord_worker;
GRANT EXECUTE ON FUNCTION coord.release_permit(text) TO coord_worker;
GRANT EXECUTE ON FUNCTION coord.permit_status(boolean) TO coord_monitor;
GRANT SELECT ON coord.semaphores TO coord_admin;
GRANT SELECT ON coord.semaphores TO coord_monitor;

-- ---------- apps in a time zone, and their deadline (issue 18; sql/parts/apps.sql) ----------
-- coord.define_app gains tz and deadline as new last arguments with
-- DEFAULTs: the old signature is dropped and recreated, so calls written
-- for 0.2.0 (positional or named) mean what they meant, UTC and no
-- deadline.  Stored apps get tz 'UTC': their periods, run keys and job
-- origins stay exactly as they were.
ALTER TABLE coord.app_defs ADD COLUMN tz text NOT NULL DEFAULT 'UTC';
ALTER TABLE coord.app_defs ADD COLUMN deadline interval;
COMMENT ON COLUMN coord.app_defs.tz IS
  'Time zone whose local calendar periods the app runs for (PostgreSQL''s name for it); UTC by default';
COMMENT ON COLUMN coord.app_defs.deadline IS
  'How long after its period ends a run may be unfinished before it is late; stored only (alerts are future work)';
COMMENT ON TABLE coord.app_runs IS
  'One row per (app, period) that has a run, created once: live while its job (origin a:<app>:<YYYY-MM-DD-HH24MI>, with the UTC offset after it in a zone other than UTC) is, then done, dead or cancelled';

DROP FUNCTION coord.define_app(text, text, jsonb, interval, text, text, timestamptz, jsonb);
CREATE FUNCTION coord.define_app(name text, starts text DEFAULT NULL, depends jsonb DEFAULT '{}',
                                 timeout interval DEFAULT NULL, host text DEFAULT NULL,
                                 queue text DEFAULT 'apps', catchup_from timestamptz DEFAULT NULL,
                                 conf jsonb DEFAULT '{}', tz text DEFAULT 'UTC',
                                 deadline interval DEFAULT NULL)
RETURNS void AS 'MODULE_PATHNAME', 'coord_define_app'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.define_app(text, text, jsonb, interval, text, text, timestamptz, jsonb, text, interval) IS
  'Creates or replaces an app: runs per hourly/daily/weekly/monthly/yearly local period of tz (a local day has 23, 24 or 25 hours), created when the period starts or when the runs it depends on are done; deadline is stored (its alerts are future work); changing tz of an app with runs is refused';
REVOKE ALL ON FUNCTION coord.define_app(text, text, jsonb, interval, text, text, timestamptz, jsonb, text, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION coord.define_app(text, text, jsonb, interval, text, text, timestamptz, jsonb, text, interval)
  TO coord_admin;

-- ---------- apps' alerts: deadlines, dead runs, timeouts (issue 18; sql/parts/apps.sql) ----------
-- New objects only; the comments of the deadline column and of define_app
-- say what deadline does now.

CREATE TABLE coord.app_alerts (
    app          text NOT NULL,
    period_start timestamptz NOT NULL,
    kind         text NOT NULL
                 CHECK (kind OPERATOR(pg_catalog.=) ANY (ARRAY['deadline', 'dead', 'timeout'])),
    raised_at    timestamptz NOT NULL,
    cleared_at   timestamptz,
    detail       text NOT NULL,
    events       integer NOT NULL DEFAULT 1,
    PRIMARY KEY (app, period_start, kind, raised_at)
);
COMMENT ON TABLE coord.app_alerts IS
  'Alerts of app runs: deadline (unfinished that long after its period ended), dead (died after its last attempt), timeout (its claim revoked by its timeout); open until cleared_at';
COMMENT ON COLUMN coord.app_alerts.raised_at IS
  'The now of the coord.tick that raised it (deadline, timeout), or when the run died (dead)';
COMMENT ON COLUMN coord.app_alerts.cleared_at IS
  'When the run finished (deadline, timeout: done, dead or cancelled; dead: done after a retry or a rerun); NULL while open';
COMMENT ON COLUMN coord.app_alerts.events IS
  'How many times it happened while open (timeouts of the same run)';
REVOKE ALL ON coord.app_alerts FROM PUBLIC;
CREATE UNIQUE INDEX app_alerts_open ON coord.app_alerts (app, period_start, kind)
  WHERE cleared_at IS NULL;
COMMENT ON INDEX coord.app_alerts_open IS 'At most one open alert of each kind per run, whatever the number of ticks';
CREATE INDEX app_alerts_cleared ON coord.app_alerts (cleared_at)
  WHERE cleared_at IS NOT NULL;
COMMENT ON INDEX coord.app_alerts_cleared IS 'Retention of cleared alerts (coord.job_history_retention, by coord.tick)';

CREATE VIEW coord.alerts AS
SELECT a.app, a.period_start, a.kind, a.raised_at, a.cleared_at, a.detail, a.events
  FROM coord.app_alerts AS a;
COMMENT ON VIEW coord.alerts IS
  'Alerts of app runs (deadline, dead, timeout), open while cleared_at is NULL; a NOTIFY on "coord:alerts" (payload {"app", "period_start", "kind"}) at the commit that raises one';
COMMENT ON COLUMN coord.app_defs.deadline IS
  'How long after its period ends a run may be unfinished before it is late: coord.tick then raises a deadline alert (coord.alerts)';
COMMENT ON FUNCTION coord.define_app(text, text, jsonb, interval, text, text, timestamptz, jsonb, text, interval) IS
  'Creates or replaces an app: runs per hourly/daily/weekly/monthly/yearly local period of tz (a local day has 23, 24 or 25 hours), created when the period starts or when the runs it depends on are done; a run unfinished deadline after its period ends raises an alert (coord.alerts); changing tz of an app with runs is refused';
GRANT SELECT ON coord.alerts TO coord_admin;
GRANT SELECT ON coord.alerts TO coord_monitor;
SELECT pg_catalog.pg_extension_config_dump('coord.app_alerts', '');
