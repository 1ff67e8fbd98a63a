-- Bounds (issue 13, sections 4 and 7): every call a caller can lengthen
-- stays linear and interruptible, what a caller stores has a size limit, and
-- one session cannot fill the cluster-wide lock table.  The inputs are big
-- enough that the former code ran for minutes (ignoring statement_timeout)
-- or ran the lock table out; here each finishes well inside the timeout.
\set VERBOSITY terse
SET client_min_messages = warning;

-- lock_first over 100,000 registered paths: one lookup per path taken, not
-- a quadratic check of all of them; the candidates not taken leave no lock
-- and no registry row behind.
INSERT INTO coord.lock_names (key, path) VALUES (coord.path_key('/lf'), '/lf');
INSERT INTO coord.lock_names (key, path)
  SELECT coord.path_key('/lf/' || i), '/lf/' || i FROM generate_series(1, 100000) i;
SET statement_timeout = '20s';
BEGIN;
SELECT coord.lock_first(array_agg('/lf/' || i ORDER BY i)) FROM generate_series(1, 100000) i;
SELECT count(*) AS locks_held FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory';
COMMIT;
SELECT coord.unlock_all();
SELECT coord.lock_first(array_agg('/lg/' || i ORDER BY i)) FROM generate_series(1, 5000) i;
SELECT path FROM coord.lock_names WHERE path LIKE '/lg%' ORDER BY path;
SELECT coord.unlock_all();
DELETE FROM coord.lock_names WHERE path LIKE '/l_/%' OR path IN ('/lf', '/lg');

-- A batch complete of 1,000,000 ids (50,000 jobs, each 20 times) is linear.
SELECT count(*) FROM generate_series(1, 5) AS c, LATERAL coord.enqueue_many('bounds-many',
  (SELECT array_agg('{}'::jsonb) FROM generate_series(1, 10000 + 0 * c))) AS e;
CREATE TEMP TABLE claimed (id bigint, token bigint);
SELECT 'INSERT INTO claimed SELECT id, token FROM coord.claim(''bounds-many'', 10000)'
  FROM generate_series(1, 5) \gexec
SELECT count(*) FROM claimed;
SELECT coord.complete_many(array_agg(id), array_agg(token)) FROM claimed, generate_series(1, 20);
SELECT count(*) FROM coord.job WHERE queue = 'bounds-many';

-- Dependency checks on a chain of 40 diamonds (2^40 paths through it) are
-- linear in the graph: define_app's cycle check and the grid's ordering.
INSERT INTO coord.app_defs (name, starts, depends, queue, conf, grain)
  VALUES ('bd-l0', 'hourly', '{}', 'apps', '{}', 'hourly');
INSERT INTO coord.app_defs (name, starts, depends, queue, conf, grain)
  SELECT 'bd-' || x || i, NULL, jsonb_build_object('bd-l' || (i - 1), 'hourly'), 'apps', '{}', 'hourly'
  FROM generate_series(1, 40) i, unnest(ARRAY['a', 'b']) x;
INSERT INTO coord.app_defs (name, starts, depends, queue, conf, grain)
  SELECT 'bd-l' || i, NULL, jsonb_build_object('bd-a' || i, 'hourly', 'bd-b' || i, 'hourly'), 'apps', '{}', 'hourly'
  FROM generate_series(1, 40) i;
SELECT coord.define_app('bd-top', depends => '{"bd-l40": "hourly"}');
SELECT coord.define_app('bd-l0', starts => 'hourly', depends => '{"bd-top": "hourly"}');
SELECT count(*) AS grid_lines FROM coord.grid('2026-01-01', '2026-01-02');
SELECT line FROM coord.grid('2026-01-01', '2026-01-01 02:00') AS g(line)
  WHERE line LIKE 'bd-l0 %' OR line LIKE 'bd-a1 %' OR line LIKE 'bd-top %';
DELETE FROM coord.app_defs WHERE name LIKE 'bd-%';
RESET statement_timeout;

