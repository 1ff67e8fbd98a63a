
-------------------------------------------------------------------------------
-- Metrics (src/metrics.c; docs/operations/metrics.md): coord.metrics, one row
-- per series, for coordctl metrics, GET /metrics and postgres_exporter.
-------------------------------------------------------------------------------

-- Finished jobs per queue that the counters count but the history no longer
-- shows row by row: history rows finished before coord.metrics_state's
-- folded_to (coord.tick folds them in), history rows deleted before they
-- were folded (the trigger below: purges, coord.retry, a DELETE by hand),
-- and live jobs removed without a history row (a schedule's or an app's
-- unclaimed job, as cancelled).  The counters are this plus the history
-- rows finished since folded_to, plus (enqueued) the live and waiting jobs:
-- no job's enqueue, claim or finish writes anything for them.  Tables, so
-- WAL-logged: a promoted standby and a restarted server go on from them.
CREATE TABLE coord.queue_totals (
    queue     text PRIMARY KEY,
    done      bigint NOT NULL DEFAULT 0,
    dead      bigint NOT NULL DEFAULT 0,
    cancelled bigint NOT NULL DEFAULT 0
);
COMMENT ON TABLE coord.queue_totals IS
  'Per queue, finished jobs counted by coord.metrics that the history no longer lists after coord.metrics_state.folded_to (folded in by coord.tick, purged, retried, or removed unclaimed)';
REVOKE ALL ON coord.queue_totals FROM PUBLIC;

-- One row.  Lock order: the trigger takes it FOR SHARE, the tick's fold
-- FOR UPDATE SKIP LOCKED, then counts with a new snapshot: a history row is
-- counted by exactly one of them.
CREATE TABLE coord.metrics_state (
    one        boolean PRIMARY KEY DEFAULT true CHECK (one),
    folded_to  timestamptz NOT NULL DEFAULT '-infinity',
    counted_at timestamptz,
    large      boolean NOT NULL DEFAULT false
);
COMMENT ON TABLE coord.metrics_state IS
  'One row: history rows finished before folded_to are counted in coord.queue_totals; counted_at: when coord.tick last took coord.queue_counts; large: coord.metrics reads that snapshot instead of counting the live jobs';
REVOKE ALL ON coord.metrics_state FROM PUBLIC;
INSERT INTO coord.metrics_state DEFAULT VALUES;

-- The per-queue job counts as of counted_at, for large queues (counting a
-- million live jobs takes about a second; reading this, a millisecond).
CREATE TABLE coord.queue_counts (
    queue        text PRIMARY KEY,
    ready        bigint NOT NULL,
    scheduled    bigint NOT NULL,
    running      bigint NOT NULL,
    waiting      bigint NOT NULL,
    oldest_ready timestamptz,
    enqueued     bigint NOT NULL
);
COMMENT ON TABLE coord.queue_counts IS
  'Per queue, the live job counts and the enqueued counter as of coord.metrics_state.counted_at (taken by coord.tick while the live jobs are many)';
REVOKE ALL ON coord.queue_counts FROM PUBLIC;

CREATE FUNCTION coord.metrics_queues(OUT queue text, OUT ready bigint, OUT scheduled bigint,
    OUT running bigint, OUT waiting bigint, OUT dead bigint, OUT oldest_ready_age double precision,
    OUT enqueued bigint, OUT completed bigint, OUT failed bigint, OUT cancelled bigint)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'coord_metrics_queues'
LANGUAGE C VOLATILE PARALLEL RESTRICTED ROWS 100;
COMMENT ON FUNCTION coord.metrics_queues() IS
  'Per queue: jobs ready, scheduled, running, waiting and dead now, the oldest ready job''s age in seconds, and the counters of jobs enqueued, completed, failed (dead) and cancelled; for coord.metrics';

CREATE FUNCTION coord.metrics_purged()
RETURNS trigger AS 'MODULE_PATHNAME', 'coord_metrics_purged'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.metrics_purged() IS
  'Trigger of coord.job_history: adds the deleted rows not folded in yet to coord.queue_totals, so that no counter goes back';
CREATE TRIGGER metrics_purged
  AFTER DELETE ON coord.job_history REFERENCING OLD TABLE AS purged_rows
  FOR EACH STATEMENT EXECUTE FUNCTION coord.metrics_purged();
COMMENT ON TRIGGER metrics_purged ON coord.job_history IS
  'Keeps the counters of coord.metrics when history rows go (coord.purge_jobs, the tick''s purge, coord.retry, a DELETE by hand)';

CREATE VIEW coord.metrics AS
WITH q AS (SELECT * FROM coord.metrics_queues()),
lim AS (
  SELECT l.queue, NULL::text AS limit_key, l.concurrency, l.rate, l.per, l.burst,
         (SELECT pg_catalog.count(*) FROM coord.job_running AS r
            JOIN coord.job AS j ON j.id OPERATOR(pg_catalog.=) r.job_id AND j.token OPERATOR(pg_catalog.=) r.token
           WHERE r.queue OPERATOR(pg_catalog.=) l.queue AND NOT r.per_key
             AND (COALESCE(j.lease_until OPERATOR(pg_catalog.>) pg_catalog.now(), false) OR coord.job_claimed(j.id))) AS running,
         (SELECT coord.bucket_tokens(b.tokens, b.refilled_at, l.rate, l.per, COALESCE(l.burst, l.rate))
            FROM coord.job_bucket AS b
           WHERE b.queue OPERATOR(pg_catalog.=) l.queue AND b.limit_key OPERATOR(pg_catalog.=) '') AS tokens
    FROM coord.job_limit AS l WHERE NOT l.per_key),
