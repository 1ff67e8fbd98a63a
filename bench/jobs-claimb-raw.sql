-- raw SKIP LOCKED baseline: claim 100 jobs, then DELETE them: two transactions per 100 jobs
WITH c AS (
  UPDATE bench_jobs SET state = 'running', attempts = attempts + 1, locked_until = now() + interval '5 minutes'
   WHERE id IN (SELECT id FROM bench_jobs
                 WHERE queue = 'q' AND state = 'ready' AND run_at <= now()
                 ORDER BY priority DESC, run_at, id
                 LIMIT 100 FOR UPDATE SKIP LOCKED)
  RETURNING id)
SELECT COALESCE(array_agg(id)::text, '{}') AS ids FROM c \gset
DELETE FROM bench_jobs WHERE id = ANY (:ids::bigint[]);
