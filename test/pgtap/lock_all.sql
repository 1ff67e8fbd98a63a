-- pgTAP: coord.lock_all, single session: signature, every argument and
-- error, all-or-none, duplicates and ancestors, reentrancy with coord.lock,
-- release by coord.unlock and coord.unlock_all, the per-session cap.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = error;
BEGIN;
SELECT plan(42);

CREATE FUNCTION pg_temp.mine() RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(path || ':' || mode, ' ' ORDER BY path, mode), '')
    FROM coord.locks WHERE pid = pg_backend_pid() AND granted
$$;
-- register the names, so coord.locks shows paths
SELECT coord.try_lock(p) FROM unnest(ARRAY['/la', '/la/a', '/la/b', '/la/p', '/la/p/q',
       '/la/k', '/la/c', '/la/d']) AS p;
SELECT coord.unlock_all();

SELECT function_returns('coord', 'lock_all', ARRAY['text[]', 'interval', 'boolean'], 'boolean');
SELECT volatility_is('coord', 'lock_all', ARRAY['text[]', 'interval', 'boolean'], 'volatile');
SELECT is((SELECT proparallel FROM pg_proc WHERE oid = 'coord.lock_all(text[],interval,boolean)'::regprocedure),
          'u', 'lock_all is parallel unsafe');
SELECT ok(has_function_privilege('coord_worker', 'coord.lock_all(text[],interval,boolean)', 'EXECUTE'),
          'coord_worker may call lock_all');
SELECT ok(NOT has_function_privilege('public', 'coord.lock_all(text[],interval,boolean)', 'EXECUTE'),
          'PUBLIC may not');

-- every path, each one lock: ancestors take intention locks
SELECT ok(coord.lock_all(ARRAY['/la/b', '/la/a']), 'lock_all with defaults');
SELECT is(pg_temp.mine(), '/la:intention_exclusive /la/a:exclusive /la/b:exclusive',
          'both paths held, IX on their parent');
SELECT is(coord.unlock('/la/a'), true, 'unlock one path');
SELECT is(pg_temp.mine(), '/la:intention_exclusive /la/b:exclusive', 'the other stays');
SELECT is(coord.unlock('/la/b'), true, 'unlock the other');
SELECT is(pg_temp.mine(), '', 'nothing left');

-- a path given twice is one lock of it
SELECT ok(coord.lock_all(ARRAY['/la/a', '/la/a', '/la/a']), 'duplicates');
SELECT is(coord.unlock('/la/a'), true, 'one unlock');
SELECT is(coord.unlock('/la/a'), false, 'and it is gone');
SELECT is(pg_temp.mine(), '', 'nothing left after duplicates');

-- a path with its ancestor: both locked, X and IX on the ancestor
SELECT ok(coord.lock_all(ARRAY['/la/p/q', '/la/p']), 'a path and its ancestor');
SELECT is(pg_temp.mine(), '/la:intention_exclusive /la/p:exclusive /la/p:intention_exclusive /la/p/q:exclusive',
          'X and IX on the ancestor');
SELECT is(coord.unlock_all(), 2, 'unlock_all counts one hold per distinct path');
SELECT is(pg_temp.mine(), '', 'nothing left after unlock_all');

-- reentrant with coord.lock: counts add up
SELECT ok(coord.lock('/la/k'), 'coord.lock first');
SELECT ok(coord.lock_all(ARRAY['/la/k', '/la/c']), 'then lock_all over it');
SELECT is(coord.unlock('/la/k'), true, 'first unlock of /la/k');
SELECT is(pg_temp.mine(), '/la:intention_exclusive /la/c:exclusive /la/k:exclusive', '/la/k still held once');
SELECT is(coord.unlock('/la/k'), true, 'second unlock of /la/k');
SELECT is(coord.unlock('/la/c'), true, 'unlock /la/c');

-- shared
SELECT ok(coord.lock_all(ARRAY['/la/c', '/la/d'], shared => true), 'shared');
SELECT is(pg_temp.mine(), '/la:intention_shared /la/c:shared /la/d:shared', 'S on the paths, IS on the parent');
SELECT is(coord.unlock('/la/c', true) AND coord.unlock('/la/d', true), true, 'unlock shared');
SELECT ok(coord.lock_all(ARRAY['/la/c'], '0'), 'timeout zero: a try');
SELECT ok(coord.lock_all(ARRAY['/la/d'], '1s'), 'timeout one second');
SELECT is(coord.unlock_all(), 2, 'both released');

-- edge cases and errors: nothing is held after any of them
SELECT is(coord.lock_all(ARRAY[]::text[]), true, 'an empty array locks nothing and is true');
SELECT throws_ok($$SELECT coord.lock_all(NULL)$$, '22004', 'paths must not be null', 'paths NULL');
SELECT throws_ok($$SELECT coord.lock_all(ARRAY['/la/a', NULL])$$, '22004', NULL, 'a NULL element');
SELECT throws_ok($$SELECT coord.lock_all(ARRAY['/la/a'], NULL, NULL)$$, '22004', 'shared must not be null', 'shared NULL');
SELECT throws_ok($$SELECT coord.lock_all(ARRAY[['/la/a'], ['/la/b']])$$, '2202E', NULL, 'a 2-D array');
SELECT throws_ok($$SELECT coord.lock_all(ARRAY['/la/a', 'la/b'])$$, '22023', NULL, 'an invalid path: none locked');
SELECT throws_ok($$SELECT coord.lock_all(ARRAY['/la/a'], '-1s')$$, '22023', NULL, 'a negative timeout');
SELECT throws_ok($$SELECT coord.lock_all(array_fill('/la/a'::text, ARRAY[10001]))$$, '54000', NULL,
                 'more than 10000 paths');

-- the per-session cap: refused as a whole; earlier locks keep their counts
SELECT coord.lock('/la/a');
SET LOCAL coord.max_locks_per_session = 6;
SELECT throws_ok($$SELECT coord.lock_all(ARRAY['/la/a', '/la/b', '/la/c', '/la/d', '/la/k', '/la/p', '/la/p/q'])$$,
                 '53400', NULL, 'over coord.max_locks_per_session');
SELECT is(pg_temp.mine(), '/la:intention_exclusive /la/a:exclusive', 'only the earlier lock is held, once');
SELECT is(coord.unlock_all(), 1, 'one hold released');

SELECT * FROM finish();
ROLLBACK;
