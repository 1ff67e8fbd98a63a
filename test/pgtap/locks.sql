-- pgTAP: the lock API's surface, behaviour and every error with its SQLSTATE.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = warning;
BEGIN;
SELECT plan(64);

-- The contract's functions, with their signatures and return types.
SELECT has_schema('coord');
SELECT function_returns('coord', 'lock', ARRAY['text', 'interval', 'boolean'], 'boolean');
SELECT function_returns('coord', 'try_lock', ARRAY['text', 'boolean'], 'boolean');
SELECT function_returns('coord', 'unlock', ARRAY['text', 'boolean'], 'boolean');
SELECT function_returns('coord', 'unlock_all', ARRAY[]::text[], 'integer');
SELECT function_returns('coord', 'xact_lock', ARRAY['text', 'interval', 'boolean'], 'boolean');
SELECT function_returns('coord', 'try_xact_lock', ARRAY['text', 'boolean'], 'boolean');
SELECT function_returns('coord', 'lock_first', ARRAY['text[]', 'boolean'], 'text');
SELECT function_returns('coord', 'fence', ARRAY['text'], 'bigint');
SELECT function_returns('coord', 'fence_ok', ARRAY['text', 'bigint'], 'boolean');
SELECT has_view('coord', 'locks', 'view coord.locks');
SELECT columns_are('coord', 'locks', ARRAY['path', 'mode', 'granted', 'pid', 'application_name',
       'client_addr', 'backend_start', 'wait_start', 'key']);
SELECT volatility_is('coord', 'lock', ARRAY['text', 'interval', 'boolean'], 'volatile');
SELECT is((SELECT proparallel FROM pg_proc WHERE oid = 'coord.lock(text,interval,boolean)'::regprocedure),
          'u', 'coord.lock is parallel unsafe');
-- fence_ok locks the fence row it accepts (issue 24): a writer
SELECT volatility_is('coord', 'fence_ok', ARRAY['text', 'bigint'], 'volatile');
SELECT is((SELECT proparallel FROM pg_proc WHERE oid = 'coord.fence_ok(text,bigint)'::regprocedure),
          'u', 'coord.fence_ok is parallel unsafe');
SELECT is((SELECT relnamespace::regnamespace::text FROM pg_class WHERE oid = 'coord.locks'::regclass),
          'coord', 'objects live in schema coord');
SELECT is((SELECT extrelocatable FROM pg_extension WHERE extname = 'pg_coord'), false,
          'the extension is not relocatable');

-- Defaults: named and positional calls.
SELECT ok(coord.lock('/tap/a'), 'lock with defaults');
SELECT ok(coord.lock(path => '/tap/b', timeout => '1s', shared => true), 'lock by name');
SELECT ok(coord.try_lock('/tap/c'), 'try_lock');
SELECT is(coord.lock_first(ARRAY['/tap/a', '/tap/d']), '/tap/a', 'lock_first: own lock is reentrant');
SELECT is((SELECT count(*)::int FROM coord.locks WHERE pid = pg_backend_pid() AND granted),
          5, 'three leaves plus IX and IS on /tap');
SELECT is(coord.unlock_all(), 4, 'unlock_all counts holds');
SELECT ok(coord.unlock('/tap/a') IS FALSE, 'unlock of a lock not held is false');
SELECT is((SELECT count(*)::int FROM coord.locks WHERE pid = pg_backend_pid()), 0, 'nothing left');

-- coord.locks shows the holder.
SELECT coord.lock('/tap/who');
SELECT results_eq(
  $$SELECT path, mode, granted, pid, application_name, backend_start IS NOT NULL
      FROM coord.locks WHERE path = '/tap/who'$$,
  $$SELECT '/tap/who'::text, 'exclusive'::text, true, pg_backend_pid(),
           current_setting('application_name'), true$$,
  'coord.locks names the path, mode and holder');
SELECT ok((SELECT wait_start IS NULL FROM coord.locks WHERE path = '/tap/who'), 'a granted lock has no wait_start');
SELECT coord.unlock('/tap/who');

-- Fencing.
SELECT coord.lock('/tap/f');
SELECT cmp_ok(coord.fence('/tap/f'), '<', coord.fence('/tap/f'), 'tokens increase');
SELECT ok(coord.fence_ok('/tap/f', (SELECT token FROM coord.fences WHERE path = '/tap/f')), 'newest token is ok');
SELECT ok(NOT coord.fence_ok('/tap/f', 0), 'token 0 is not ok');
SELECT coord.unlock('/tap/f');

