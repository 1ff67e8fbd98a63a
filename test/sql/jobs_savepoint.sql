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
