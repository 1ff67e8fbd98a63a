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