-- Size limits (54000): a job's result, a failure's error text, an app's conf.
SELECT coord.enqueue('bounds-size', '{}') > 0 AS enqueued;
CREATE TEMP TABLE c1 AS SELECT id, token FROM coord.claim('bounds-size');
SELECT coord.complete(id, token, jsonb_build_object('x', repeat('x', 1100000))) FROM c1;
SELECT coord.fail(id, token, repeat('e', 70000)) FROM c1;
SELECT coord.complete(id, token, jsonb_build_object('x', repeat('x', 900000))) FROM c1;
SELECT coord.define_app('bd-big', starts => 'hourly', conf => jsonb_build_object('x', repeat('x', 70000)));
SELECT count(*) FROM coord.app_defs WHERE name = 'bd-big';

-- Idle marks: a session that claims from 30,000 empty queues stays idle on
-- the most recent coord.max_idle_marks (256) only, and keeps at most 1024
-- claim frontiers (the former code filled the lock table, and 736 bytes a queue).
DO $$BEGIN FOR i IN 1..30000 LOOP PERFORM coord.claim('bounds-idle-' || i); END LOOP; END$$;
SELECT count(*) AS idle_marks FROM pg_locks
  WHERE pid = pg_backend_pid() AND locktype = 'advisory' AND objsubid = 17205;
SELECT total_bytes < 2 * 1024 * 1024 AS frontiers_bounded FROM pg_backend_memory_contexts
  WHERE name = 'pg_coord claim frontiers';
-- the most recent marks are the ones kept: an enqueue there wakes this session
LISTEN "coord:bounds-idle-30000";
SELECT count(*) FROM pg_locks l WHERE pid = pg_backend_pid() AND objsubid = 17205
  AND (objid::bigint | (classid::bigint << 32)) = coord.key_hash('coord:bounds-idle-30000');

-- The per-session cap on pg_coord locks (coord.max_locks_per_session, 1000
-- by default): 53400 before the lock table runs out.  In one transaction a
-- new path costs two entries: its lock, and its registration's until commit.
SHOW coord.max_locks_per_session;
DO $$
DECLARE n int := 0;
BEGIN
  FOR i IN 1..2000 LOOP
    PERFORM coord.lock('/cap/' || i);
    n := n + 1;
  END LOOP;
EXCEPTION WHEN configuration_limit_exceeded THEN
  RAISE WARNING 'refused after % paths: %', n, SQLERRM;
END$$;
SELECT coord.unlock_all();
SET coord.max_locks_per_session = 50;
-- transaction locks count too, and locks let go behind pg_coord's back are recounted
BEGIN;
DO $$
DECLARE n int := 0;
BEGIN
  FOR i IN 1..100 LOOP
    PERFORM coord.xact_lock('/cap/' || i);
    n := n + 1;
  END LOOP;
EXCEPTION WHEN configuration_limit_exceeded THEN
  RAISE WARNING 'refused after % transaction locks', n;
END$$;
COMMIT;
-- (a new path takes its lock and, until commit, a registration lock)
SELECT count(*) FROM (SELECT coord.lock('/cap/' || i) FROM generate_series(1, 20) i) s;
SELECT pg_advisory_unlock_all();
SELECT count(*) FROM (SELECT coord.lock('/cap2/' || i) FROM generate_series(1, 20) i) s;
SELECT coord.unlock_all();
-- session-bound claims count
SELECT count(*) FROM coord.enqueue_many('bounds-cap', (SELECT array_agg('{}'::jsonb) FROM generate_series(1, 60)));
SELECT count(*) FROM coord.claim('bounds-cap', 60, session_bound => true);
SELECT count(*) FROM coord.claim('bounds-cap', 40, session_bound => true);
RESET coord.max_locks_per_session;
DELETE FROM coord.lock_names WHERE path LIKE '/cap%';

-- Skipping the lock-name collision check is a superuser setting.
CREATE ROLE regress_coord_bounds;
GRANT coord_worker TO regress_coord_bounds;
SET ROLE regress_coord_bounds;
SET coord.register_lock_names = off;
SET coord.max_locks_per_session = 100000;
SET coord.max_idle_marks = 10000;
RESET ROLE;
DROP ROLE regress_coord_bounds;

-- leave nothing behind for the suites that follow
SELECT coord.unlock_all() >= 0 AS unlocked;
DELETE FROM coord.job WHERE queue LIKE 'bounds-%';
DELETE FROM coord.job_history WHERE queue LIKE 'bounds-%';
