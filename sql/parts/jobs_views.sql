
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
       j.claimed_by::pg_catalog.regrole AS claimed_by,
       j.limit_key, j.snoozes, j.expires_at,
       j.enqueued_by::pg_catalog.regrole AS enqueued_by, j.progress, j.trace
  FROM coord.job AS j
UNION ALL
SELECT h.id, h.queue, h.state, h.payload, h.run_at, h.priority, h.key, h.group_key, h.host,
       h.attempt, h.max_attempts, NULL::timestamptz, h.last_error, h.token, h.enqueued_at,
       h.claimed_at, h.finished_at, h.result, h.origin, NULL::pg_catalog.regrole,
       h.limit_key, h.snoozes, h.expires_at,
       h.enqueued_by::pg_catalog.regrole, h.progress, h.trace
  FROM coord.job_history AS h
UNION ALL
SELECT w.id, w.queue, 'waiting', w.payload, w.run_at, w.priority, w.key, w.group_key, w.host,
       w.attempt, w.max_attempts, NULL::timestamptz, w.last_error, w.token, w.enqueued_at,
       w.claimed_at, NULL::timestamptz, NULL::jsonb, w.origin, NULL::pg_catalog.regrole,
       w.limit_key, w.snoozes, w.expires_at,
       w.enqueued_by::pg_catalog.regrole, w.progress, w.trace
  FROM coord.job_wait AS w;
COMMENT ON VIEW coord.jobs IS
  'Every live job (waiting ones too) and every finished job still in the history; token, payload, result, last_error and progress for coord_admin only';

-- A producer's own jobs, without coord_monitor: the view reads coord.jobs as
-- its owner and keeps the rows of roles whose privileges the reader has.
-- security_barrier: a reader's own functions in its WHERE run only on
-- those rows, so that none can leak another role's result or payload.
CREATE VIEW coord.my_jobs WITH (security_barrier) AS
SELECT j.* FROM coord.jobs AS j
 WHERE j.enqueued_by IS NOT NULL
   AND pg_catalog.pg_has_role(j.enqueued_by::pg_catalog.oid, 'USAGE');
COMMENT ON VIEW coord.my_jobs IS
  'The coord.jobs rows of jobs enqueued by current_user or a role whose privileges it has, with every column (result, last_error, progress)';

CREATE VIEW coord.limits AS
WITH live AS (
  SELECT r.queue, r.per_key, r.limit_key
    FROM coord.job_running AS r
    JOIN coord.job AS j ON j.id OPERATOR(pg_catalog.=) r.job_id AND j.token OPERATOR(pg_catalog.=) r.token
   WHERE COALESCE(j.lease_until OPERATOR(pg_catalog.>) pg_catalog.now(), false) OR coord.job_claimed(j.id)),
pauses AS (
  SELECT p.queue, p.limit_key, COALESCE(p.until, 'infinity'::timestamptz) AS until
    FROM coord.job_pause AS p
   WHERE p.until IS NULL OR p.until OPERATOR(pg_catalog.>) pg_catalog.now()),
keys AS (
  SELECT l.queue, ''::text AS limit_key FROM coord.job_limit AS l WHERE NOT l.per_key
  UNION
  SELECT j.queue, j.limit_key FROM coord.job AS j
    JOIN coord.job_limit AS l ON l.queue OPERATOR(pg_catalog.=) j.queue AND l.per_key
   WHERE j.limit_key IS NOT NULL
  UNION
  SELECT b.queue, b.limit_key FROM coord.job_bucket AS b
  UNION
  SELECT p.queue, p.limit_key FROM pauses AS p)
SELECT k.queue, NULLIF(k.limit_key, '') AS limit_key, l.concurrency,
       (SELECT pg_catalog.count(*) FROM live AS v
         WHERE v.queue OPERATOR(pg_catalog.=) k.queue
           AND v.per_key OPERATOR(pg_catalog.=) (k.limit_key OPERATOR(pg_catalog.<>) '')
           AND v.limit_key OPERATOR(pg_catalog.=) k.limit_key) AS running,
       l.rate, l.per, l.burst,
       CASE WHEN l.rate IS NOT NULL THEN
         coord.bucket_tokens(b.tokens, b.refilled_at, l.rate, l.per, COALESCE(l.burst, l.rate)) END AS tokens,
       p.until AS paused_until
  FROM keys AS k
  LEFT JOIN coord.job_limit AS l ON l.queue OPERATOR(pg_catalog.=) k.queue
   AND l.per_key OPERATOR(pg_catalog.=) (k.limit_key OPERATOR(pg_catalog.<>) '')
  LEFT JOIN coord.job_bucket AS b ON b.queue OPERATOR(pg_catalog.=) k.queue
   AND b.limit_key OPERATOR(pg_catalog.=) k.limit_key
  LEFT JOIN pauses AS p ON p.queue OPERATOR(pg_catalog.=) k.queue
   AND p.limit_key OPERATOR(pg_catalog.=) k.limit_key
 WHERE l.queue IS NOT NULL OR p.queue IS NOT NULL;
COMMENT ON VIEW coord.limits IS
  'Flow control: per queue (limit_key NULL) and per limit_key, the concurrency limit and running claims, the rate limit and its bucket''s tokens, and the pause''s end (infinity: until coord.resume)';

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
flow AS (
  SELECT f.queue,
         pg_catalog.max(f.paused_until) FILTER (WHERE f.limit_key IS NULL) AS paused_until,
         pg_catalog.count(*) FILTER (WHERE f.limit_key IS NOT NULL AND f.paused_until IS NOT NULL) AS paused_keys,
         pg_catalog.count(*) FILTER (WHERE f.limit_key IS NOT NULL
             AND f.running OPERATOR(pg_catalog.>=) f.concurrency) AS limited_keys
    FROM coord.limits AS f GROUP BY f.queue),
queues AS (
  SELECT queue FROM live_stats UNION SELECT queue FROM dead UNION SELECT queue FROM done
  UNION SELECT queue FROM flow)
SELECT q.queue,
       COALESCE(l.ready, 0) AS ready, COALESCE(l.scheduled, 0) AS scheduled,
       COALESCE(l.running, 0) AS running, COALESCE(d.dead, 0) AS dead,
       COALESCE(r.done_last_hour, 0) AS done_last_hour,
       pg_catalog.now() OPERATOR(pg_catalog.-) l.oldest_ready AS oldest_ready_age,
       f.paused_until, COALESCE(f.paused_keys, 0) AS paused_keys,
       COALESCE(f.limited_keys, 0) AS limited_keys
  FROM queues AS q
  LEFT JOIN live_stats AS l ON l.queue OPERATOR(pg_catalog.=) q.queue
  LEFT JOIN dead AS d ON d.queue OPERATOR(pg_catalog.=) q.queue
  LEFT JOIN done AS r ON r.queue OPERATOR(pg_catalog.=) q.queue
  LEFT JOIN flow AS f ON f.queue OPERATOR(pg_catalog.=) q.queue;
COMMENT ON VIEW coord.queue_stats IS
  'Per queue: ready, scheduled, running, dead, done in the last hour, age of the oldest ready job; the queue''s pause end, its paused keys and its keys at their concurrency limit';
