
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