pauses AS (
  SELECT p.queue, NULLIF(p.limit_key, '') AS limit_key
    FROM coord.job_pause AS p
   WHERE p.until IS NULL OR p.until OPERATOR(pg_catalog.>) pg_catalog.now()),
locks AS (SELECT s.granted, s.wait_start FROM coord.lock_status() AS s),
lead AS (
  SELECT e.election, e.term, (SELECT pg_catalog.count(*) FROM coord.leader(e.election)) AS leaders
    FROM coord.elections AS e),
m AS (
  SELECT 'coord_queue_ready' AS metric, pg_catalog.jsonb_build_object('queue', q.queue) AS labels,
         q.ready::float8 AS value, 'gauge' AS kind, 'Jobs ready to be claimed now' AS help FROM q
  UNION ALL SELECT 'coord_queue_scheduled', pg_catalog.jsonb_build_object('queue', q.queue), q.scheduled,
         'gauge', 'Jobs waiting for their run_at (retries in backoff included)' FROM q
  UNION ALL SELECT 'coord_queue_running', pg_catalog.jsonb_build_object('queue', q.queue), q.running,
         'gauge', 'Jobs claimed now (a live lease or a session-bound claim)' FROM q
  UNION ALL SELECT 'coord_queue_waiting', pg_catalog.jsonb_build_object('queue', q.queue), q.waiting,
         'gauge', 'Jobs waiting for their parents (enqueued with after)' FROM q
  UNION ALL SELECT 'coord_queue_dead', pg_catalog.jsonb_build_object('queue', q.queue), q.dead,
         'gauge', 'Dead jobs in the history (failed after their last attempt, not retried or purged yet)' FROM q
  UNION ALL SELECT 'coord_queue_oldest_ready_age_seconds', pg_catalog.jsonb_build_object('queue', q.queue),
         COALESCE(q.oldest_ready_age, 0), 'gauge', 'How long the oldest ready job has been due (0 when none is ready)' FROM q
  UNION ALL SELECT 'coord_jobs_enqueued_total', pg_catalog.jsonb_build_object('queue', q.queue), q.enqueued,
         'counter', 'Jobs enqueued (a retry of a dead job counts again)' FROM q
  UNION ALL SELECT 'coord_jobs_completed_total', pg_catalog.jsonb_build_object('queue', q.queue), q.completed,
         'counter', 'Jobs completed (done)' FROM q
  UNION ALL SELECT 'coord_jobs_failed_total', pg_catalog.jsonb_build_object('queue', q.queue), q.failed,
         'counter', 'Jobs that died (failed after their last attempt, lost their last lease, or expired)' FROM q
  UNION ALL SELECT 'coord_jobs_cancelled_total', pg_catalog.jsonb_build_object('queue', q.queue), q.cancelled,
         'counter', 'Jobs cancelled (or removed unclaimed with their schedule or app)' FROM q
  UNION ALL SELECT 'coord_queue_paused', pg_catalog.jsonb_build_object('queue', p.queue) OPERATOR(pg_catalog.||)
           CASE WHEN p.limit_key IS NULL THEN '{}'::jsonb ELSE pg_catalog.jsonb_build_object('limit_key', p.limit_key) END,
         1, 'gauge', 'A pause in force (of the whole queue, or of one limit_key)' FROM pauses AS p
  UNION ALL SELECT 'coord_limit_concurrency', pg_catalog.jsonb_build_object('queue', l.queue), l.concurrency,
         'gauge', 'The queue''s concurrency limit' FROM lim AS l WHERE l.concurrency IS NOT NULL
  UNION ALL SELECT 'coord_limit_running', pg_catalog.jsonb_build_object('queue', l.queue), l.running,
         'gauge', 'Running claims counted against the queue''s concurrency limit' FROM lim AS l WHERE l.concurrency IS NOT NULL
  UNION ALL SELECT 'coord_limit_tokens', pg_catalog.jsonb_build_object('queue', l.queue), COALESCE(l.tokens, COALESCE(l.burst, l.rate)),
         'gauge', 'Tokens in the queue''s rate-limit bucket now' FROM lim AS l WHERE l.rate IS NOT NULL
  UNION ALL SELECT 'coord_schedule_lag_seconds', pg_catalog.jsonb_build_object('schedule', s.name),
         CASE WHEN j.id IS NOT NULL AND j.run_at OPERATOR(pg_catalog.<=) pg_catalog.now()
                   AND NOT (COALESCE(j.lease_until OPERATOR(pg_catalog.>) pg_catalog.now(), false) OR coord.job_claimed(j.id))
              THEN pg_catalog.date_part('epoch', pg_catalog.now() OPERATOR(pg_catalog.-) j.run_at) ELSE 0 END,
         'gauge', 'How long the schedule''s due instance has waited for a worker (0 when none waits)'
    FROM coord.schedule_defs AS s
    LEFT JOIN coord.job AS j ON j.origin OPERATOR(pg_catalog.=) ('s:' OPERATOR(pg_catalog.||) s.name)
  UNION ALL SELECT 'coord_app_late_runs', pg_catalog.jsonb_build_object('app', d.name),
         (SELECT pg_catalog.count(*) FROM coord.app_alerts AS a
           WHERE a.app OPERATOR(pg_catalog.=) d.name AND a.kind OPERATOR(pg_catalog.=) 'deadline' AND a.cleared_at IS NULL),
         'gauge', 'Runs of the app past their deadline and not finished (open deadline alerts)' FROM coord.app_defs AS d
  UNION ALL SELECT 'coord_alerts_open', pg_catalog.jsonb_build_object('app', a.app, 'kind', a.kind), pg_catalog.count(*),
         'gauge', 'Open alerts of app runs, by kind (deadline, dead, timeout)'
    FROM coord.app_alerts AS a WHERE a.cleared_at IS NULL GROUP BY a.app, a.kind
  UNION ALL SELECT 'coord_lock_holders', '{}'::jsonb, (SELECT pg_catalog.count(*) FROM locks AS k WHERE k.granted),
         'gauge', 'pg_coord locks held now (a shared lock counts once per holder)'
  UNION ALL SELECT 'coord_lock_waiters', '{}'::jsonb, (SELECT pg_catalog.count(*) FROM locks AS k WHERE NOT k.granted),
         'gauge', 'Sessions waiting for a pg_coord lock now'
  UNION ALL SELECT 'coord_lock_longest_wait_seconds', '{}'::jsonb,
         COALESCE((SELECT pg_catalog.date_part('epoch', pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) pg_catalog.min(k.wait_start))
                     FROM locks AS k WHERE NOT k.granted), 0),
         'gauge', 'How long the longest waiter for a pg_coord lock has waited (0 when none waits)'
  UNION ALL SELECT 'coord_election_term', pg_catalog.jsonb_build_object('election', e.election), e.term,
         'gauge', 'The election''s newest term' FROM lead AS e
  UNION ALL SELECT 'coord_election_leader', pg_catalog.jsonb_build_object('election', e.election), e.leaders,
         'gauge', 'Whether the election has a live leader (1) or not (0)' FROM lead AS e
  UNION ALL SELECT 'coord_group_segments', pg_catalog.jsonb_build_object('partition_group', g.partition_group), g.segments,
         'gauge', 'Segments of the partition group' FROM coord.partition_groups AS g
  UNION ALL SELECT 'coord_group_members', pg_catalog.jsonb_build_object('partition_group', g.partition_group),
         (SELECT pg_catalog.count(*) FROM coord.members AS b
           WHERE b.partition_group OPERATOR(pg_catalog.=) g.partition_group AND b.alive),
         'gauge', 'Live members of the partition group' FROM coord.partition_groups AS g
  UNION ALL SELECT 'coord_group_member_owned', pg_catalog.jsonb_build_object('partition_group', b.partition_group, 'member', b.member),
         b.owned, 'gauge', 'Segments the member owns' FROM coord.members AS b WHERE b.alive
  UNION ALL SELECT 'coord_group_member_share', pg_catalog.jsonb_build_object('partition_group', b.partition_group, 'member', b.member),
         b.owned_share, 'gauge', 'The member''s owned share of the segments (0 to 1)' FROM coord.members AS b WHERE b.alive
  UNION ALL SELECT 'coord_group_member_target_share', pg_catalog.jsonb_build_object('partition_group', b.partition_group, 'member', b.member),
         b.target_share, 'gauge', 'The member''s share by weight (its weight over the live members'' weight)' FROM coord.members AS b WHERE b.alive
  UNION ALL SELECT 'coord_tick_age_seconds', '{}'::jsonb,
         COALESCE(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) t.ticked_at), -1),
         'gauge', 'Seconds since coord.tick last ran (-1: never)' FROM coord.tick_state AS t
  UNION ALL SELECT 'coord_metrics_counts_age_seconds', '{}'::jsonb,
         CASE WHEN s.large THEN pg_catalog.date_part('epoch', pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) s.counted_at) ELSE 0 END,
         'gauge', 'Age of the per-queue job counts (0: counted now; with many live jobs, taken by coord.tick)'
    FROM coord.metrics_state AS s)
SELECT m.metric, m.labels, m.value::double precision AS value, m.kind, m.help
  FROM m ORDER BY m.metric, m.labels;
COMMENT ON VIEW coord.metrics IS
  'One row per metric series (metric, labels, value, kind gauge or counter, help): per queue depth, age and counters, limits, pauses, schedules'' lag, apps'' late runs and alerts, locks, elections, partition groups, the tick; docs/operations/metrics.md';
