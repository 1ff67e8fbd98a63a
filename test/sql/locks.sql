-- Locks: what one session can observe (races are in test/specs).
\set VERBOSITY terse
SET client_min_messages = warning;
-- start from an empty registry, whatever tests ran before in this database
DELETE FROM coord.lock_names;

CREATE FUNCTION pg_temp.held() RETURNS TABLE (path text, mode text, granted boolean)
LANGUAGE sql AS $$
  SELECT path, mode, granted FROM coord.locks WHERE pid = pg_backend_pid() ORDER BY path, mode
$$;

-- A 3-level path takes intention locks on its ancestors.
SELECT coord.lock('/a/b/c');
SELECT * FROM pg_temp.held();

-- Reentrant: two locks need two unlocks; a third unlock warns and says false.
SELECT coord.lock('/a/b/c');
SELECT coord.unlock('/a/b/c');
SELECT count(*) AS rows_still_held FROM pg_temp.held();
SELECT coord.unlock('/a/b/c');
SELECT count(*) AS rows_after FROM pg_temp.held();
SELECT coord.unlock('/a/b/c');

-- Shared locks take intention-shared locks; shared and exclusive are counted apart.
SELECT coord.lock('/s/t', shared => true);
SELECT * FROM pg_temp.held();
SELECT coord.unlock('/s/t');                 -- not held exclusively
SELECT coord.unlock('/s/t', shared => true);

-- try_lock and a zero timeout never wait, and succeed when free.
SELECT coord.try_lock('/free'), coord.lock('/free2', '0'::interval), coord.lock('/free3', '1 second');
SELECT coord.unlock_all() AS released;
SELECT count(*) AS nothing_held FROM pg_temp.held();

-- unlock_all counts holds, and only pg_coord's.
SELECT pg_advisory_lock(42);
SELECT coord.lock('/u/1'), coord.lock('/u/1'), coord.lock('/u/2', shared => true);
SELECT coord.unlock_all() AS released;
SELECT coord.unlock_all() AS released_again;
SELECT count(*) AS user_advisory_still_held FROM pg_locks
 WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND objid = 42 AND objsubid = 1;
SELECT pg_advisory_unlock(42);

-- pg_advisory_unlock_all releases our locks too (documented caveat): unlock then warns.
SELECT coord.lock('/gone');
SELECT pg_advisory_unlock_all();
SELECT coord.unlock('/gone');
SELECT coord.unlock_all() AS released_after_external_release;

-- Session locks survive rollback; transaction locks end with the transaction.
BEGIN;
SELECT coord.lock('/sess'), coord.xact_lock('/xact/one'), coord.try_xact_lock('/xact/two', true);
SELECT * FROM pg_temp.held();
ROLLBACK;
SELECT * FROM pg_temp.held();
BEGIN;
SELECT coord.xact_lock('/xact/one', '1 second');
COMMIT;
SELECT * FROM pg_temp.held();
SELECT coord.unlock('/sess');

-- unlock does not release a transaction-level lock.
BEGIN;
SELECT coord.xact_lock('/xonly');
SELECT coord.unlock('/xonly');
SELECT count(*) AS xact_lock_still_held FROM pg_temp.held();
COMMIT;

-- lock_first takes the first free path, validates all paths first.
SELECT coord.lock_first(ARRAY['/c/B1-RT1', '/c/B2-RT1']);
SELECT coord.lock_first(ARRAY['/c/B1-RT1', '/c/B2-RT1']);   -- reentrant: the first again
SELECT coord.lock_first('{}'::text[]);
SELECT coord.lock_first(ARRAY['/c/B3', NULL]);
SELECT coord.lock_first(ARRAY['/c/B3', 'bad']);
SELECT coord.lock_first(ARRAY[['/c/B3'], ['/c/B4']]);
SELECT coord.unlock_all() AS released;

-- The registry holds every path and ancestor locked, readable in coord.locks.
SELECT path FROM coord.lock_names WHERE path LIKE '/a%' OR path LIKE '/c%' ORDER BY path;
SELECT key = coord.path_key(path) AS key_matches FROM coord.lock_names WHERE path = '/a/b/c';

-- Keys are the path hash as pg_advisory_lock(bigint) lays it out, in our own field4.
SELECT coord.lock('/ns');
SELECT pg_try_advisory_lock(coord.path_key('/ns')) AS user_key_is_independent;
SELECT objsubid, (classid::bigint << 32 | objid::bigint)::bigint = coord.path_key('/ns') AS same_key
  FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() ORDER BY objsubid;
SELECT pg_advisory_unlock(coord.path_key('/ns')), coord.unlock('/ns');

-- Two paths with one key are refused (a planted row stands in for a real collision).
INSERT INTO coord.lock_names (key, path) VALUES (coord.path_key('/collide'), '/someone/else');
\c
\set VERBOSITY terse
SELECT coord.lock('/collide');
SELECT count(*) AS nothing_held FROM coord.locks WHERE pid = pg_backend_pid();
DELETE FROM coord.lock_names WHERE path = '/someone/else';
SELECT coord.lock('/collide'), coord.unlock('/collide');