-- Errors: SQLSTATE and message.
SELECT throws_ok($$SELECT coord.lock(NULL)$$, '22004', 'path must not be null', 'lock(NULL)');
SELECT throws_ok($$SELECT coord.lock('/x', NULL, NULL)$$, '22004', 'shared must not be null', 'lock shared NULL');
SELECT throws_ok($$SELECT coord.try_lock(NULL)$$, '22004', NULL, 'try_lock(NULL)');
SELECT throws_ok($$SELECT coord.try_lock('/x', NULL)$$, '22004', NULL, 'try_lock shared NULL');
SELECT throws_ok($$SELECT coord.unlock(NULL)$$, '22004', NULL, 'unlock(NULL)');
SELECT throws_ok($$SELECT coord.unlock('/x', NULL)$$, '22004', NULL, 'unlock shared NULL');
SELECT throws_ok($$SELECT coord.xact_lock(NULL)$$, '22004', NULL, 'xact_lock(NULL)');
SELECT throws_ok($$SELECT coord.try_xact_lock(NULL)$$, '22004', NULL, 'try_xact_lock(NULL)');
SELECT throws_ok($$SELECT coord.lock_first(NULL)$$, '22004', 'paths must not be null', 'lock_first(NULL)');
SELECT throws_ok($$SELECT coord.lock_first(ARRAY['/x', NULL])$$, '22004', NULL, 'lock_first with a NULL element');
SELECT throws_ok($$SELECT coord.lock_first(ARRAY[['/x'],['/y']])$$, '2202E', NULL, 'lock_first with a 2-D array');
SELECT throws_ok($$SELECT coord.fence(NULL)$$, '22004', NULL, 'fence(NULL)');
SELECT throws_ok($$SELECT coord.fence_ok(NULL, 1)$$, '22004', NULL, 'fence_ok path NULL');
SELECT throws_ok($$SELECT coord.fence_ok('/x', NULL)$$, '22004', 'token must not be null', 'fence_ok token NULL');
SELECT throws_ok($$SELECT coord.lock('')$$, '22023', 'lock path must not be empty', 'empty path');
SELECT throws_ok($$SELECT coord.lock('x')$$, '22023', 'invalid lock path "x"', 'relative path');
SELECT throws_ok($$SELECT coord.lock('/')$$, '22023', 'cannot lock the root path "/"', 'root');
SELECT throws_ok($$SELECT coord.lock('/x/')$$, '22023', NULL, 'trailing slash');
SELECT throws_ok($$SELECT coord.lock('/x//y')$$, '22023', NULL, 'empty segment');
SELECT throws_ok($$SELECT coord.lock('/.')$$, '22023', NULL, 'dot segment');
SELECT throws_ok($$SELECT coord.lock('/x/..')$$, '22023', NULL, 'dot-dot segment');
SELECT throws_ok($$SELECT coord.lock(E'/x\x01')$$, '22023', 'invalid lock path', 'control character');
SELECT throws_ok($$SELECT coord.lock(E'/x\x7f')$$, '22023', 'invalid lock path', 'DEL');
SELECT throws_ok($$SELECT coord.lock('/' || repeat('x', 1024))$$, '22023', 'lock path is too long', '1025 bytes');
SELECT throws_ok($$SELECT coord.lock(repeat('/x', 65))$$, '22023', NULL, '65 segments');
SELECT throws_ok($$SELECT coord.lock('/x', '-1 ms')$$, '22023', 'timeout must be zero or positive', 'negative timeout');
SELECT throws_ok($$SELECT coord.xact_lock('/x', '-1 day')$$, '22023', NULL, 'negative xact timeout');
SELECT throws_ok($$SELECT coord.lock('/x', '1 month -31 days')$$, '22023', NULL, 'net negative timeout');
SELECT throws_ok($$SELECT coord.lock('/x', '178000000 years')$$, '22015', 'timeout is out of range', 'huge timeout');
SELECT throws_ok($$SELECT coord.fence('/tap/not-held')$$, '55000',
                 'cannot issue a fencing token for "/tap/not-held"', 'fence without the lock');
SELECT coord.lock('/tap/sh', shared => true);
SELECT throws_ok($$SELECT coord.fence('/tap/sh')$$, '55000', NULL, 'fence with a shared lock');
SELECT coord.unlock('/tap/sh', true);
INSERT INTO coord.lock_names (key, path) VALUES (coord.path_key('/tap/collide'), '/tap/other');
SELECT throws_ok($$SELECT coord.lock('/tap/collide')$$, '23505',
                 'lock path "/tap/collide" collides with registered path "/tap/other"', 'name collision');
SELECT is((SELECT count(*)::int FROM coord.locks WHERE pid = pg_backend_pid()), 0,
          'a refused collision holds nothing');

SELECT * FROM finish();
ROLLBACK;
