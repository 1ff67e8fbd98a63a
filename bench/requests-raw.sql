-- raw baseline: INSERT ... ON CONFLICT DO NOTHING RETURNING, then two UPDATEs
-- of the state, three autocommit transactions; goes on only when the INSERT
-- took the key (completed cycles are counted in bench_requests)
\set k random(1, 1000000000)
WITH i AS (INSERT INTO bench_requests (key, state) VALUES ('k' || :k, 'requested')
           ON CONFLICT DO NOTHING RETURNING 1)
SELECT count(*) AS got FROM i \gset
\if :got = 1
UPDATE bench_requests SET state = 'queued' WHERE key = 'k' || :k AND state = 'requested';
UPDATE bench_requests SET state = 'done' WHERE key = 'k' || :k;
\endif
