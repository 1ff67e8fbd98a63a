-- Requests: the answer table rows one session can see, savepoints,
-- isolation levels, purge and errors (races are in test/specs/iso_requests).
\set VERBOSITY terse
SET client_min_messages = warning;
-- start from no keys, whatever tests ran before in this database
DELETE FROM coord.request_keys;
CREATE FUNCTION pg_temp.st(k text) RETURNS TABLE (state text, mine boolean, owner_alive boolean)
LANGUAGE sql AS $$
  SELECT state, owner_pid = pg_backend_pid(), owner_alive FROM coord.requests WHERE key = k
$$;

-- none -> true; requested by this session -> true (reentrant)
SELECT coord.request('a'), coord.request_state('a');
SELECT coord.request('a');
SELECT * FROM pg_temp.st('a');
-- queued -> false, also for the session that queued it
SELECT coord.mark_queued('a');
SELECT coord.request('a'), coord.request('a', wait => false), coord.request_state('a');
-- done -> false unless older than stale_after
SELECT coord.mark_done('a');
SELECT coord.request('a'), coord.request('a', stale_after => '1 hour');
UPDATE coord.request_keys SET done_at = now() - interval '2 hours' WHERE key = 'a';
SELECT coord.request('a', stale_after => '3 hours'), coord.request('a');
SELECT coord.request('a', stale_after => '1 hour') AS stale_taken, coord.request_state('a');
SELECT * FROM pg_temp.st('a');
SELECT coord.release('a');
SELECT coord.request_state('a') IS NULL AS released_key_is_gone;

-- requested by a session that has ended (a planted row, as after a restart) -> takeover
INSERT INTO coord.request_keys (key, state, owner_pid, owner_start, requested_at)
VALUES ('orphan', 'requested', 2147483647, now() - interval '1 day', now() - interval '1 day');
SELECT state, owner_alive FROM coord.requests WHERE key = 'orphan';
SELECT coord.request('orphan', wait => false);
SELECT * FROM pg_temp.st('orphan');
SELECT coord.mark_queued('orphan');

-- mark_done needs no request, and works on any state
SELECT coord.mark_done('never-requested'), coord.request_state('never-requested');
SELECT coord.request('b'), coord.mark_done('b'), coord.request_state('b');

-- inside a transaction: a rolled-back request leaves nothing behind
BEGIN;
SELECT coord.request('tx');
ROLLBACK;
SELECT coord.request_state('tx') IS NULL AS no_row,
       (SELECT count(*) FROM coord.request_lock_status() WHERE key = coord.key_hash('tx')) AS lock_rows;
-- request and queue in one transaction (works through a transaction pooler)
BEGIN;
SELECT coord.request('tx'), coord.mark_queued('tx');
COMMIT;
SELECT coord.request_state('tx'),
       (SELECT count(*) FROM coord.request_lock_status() WHERE key = coord.key_hash('tx')) AS lock_rows;
-- savepoints: a rolled-back savepoint undoes exactly its own actions
SELECT coord.request('sp');
BEGIN;
SAVEPOINT s1;
SELECT coord.mark_queued('sp');
ROLLBACK TO SAVEPOINT s1;
SELECT coord.request_state('sp');
COMMIT;
SELECT coord.request('sp') AS still_owner,
       (SELECT count(*) FROM coord.request_lock_status() WHERE key = coord.key_hash('sp')) AS lock_rows;
BEGIN;
SAVEPOINT s1;
SELECT coord.request('sp2');
ROLLBACK TO SAVEPOINT s1;
SELECT coord.request_state('sp2') IS NULL AS no_row;
SAVEPOINT s2;
SELECT coord.request('sp3');
RELEASE SAVEPOINT s2;
COMMIT;
SELECT coord.request_state('sp3'),
       (SELECT count(*) FROM coord.request_lock_status() WHERE key IN (coord.key_hash('sp2'), coord.key_hash('sp3'))) AS lock_rows;
-- release then request again in one transaction keeps the key
BEGIN;
SELECT coord.release('sp3'), coord.request('sp3');
COMMIT;
SELECT * FROM pg_temp.st('sp3');
-- an error inside a PL/pgSQL exception block undoes the request made there
DO $$
BEGIN
  BEGIN
    PERFORM coord.request('plpgsql');
    RAISE EXCEPTION 'boom';
  EXCEPTION WHEN others THEN NULL;
  END;
END $$;
SELECT coord.request_state('plpgsql') IS NULL AS no_row,
       (SELECT count(*) FROM coord.request_lock_status() WHERE key = coord.key_hash('plpgsql')) AS lock_rows;

-- isolation levels: request needs READ COMMITTED
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT coord.request('rr');
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT coord.request('rr');
ROLLBACK;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT coord.mark_done('rr'), coord.request_state('rr');
COMMIT;
-- PREPARE TRANSACTION with request actions is refused
BEGIN;
SELECT coord.request('prep');
PREPARE TRANSACTION 'p1';
SELECT coord.request_state('prep') IS NULL AS no_row;

-- the view
SELECT key, state, owner_alive, waiters, requested_at IS NOT NULL AS r, queued_at IS NOT NULL AS q,
       done_at IS NOT NULL AS d
  FROM coord.requests ORDER BY key;

-- purge: done keys older than the interval only
UPDATE coord.request_keys SET done_at = now() - interval '10 days' WHERE key = 'b';
SELECT coord.purge_requests('7 days');
SELECT coord.purge_requests('0');
SELECT key, state FROM coord.request_keys ORDER BY key;

-- keys: any non-empty text up to 2048 bytes
SELECT coord.request(repeat('k', 2048)), coord.release(repeat('k', 2048));
SELECT coord.request(E'tab\tand ünïcødé'), coord.release(E'tab\tand ünïcødé');
SELECT coord.key_hash('x') = coord.key_hash('x') AS stable, coord.key_hash('x') <> coord.key_hash('y') AS differs;

-- errors
\set VERBOSITY default
SELECT coord.request(NULL);
SELECT coord.request('');
SELECT coord.request(repeat('k', 2049));
SELECT coord.request('e', NULL);
SELECT coord.request('e', stale_after => '-1 second');
SELECT coord.request('e', timeout => '-1 second');
SELECT coord.mark_queued(NULL);
SELECT coord.mark_queued('never');
SELECT coord.mark_queued('tx');
SELECT coord.mark_done(NULL);
SELECT coord.release(NULL);
SELECT coord.release('never');
SELECT coord.request_state(NULL);
SELECT coord.request_state('');
SELECT coord.purge_requests(NULL);
SELECT coord.purge_requests('-1 day');
SELECT coord.key_hash(NULL);
\set VERBOSITY terse
SELECT pg_advisory_unlock_all();