-- Read-only transactions lock without registering; coord.locks shows the key.
BEGIN READ ONLY;
SELECT coord.xact_lock('/readonly/x');
SELECT path LIKE '#%' AS shown_by_key, mode FROM coord.locks WHERE pid = pg_backend_pid() ORDER BY mode;
COMMIT;
-- ... but get no fencing token there: coord.fence writes (25006).
BEGIN READ ONLY;
SELECT coord.xact_lock('/readonly/f');
\set VERBOSITY sqlstate
SELECT coord.fence('/readonly/f');
\set VERBOSITY terse
ROLLBACK;
-- ... and a rolled-back registration is forgotten, so the next lock registers again.
BEGIN;
SELECT coord.xact_lock('/rolledback');
ROLLBACK;
SELECT count(*) AS registered FROM coord.lock_names WHERE path = '/rolledback';
SELECT coord.try_lock('/rolledback'), coord.unlock('/rolledback');
SELECT count(*) AS registered FROM coord.lock_names WHERE path = '/rolledback';
SET coord.register_lock_names = off;
SELECT coord.try_lock('/unregistered'), coord.unlock('/unregistered');
SELECT count(*) AS registered FROM coord.lock_names WHERE path = '/unregistered';
RESET coord.register_lock_names;

-- purge_lock_names keeps held paths only.
SELECT coord.lock('/keep/me');
SELECT coord.purge_lock_names() > 0 AS purged_some;
SELECT path FROM coord.lock_names ORDER BY path;
SELECT coord.unlock('/keep/me');

-- Fencing tokens increase per path, need an exclusive hold, and are checkable.
SELECT coord.lock('/f/x');
SELECT coord.fence('/f/x') AS t1 \gset
SELECT coord.fence('/f/x') AS t2 \gset
SELECT :t2 > :t1 AS increasing, coord.fence_ok('/f/x', :t2) AS newest_ok, coord.fence_ok('/f/x', :t1) AS older_ok;
SELECT coord.fence_ok('/f/never', 1) AS unknown_path_ok;
-- A true check locks the fence row until the transaction ends (FOR SHARE);
-- a false one locks nothing, and a read-only transaction only reads.
BEGIN;
SELECT coord.fence_ok('/f/x', :t1) AS older_ok;
SELECT xmax = pg_current_xact_id()::xid AS row_locked FROM coord.fences WHERE path = '/f/x';
SELECT coord.fence_ok('/f/x', :t2) AS newest_ok;
SELECT xmax = pg_current_xact_id()::xid AS row_locked FROM coord.fences WHERE path = '/f/x';
COMMIT;
BEGIN READ ONLY;
SELECT coord.fence_ok('/f/x', :t2) AS newest_ok_read_only;
COMMIT;
SELECT coord.unlock('/f/x');
SELECT coord.fence('/f/x');                          -- no longer held
SELECT coord.lock('/f/x', shared => true);
SELECT coord.fence('/f/x');                          -- shared is not enough
SELECT coord.unlock('/f/x', true);
BEGIN;
SELECT coord.xact_lock('/f/x');
SELECT coord.fence('/f/x') > :t2 AS xact_hold_fences;
COMMIT;
-- A token from a rolled-back transaction is never reissued.
BEGIN;
SELECT coord.xact_lock('/f/y');
SELECT coord.fence('/f/y') AS rolled \gset
ROLLBACK;
BEGIN;
SELECT coord.xact_lock('/f/y');
SELECT coord.fence('/f/y') > :rolled AS larger_than_rolled_back;
COMMIT;

-- Bad input: SQLSTATE and message for each.
\set VERBOSITY default
SELECT coord.lock(NULL);
SELECT coord.lock('/x', shared => NULL);
SELECT coord.try_lock('');
SELECT coord.lock('x');
SELECT coord.lock('/');
SELECT coord.lock('/x/');
SELECT coord.lock('/x//y');
SELECT coord.lock('/x/./y');
SELECT coord.lock('/x/..');
SELECT coord.lock(E'/x\ny');
SELECT coord.lock(E'/x\u0085y');
SELECT coord.lock('/' || repeat('x', 1024));
SELECT coord.lock(repeat('/x', 65));
SELECT coord.lock('/x', '-1 second');
SELECT coord.lock('/x', '178000000 years');
SELECT coord.xact_lock('/x', NULL, NULL);
SELECT coord.unlock(NULL);
SELECT coord.fence(NULL);
SELECT coord.fence_ok('/x', NULL);
SELECT coord.fence_ok('nope', 1);
SELECT coord.lock_first(NULL);
SELECT coord.path_key('/');
\set VERBOSITY terse
-- The longest and deepest valid paths work.
SELECT coord.try_lock('/' || repeat('x', 1023)), coord.unlock('/' || repeat('x', 1023));
SELECT coord.try_lock(repeat('/x', 64)), coord.unlock(repeat('/x', 64));
SELECT coord.try_lock('/ünïcødé/路径'), coord.unlock('/ünïcødé/路径');
