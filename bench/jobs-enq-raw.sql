-- raw baseline: one INSERT per transaction, no NOTIFY
INSERT INTO bench_jobs (queue, payload) VALUES ('e', '{"x":1}'::jsonb);
