-- pgTAP: the semaphore API's surface, one session's semantics, and every
-- error with its SQLSTATE (several sessions: test/specs/iso_semaphores*.spec).
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = error;
BEGIN;
SELECT plan(56);

-- The contract's functions, view and privileges.
SELECT function_returns('coord', 'acquire_permit', ARRAY['text', 'integer', 'interval', 'boolean'], 'integer');
SELECT function_returns('coord', 'release_permit', ARRAY['text'], 'boolean');
SELECT has_view('coord', 'semaphores', 'view coord.semaphores');
SELECT columns_are('coord', 'semaphores', ARRAY['path', 'permits', 'holders', 'waiters', 'pid',
       'permit', 'since', 'key']);
SELECT volatility_is('coord', 'acquire_permit', ARRAY['text', 'integer', 'interval', 'boolean'], 'volatile');
SELECT is((SELECT proparallel FROM pg_proc
            WHERE oid = 'coord.acquire_permit(text,integer,interval,boolean)'::regprocedure),
          'u', 'acquire_permit is parallel unsafe');
SELECT ok(has_function_privilege('coord_worker', 'coord.acquire_permit(text,integer,interval,boolean)', 'EXECUTE'),
          'coord_worker may acquire permits');
SELECT ok(has_function_privilege('coord_worker', 'coord.release_permit(text)', 'EXECUTE'),
          'coord_worker may release permits');
SELECT ok(NOT has_function_privilege('coord_monitor', 'coord.acquire_permit(text,integer,interval,boolean)', 'EXECUTE'),
          'coord_monitor may not acquire permits');
SELECT ok(NOT has_function_privilege('public', 'coord.acquire_permit(text,integer,interval,boolean)', 'EXECUTE'),
          'PUBLIC may not acquire permits');
SELECT ok(has_table_privilege('coord_monitor', 'coord.semaphores', 'SELECT'), 'coord_monitor reads coord.semaphores');
SELECT ok(NOT has_table_privilege('coord_worker', 'coord.semaphores', 'SELECT'), 'coord_worker does not');
SELECT ok(NOT has_table_privilege('coord_monitor', 'coord.permit_holders', 'SELECT'), 'the labels are granted to no one');

-- Arguments.
SELECT throws_ok($$SELECT coord.acquire_permit(NULL, 3)$$, '22004', 'path must not be null', 'path NULL');
SELECT throws_ok($$SELECT coord.acquire_permit('/s', NULL)$$, '22004', 'permits must not be null', 'permits NULL');
SELECT throws_ok($$SELECT coord.acquire_permit('/s', 3, NULL, NULL)$$, '22004', 'xact must not be null', 'xact NULL');
SELECT throws_ok($$SELECT coord.acquire_permit('/s', 0)$$, '22023', 'permits must be between 1 and 1024', 'permits 0');
SELECT throws_ok($$SELECT coord.acquire_permit('/s', -1)$$, '22023', NULL, 'permits negative');
SELECT throws_ok($$SELECT coord.acquire_permit('/s', 1025)$$, '22023', NULL, 'permits above the maximum');
SELECT throws_ok($$SELECT coord.acquire_permit('/s', 3, '-1 s')$$, '22023', 'timeout must be zero or positive', 'negative timeout');
SELECT throws_ok($$SELECT coord.acquire_permit('', 3)$$, '22023', NULL, 'empty path');
SELECT throws_ok($$SELECT coord.acquire_permit('s', 3)$$, '22023', NULL, 'relative path');
SELECT throws_ok($$SELECT coord.acquire_permit('/s/', 3)$$, '22023', NULL, 'trailing slash');
SELECT throws_ok($$SELECT coord.acquire_permit('/s/../t', 3)$$, '22023', NULL, 'dot-dot segment');
SELECT throws_ok($$SELECT coord.release_permit(NULL)$$, '22004', 'path must not be null', 'release path NULL');
SELECT throws_ok($$SELECT coord.release_permit('s')$$, '22023', NULL, 'release relative path');
SELECT is(coord.acquire_permit('/tap/max', 1024), 0, 'permits 1024 is allowed');

-- One session: numbers, reentrancy, release at commit.
SELECT is(coord.acquire_permit('/tap/s', 3), 0, 'the first permit is number 0');
SELECT is(coord.acquire_permit(path => '/tap/s', permits => 3, timeout => '0', xact => false), 0,
          'reentrant: the same permit again');
SELECT is((SELECT row(path, permits, holders, waiters, pid, permit)::text FROM coord.semaphores
            WHERE path = '/tap/s'),
          row('/tap/s', 3, 1::bigint, 0::bigint, pg_backend_pid(), 0)::text, 'the view shows the holder');
