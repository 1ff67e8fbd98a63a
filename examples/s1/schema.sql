-- S1: cron-driven "autonomous components" on pg_coord.
--
-- The original components found work in a batch index (SBOI), locked it in
-- ZooKeeper through Curator and wrote their results to an object store
-- (DOMS).  Here the index and the store are two tables; all coordination goes
-- through coord.* and nothing else:
--
--   /SBOI/<component>                   the component's index lock
--   /<component>/B<batch>-RT<roundtrip> one lock per batch delivery
--
-- Apply with:  psql -d <db> -f examples/s1/schema.sql   (needs CREATE EXTENSION pg_coord)

\set ON_ERROR_STOP on
SET client_min_messages = warning;

CREATE SCHEMA s1;
COMMENT ON SCHEMA s1 IS 'S1 example: batch index, result store and work log of the autonomous components';

-- The batch index: every delivered batch, once per roundtrip (a batch that
-- is delivered again after a rejection comes back with roundtrip + 1).
CREATE TABLE s1.batches (
    batch         bigint NOT NULL,
    roundtrip     integer NOT NULL CHECK (roundtrip > 0),
    registered_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    PRIMARY KEY (batch, roundtrip)
);
COMMENT ON TABLE s1.batches IS 'Stand-in for the batch index (SBOI): batches waiting to be processed';

-- The object store: one result per component and batch delivery, with the
-- fencing token of the lock holder that wrote it.
CREATE TABLE s1.results (
    component text NOT NULL,
    batch     bigint NOT NULL,
    roundtrip integer NOT NULL,
    token     bigint NOT NULL,
    worker    text NOT NULL,
    result    text NOT NULL,
    stored_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    PRIMARY KEY (component, batch, roundtrip),
    FOREIGN KEY (batch, roundtrip) REFERENCES s1.batches
);
COMMENT ON TABLE s1.results IS 'Stand-in for the object store (DOMS): one result per component and batch, with its fencing token';

-- Every time a worker starts on a batch, and how it ended: what the checks
-- for "processed exactly once" count.
CREATE TABLE s1.attempts (
    id          bigserial PRIMARY KEY,
    component   text NOT NULL,
    batch       bigint NOT NULL,
    roundtrip   integer NOT NULL,
    path        text NOT NULL,
    token       bigint NOT NULL,
    worker      text NOT NULL,
    pid         integer NOT NULL DEFAULT pg_catalog.pg_backend_pid(),
    started_at  timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    finished_at timestamptz,
    outcome     text CHECK (outcome IN ('stored', 'rejected'))
);
COMMENT ON TABLE s1.attempts IS 'Work log: one row per batch a worker started on; outcome NULL while working (or if it died)';

-- '/<component>/B<batch>-RT<roundtrip>' and back.
CREATE FUNCTION s1.batch_path(component text, batch bigint, roundtrip integer)
RETURNS text LANGUAGE sql IMMUTABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$ SELECT format('/%s/B%s-RT%s', component, batch, roundtrip) $$;
COMMENT ON FUNCTION s1.batch_path(text, bigint, integer) IS 'The lock path of one batch delivery for one component';

CREATE FUNCTION s1.parse_path(path text, OUT component text, OUT batch bigint, OUT roundtrip integer)
LANGUAGE plpgsql IMMUTABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m text[] := regexp_match(path, '^/([^/]+)/B([0-9]+)-RT([0-9]+)$');
BEGIN
    IF m IS NULL THEN
        RAISE EXCEPTION 'not a batch lock path: "%"', path
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Batch paths look like /<component>/B<batch>-RT<roundtrip>.';
    END IF;
    component := m[1];
    batch := m[2]::bigint;
    roundtrip := m[3]::integer;
END $$;
COMMENT ON FUNCTION s1.parse_path(text) IS 'Component, batch and roundtrip of a batch lock path';

-- The index query: batch paths this component has no result for yet, oldest
-- batch first.  Read under the index lock; a candidate can be stale by the
-- time its lock is taken, so workers re-check with s1.processed.
CREATE FUNCTION s1.candidates(component text, n integer DEFAULT 10)
RETURNS text[] LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT COALESCE(array_agg(s1.batch_path(component, b.batch, b.roundtrip)
                              ORDER BY b.batch, b.roundtrip), '{}')
      FROM (SELECT i.batch, i.roundtrip
              FROM s1.batches AS i
             WHERE NOT EXISTS (SELECT FROM s1.results AS r
                                WHERE r.component = candidates.component
                                  AND r.batch = i.batch AND r.roundtrip = i.roundtrip)
             ORDER BY i.batch, i.roundtrip
             LIMIT n) AS b
$$;
COMMENT ON FUNCTION s1.candidates(text, integer) IS
  'Up to n batch lock paths without a result for the component, in index order';

