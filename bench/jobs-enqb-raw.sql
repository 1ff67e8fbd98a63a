-- raw baseline: 100 jobs per INSERT ... SELECT and transaction
INSERT INTO bench_jobs (queue, payload) SELECT 'e', '{"x":1}'::jsonb FROM generate_series(1, 100);