SELECT ok((SELECT since BETWEEN now() AND clock_timestamp() FROM coord.semaphores WHERE path = '/tap/s'),
          'since is the time of the acquisition');
SELECT is(coord.acquire_permit('/tap/other', 1), 0, 'another path is another semaphore');
SELECT ok(coord.lock('/tap/s'), 'a lock on the same path is unrelated');
SELECT ok(coord.release_permit('/tap/s'), 'first release');
SELECT ok(coord.release_permit('/tap/s'), 'second release');
SELECT ok(NOT coord.release_permit('/tap/s'), 'a third release finds no hold (false, WARNING)');
SELECT is((SELECT count(*)::int FROM coord.semaphores WHERE path = '/tap/s'), 1,
          'let go in this transaction: still held until it commits');
SELECT is(coord.acquire_permit('/tap/s', 3), 0, 'taking it again keeps the hold let go earlier');
SELECT ok(coord.release_permit('/tap/s'), 'and it can be let go again');
SELECT ok(NOT coord.release_permit('/tap/never'), 'release of a path never held is false');

-- Rollback: taken in a rolled-back savepoint is let go; let go in one is kept.
SAVEPOINT a;
SELECT is(coord.acquire_permit('/tap/rb', 2), 0, 'taken in a savepoint');
ROLLBACK TO a;
SELECT is((SELECT count(*)::int FROM coord.semaphores WHERE path = '/tap/rb'), 0,
          'the savepoint rolled back: the permit is gone');
SELECT is(coord.acquire_permit('/tap/rb', 2), 0, 'taken again');
SAVEPOINT b;
SELECT ok(coord.release_permit('/tap/rb'), 'let go in a savepoint');
ROLLBACK TO b;
SELECT ok(coord.release_permit('/tap/rb'), 'the rolled-back release is undone: the hold is still there');

-- Transaction scope.
SELECT is(coord.acquire_permit('/tap/x', 2, NULL, true), 0, 'a transaction permit');
SELECT ok(NOT coord.release_permit('/tap/x'), 'release_permit does not free a transaction permit');
SAVEPOINT c;
SELECT is(coord.acquire_permit('/tap/xs', 2, '1 s', true), 0, 'a transaction permit in a savepoint');
ROLLBACK TO c;
SELECT is((SELECT count(*)::int FROM coord.semaphores WHERE path = '/tap/xs'), 0,
          'gone with its savepoint');

-- Labels: without coord.permit_since no time; a label of another path with the key is a collision.
SET LOCAL coord.permit_since = off;
SELECT is(coord.acquire_permit('/tap/nosince', 2), 0, 'permit without since');
SELECT is((SELECT row(path, permits, since)::text FROM coord.semaphores WHERE path = '/tap/nosince'),
          row('/tap/nosince', 2, NULL::timestamptz)::text, 'path and size shown, no since');
INSERT INTO coord.permit_holders (key, permit, path, permits, pid, backend_start, since)
VALUES (coord.path_key('/tap/col') & -65536, 0, '/tap/elsewhere', 1, 0, now(), now());
SELECT throws_ok($$SELECT coord.acquire_permit('/tap/col', 1)$$, '23505',
                 'semaphore path "/tap/col" collides with semaphore path "/tap/elsewhere"', 'collision refused');

-- coord.tick purges the labels of backends that are gone (a dead pid, or a
-- live pid with another start: reused), and keeps a live backend's, held or not.
DELETE FROM coord.permit_holders WHERE path = '/tap/elsewhere';
SELECT is(coord.acquire_permit('/tap/purge-live', 1), 0, 'a permit of a live session');
SELECT ok(coord.release_permit('/tap/purge-live'), 'let go at commit: its label stays a live backend''s');
INSERT INTO coord.permit_holders (key, permit, path, permits, pid, backend_start, since)
VALUES (coord.path_key('/tap/purge-dead') & -65536, 0, '/tap/purge-dead', 1, 0, now(), now()),
       (coord.path_key('/tap/purge-reused') & -65536, 0, '/tap/purge-reused', 1,
        pg_backend_pid(), '2001-01-01Z', now());
SELECT lives_ok($$SELECT coord.tick(now())$$, 'tick');
SELECT is((SELECT array_agg(path ORDER BY path) FROM coord.permit_holders
            WHERE path LIKE '/tap/purge-%'),
          ARRAY['/tap/purge-live'], 'the tick deleted the labels of gone backends only');

SELECT * FROM finish();
ROLLBACK;
