-- raw SKIP LOCKED baseline: claim 1 job (UPDATE ... RETURNING), then DELETE: two transactions per job
UPDATE bench_jobs SET state = 'running', attempts = attempts + 1, locked_until = now() + interval '5 minutes'
 WHERE id IN (SELECT id FROM bench_jobs
               WHERE queue = 'q' AND state = 'ready' AND run_at <= now()
               ORDER BY priority DESC, run_at, id
               LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id \gset
DELETE FROM bench_jobs WHERE id = :id;
