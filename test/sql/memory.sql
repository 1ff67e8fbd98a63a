-- Memory and process safety (issue 13, section 6): writers refuse parallel
-- mode with 25000, array arguments refuse NULL elements with 22004, and the
-- backend-local caches live in contexts of their own that do not leak.
\set VERBOSITY sqlstate
SET client_min_messages = warning;

-- A caller's function wrongly marked PARALLEL SAFE, run in a parallel worker
-- by force_parallel_mode (debug_parallel_query from PostgreSQL 16 on).
CREATE FUNCTION public.coord_par(q text) RETURNS text
LANGUAGE plpgsql PARALLEL SAFE AS $$ BEGIN EXECUTE q; RETURN 'ran'; END $$;
SELECT set_config(CASE WHEN current_setting('server_version_num')::int >= 160000
                       THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END, 'on', false) AS parallel;

-- Every function that changes state or takes locks: 25000, never XX000.
SELECT public.coord_par($$SELECT coord.enqueue('mem_q')$$);
SELECT public.coord_par($$SELECT coord.enqueue_many('mem_q', ARRAY['{}']::jsonb[])$$);
SELECT public.coord_par($$SELECT coord.claim('mem_q')$$);
SELECT public.coord_par($$SELECT coord.claim('mem_q', session_bound => true)$$);
SELECT public.coord_par($$SELECT coord.complete(1, 1)$$);
SELECT public.coord_par($$SELECT coord.complete_many(ARRAY[1]::bigint[], ARRAY[1]::bigint[])$$);
SELECT public.coord_par($$SELECT coord.fail(1, 1)$$);
SELECT public.coord_par($$SELECT coord.heartbeat(1, 1)$$);
SELECT public.coord_par($$SELECT coord.cancel(1)$$);
SELECT public.coord_par($$SELECT coord.retry(1)$$);
SELECT public.coord_par($$SELECT coord.purge_jobs()$$);
SELECT public.coord_par($$SELECT coord.mark_queued('mem_k', 'mem_q')$$);
SELECT public.coord_par($$SELECT coord.lock('/mem/a')$$);
SELECT public.coord_par($$SELECT coord.try_lock('/mem/a')$$);
SELECT public.coord_par($$SELECT coord.xact_lock('/mem/a')$$);
SELECT public.coord_par($$SELECT coord.try_xact_lock('/mem/a')$$);
SELECT public.coord_par($$SELECT coord.unlock('/mem/a')$$);
SELECT public.coord_par($$SELECT coord.unlock_all()$$);
SELECT public.coord_par($$SELECT coord.lock_first(ARRAY['/mem/a'])$$);
SELECT public.coord_par($$SELECT coord.fence('/mem/a')$$);
SELECT public.coord_par($$SELECT coord.fence_ok('/mem/a', 1)$$);
SELECT public.coord_par($$SELECT coord.request('mem_k')$$);
SELECT public.coord_par($$SELECT coord.mark_queued('mem_k')$$);
SELECT public.coord_par($$SELECT coord.mark_done('mem_k')$$);
SELECT public.coord_par($$SELECT coord.release('mem_k')$$);
SELECT public.coord_par($$SELECT coord.purge_requests('1 day')$$);
SELECT public.coord_par($$SELECT coord.schedule('mem_s', 'mem_q', '1 hour')$$);
SELECT public.coord_par($$SELECT coord.unschedule('mem_s')$$);
SELECT public.coord_par($$SELECT coord.tick()$$);
SELECT public.coord_par($$SELECT coord.cron_install()$$);
SELECT public.coord_par($$SELECT coord.define_app('mem_a', 'daily')$$);
SELECT public.coord_par($$SELECT coord.drop_app('mem_a')$$);
-- readers still work there
SELECT public.coord_par($$SELECT coord.job_state(1)$$);
SELECT public.coord_par($$SELECT coord.path_key('/mem/a')$$);
SELECT set_config(CASE WHEN current_setting('server_version_num')::int >= 160000
                       THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END, 'off', false) AS parallel;
DROP FUNCTION public.coord_par(text);
-- nothing was left behind
SELECT count(*) AS jobs FROM coord.jobs WHERE queue = 'mem_q';
SELECT count(*) AS locks FROM coord.locks WHERE pid = pg_backend_pid();

-- coord.grid: a NULL element of apps is 22004, not "app (null) does not exist".
SELECT * FROM coord.grid(apps => ARRAY[NULL]::text[]);
SELECT * FROM coord.grid(apps => ARRAY['mem_nosuch', NULL]);
SELECT * FROM coord.grid(apps => ARRAY['mem_nosuch']);

-- The caches are contexts of their own under "pg_coord caches" (by name and
-- count: the view's parent and level columns differ between majors).
SELECT coord.lock('/mem/held');
SELECT name, count(*) FROM pg_backend_memory_contexts
WHERE name LIKE 'pg_coord%' GROUP BY name ORDER BY name COLLATE "C";
SELECT coord.unlock_all();

-- The lock-name cache is forgotten when a transaction that registered names
-- aborts; its strings go with it, and nothing accumulates in
-- TopMemoryContext (the old code leaked each path there).
CREATE FUNCTION pg_temp.top_bytes() RETURNS bigint LANGUAGE sql AS $$
  SELECT total_bytes FROM pg_backend_memory_contexts WHERE name = 'TopMemoryContext'
$$;
CREATE FUNCTION pg_temp.aborted_names(n int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1 .. n LOOP
    BEGIN
      PERFORM coord.xact_lock('/mem/leak/' || repeat('x', 200) || i);
      RAISE EXCEPTION 'roll back';
    EXCEPTION WHEN raise_exception THEN NULL;
    END;
  END LOOP;
END $$;
SELECT pg_temp.aborted_names(200);
CREATE TEMP TABLE mem_before AS SELECT pg_temp.top_bytes() AS b;
SELECT pg_temp.aborted_names(3000);
SELECT pg_temp.top_bytes() - b < 65536 AS top_memory_context_did_not_grow FROM mem_before;
SELECT count(*) AS names_rolled_back FROM coord.lock_names WHERE path LIKE '/mem/leak/%';

-- The completions' history map (jobs_finish.c) is a context of its own,
-- reset and built again, not grown, after coord.job_history's relcache entry
-- is invalidated (ANALYZE of a table that gained rows).
SELECT coord.enqueue('mem_arch') > 0 AS enqueued;
SELECT coord.complete(id, token) FROM coord.claim('mem_arch');
SELECT count(*) AS archive_map_contexts FROM pg_backend_memory_contexts
WHERE name = 'pg_coord job archive map';
CREATE TEMP TABLE arch_before AS
SELECT total_bytes AS b FROM pg_backend_memory_contexts WHERE name = 'pg_coord job archive map';
DO $$
BEGIN
  FOR i IN 1 .. 50 LOOP
    PERFORM coord.enqueue('mem_arch');
    PERFORM coord.complete(id, token) FROM coord.claim('mem_arch');
    ANALYZE coord.job_history;
  END LOOP;
END $$;
SELECT count(*) AS archive_map_contexts, max(total_bytes) <= (SELECT b FROM arch_before) AS did_not_grow
FROM pg_backend_memory_contexts WHERE name = 'pg_coord job archive map';
