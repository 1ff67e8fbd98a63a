-- raw SKIP LOCKED baseline of the one-commit loop: DELETE the job in hand and
-- claim the next (UPDATE ... RETURNING) in one statement (a client's first
-- run claims only; pgbench -D id=0)
\if :id = 0
UPDATE bench_jobs SET state = 'running', attempts = attempts + 1, locked_until = now() + interval '5 minutes'
 WHERE id IN (SELECT id FROM bench_jobs
               WHERE queue = 'q' AND state = 'ready' AND run_at <= now()
               ORDER BY priority DESC, run_at, id
               LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id \gset
\else
WITH done AS (DELETE FROM bench_jobs WHERE id = :id)
UPDATE bench_jobs SET state = 'running', attempts = attempts + 1, locked_until = now() + interval '5 minutes'
 WHERE id IN (SELECT id FROM bench_jobs
               WHERE queue = 'q' AND state = 'ready' AND run_at <= now()
               ORDER BY priority DESC, run_at, id
               LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id \gset
\endif