CREATE FUNCTION s1.processed(path text)
RETURNS boolean LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (SELECT FROM s1.results AS r, s1.parse_path(path) AS p
                    WHERE r.component = p.component AND r.batch = p.batch
                      AND r.roundtrip = p.roundtrip)
$$;
COMMENT ON FUNCTION s1.processed(text) IS 'Whether the store already holds a result for this batch path';

CREATE FUNCTION s1.begin_attempt(path text, token bigint, worker text)
RETURNS bigint LANGUAGE sql VOLATILE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
    INSERT INTO s1.attempts (component, batch, roundtrip, path, token, worker)
    SELECT p.component, p.batch, p.roundtrip, path, token, worker
      FROM s1.parse_path(path) AS p
    RETURNING id
$$;
COMMENT ON FUNCTION s1.begin_attempt(text, bigint, text) IS 'Logs that a worker holding token starts on a batch';

-- The store's write: accepted only with the newest fencing token issued for
-- the batch lock.  coord.fence_ok rejects a writer that lost its lock after
-- someone else took the batch (even before that one has written), and the
-- token comparison on the row rejects any write older than the stored one.
CREATE FUNCTION s1.store_result(path text, token bigint, worker text, result text)
RETURNS boolean LANGUAGE plpgsql VOLATILE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p  record;
    ok boolean := coord.fence_ok(path, token);
BEGIN
    SELECT * INTO p FROM s1.parse_path(path);
    IF ok THEN
        INSERT INTO s1.results AS r (component, batch, roundtrip, token, worker, result)
        VALUES (p.component, p.batch, p.roundtrip, token, worker, result)
        ON CONFLICT (component, batch, roundtrip) DO UPDATE
           SET token = excluded.token, worker = excluded.worker,
               result = excluded.result, stored_at = excluded.stored_at
         WHERE r.token < excluded.token;
        ok := FOUND;
    END IF;
    UPDATE s1.attempts AS a
       SET finished_at = clock_timestamp(),
           outcome = CASE WHEN ok THEN 'stored' ELSE 'rejected' END
     WHERE a.path = store_result.path AND a.token = store_result.token
       AND a.finished_at IS NULL;
    RETURN ok;
END $$;
COMMENT ON FUNCTION s1.store_result(text, bigint, text, text) IS
  'Stores a result if token is the newest fencing token of the batch lock; false (nothing stored) otherwise';

-- Observation for the demo and the tests, not part of any worker: finds the
-- first batch attempt after after_id, by a worker matching worker_like, whose
-- lock went away while the attempt was unfinished (its worker was killed),
-- and reports when that was seen and when another session held the lock.
-- A normal finish commits the attempt before unlocking, so a lock read first
-- and an unfinished attempt read after it mean a dead holder.  Polls
-- coord.locks every millisecond; NULLs where `timeout` ran out.
CREATE FUNCTION s1.watch_takeover(after_id bigint, worker_like text,
    timeout interval DEFAULT '30 seconds',
    OUT attempt_id bigint, OUT path text, OUT victim text,
    OUT freed_at timestamptz, OUT taken_at timestamptz, OUT taker text)
LANGUAGE plpgsql VOLATILE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + timeout;
    held text[];
    seen timestamptz;
    holder record;
BEGIN
    LOOP
        SELECT array_agg(l.path || ' ' || l.pid) INTO held
          FROM coord.locks AS l WHERE l.mode = 'exclusive' AND l.granted;
        seen := clock_timestamp();
        SELECT a.id, a.path, a.worker INTO attempt_id, path, victim
          FROM s1.attempts AS a
         WHERE a.id > after_id AND a.worker LIKE worker_like AND a.finished_at IS NULL
           AND (a.path || ' ' || a.pid) <> ALL (COALESCE(held, '{}'))
         ORDER BY a.id LIMIT 1;
        IF FOUND THEN
            freed_at := seen;
            EXIT;
        END IF;
        IF clock_timestamp() > deadline THEN RETURN; END IF;
        PERFORM pg_sleep(0.001);
        PERFORM pg_stat_clear_snapshot();   -- fresh holder names in coord.locks
    END LOOP;
    LOOP
        SELECT l.pid, l.application_name INTO holder
          FROM coord.locks AS l
         WHERE l.path = watch_takeover.path AND l.mode = 'exclusive' AND l.granted;
        IF FOUND THEN
            taken_at := clock_timestamp();
            taker := regexp_replace(holder.application_name, '^s1:', '');
            RETURN;
        END IF;
        IF clock_timestamp() > deadline THEN RETURN; END IF;
        PERFORM pg_sleep(0.001);
        PERFORM pg_stat_clear_snapshot();   -- fresh holder names in coord.locks
    END LOOP;
END $$;
COMMENT ON FUNCTION s1.watch_takeover(bigint, text, interval) IS
  'For the demo: when the batch lock of a killed worker was seen free and when another session took it';

\set schema s1
\ir ../lib/wait_until.sql
