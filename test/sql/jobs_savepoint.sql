-- A claim rolled back to a savepoint puts its jobs back in claim order: the
-- next claim of the same session, in the same transaction, gets them again
-- (the claim frontier does not stay past them).
\set VERBOSITY terse
SET client_min_messages = warning;
-- no scan from the head in between: only the frontier decides
SET coord.claim_rescan_interval = '1h';

SELECT count(*) FROM (
  SELECT coord.enqueue('sp', '{"n":1}', run_at => now() - interval '2 min'),
         coord.enqueue('sp', '{"n":2}', run_at => now() - interval '1 min')) s;

-- a lease claim
BEGIN;
SAVEPOINT s;
SELECT payload->>'n' AS claimed FROM coord.claim('sp', 2);
ROLLBACK TO SAVEPOINT s;
SELECT payload->>'n' AS claimed_again, attempt FROM coord.claim('sp', 1);
ROLLBACK;

-- a session-bound claim
BEGIN;
SAVEPOINT s;
SELECT payload->>'n' AS claimed FROM coord.claim('sp', 2, session_bound => true);
ROLLBACK TO SAVEPOINT s;
SELECT payload->>'n' AS claimed_again, attempt FROM coord.claim('sp', 1, session_bound => true);
ROLLBACK;

-- a savepoint released keeps its claims: the next claim goes on after them
BEGIN;
SAVEPOINT s;
SELECT payload->>'n' AS claimed FROM coord.claim('sp', 1);
RELEASE SAVEPOINT s;
SELECT payload->>'n' AS claimed_next FROM coord.claim('sp', 1);
ROLLBACK;

-- nested: rolling back the inner savepoint only
BEGIN;
SELECT payload->>'n' AS claimed_outer FROM coord.claim('sp', 1);
SAVEPOINT s;
SELECT payload->>'n' AS claimed_inner FROM coord.claim('sp', 1);
ROLLBACK TO SAVEPOINT s;
SELECT payload->>'n' AS claimed_inner_again FROM coord.claim('sp', 1);
COMMIT;
SELECT count(*) AS left_ready FROM coord.claim('sp', 10);

-- A transaction claims a job once.  A lease claim takes no lock, and its
-- lease can pass while its transaction is still open: the same
-- transaction's next claim, lease or session-bound, does not take the job
-- again (with a new token and attempt, or killing it when that spends its
-- last attempt) while the transaction still works on it.  Rolled back to a
-- savepoint, or failed for a retry by the transaction itself, the job is
-- the queue's again.
SELECT count(*) FROM (
  SELECT coord.enqueue('sp2', '{"n":1}', max_attempts => 1, run_at => now() - interval '2 min'),
         coord.enqueue('sp2', '{"n":2}', run_at => now() - interval '1 min')) s;
BEGIN;
CREATE TEMP TABLE sp2c AS
  SELECT id, payload->>'n' AS n, attempt, token FROM coord.claim('sp2', 2, lease => '1 ms');
SELECT n AS claimed, attempt FROM sp2c ORDER BY n;
DO $$BEGIN
  WHILE clock_timestamp() <= (SELECT max(lease_until) FROM coord.job WHERE queue = 'sp2') LOOP
    PERFORM pg_sleep(0.001);
  END LOOP;
END$$;
SELECT payload->>'n' AS claimed_again, attempt FROM coord.claim('sp2', 2, lease => '1 min');
SELECT payload->>'n' AS claimed_again, attempt FROM coord.claim('sp2', 2, session_bound => true);
SELECT count(*) AS claim_locks FROM pg_locks
  WHERE pid = pg_backend_pid() AND locktype = 'advisory' AND objsubid = 17204;
SAVEPOINT s;
SELECT payload->>'n' AS claimed_in_savepoint FROM coord.claim('sp2', 2);
ROLLBACK TO SAVEPOINT s;
-- the first claims' tokens still finish their jobs
SELECT n, coord.complete(id, token) AS completed FROM sp2c ORDER BY n;
COMMIT;
DROP TABLE sp2c;
SELECT payload->>'n' AS n, state, attempt FROM coord.job_history WHERE queue = 'sp2' ORDER BY id;
SELECT coord.enqueue('sp2', '{"n":3}') > 0 AS enqueued;
BEGIN;
SELECT payload->>'n' AS claimed, attempt FROM coord.claim('sp2', 1);
SAVEPOINT s;
SELECT coord.fail(id, token, 'again', retry_after => '0') AS failed FROM coord.job WHERE queue = 'sp2';
SELECT payload->>'n' AS claimed_after_fail FROM coord.claim('sp2', 1);
ROLLBACK TO SAVEPOINT s;
SELECT count(*) AS claimed_again FROM coord.claim('sp2', 1);
ROLLBACK;
DELETE FROM coord.job WHERE queue = 'sp2';
DELETE FROM coord.job_history WHERE queue = 'sp2';
