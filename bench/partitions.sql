-- bench/partitions.sql: per-call cost of partition groups, in one session
-- (psql -X -f bench/partitions.sql on a database with pg_coord; it makes
-- and drops queue bp and group bp).  Median of 5 rounds of 2000 calls each:
--   owned:      coord.owned with no membership change (one member)
--   owned, 3 members: the same in group bp3, whose two other members
--               bench/run.sh keeps alive in background sessions (without
--               them it is a 1-member group too)
--   lock read:  one lock-manager lookup, pg_try_advisory_lock + unlock
--   coord.try_lock + coord.unlock: the pair of coord calls
--   claim:      coord.claim(..., n => 1) + coord.complete, plain
--   group claim: the same with partition_group (this member owns all
--               segments of the queue's jobs: same work, plus the sync)
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SELECT coord.join('bp', 'bench', segments => 1024);
SELECT cardinality(coord.join('bp3', 'bench')) > 0 AS joined_bp3;
CREATE TEMP TABLE r (what text, us float8);
DO $$
DECLARE
  t0 timestamptz; i int; round int; j record;
BEGIN
  FOR round IN 1..5 LOOP
    t0 := clock_timestamp();
    FOR i IN 1..2000 LOOP PERFORM coord.owned('bp'); END LOOP;
    INSERT INTO r VALUES ('owned', extract(epoch FROM clock_timestamp() - t0) * 1e6 / 2000);
    t0 := clock_timestamp();
    FOR i IN 1..2000 LOOP PERFORM coord.owned('bp3'); END LOOP;
    INSERT INTO r VALUES ('owned, 3 members', extract(epoch FROM clock_timestamp() - t0) * 1e6 / 2000);
    t0 := clock_timestamp();
    FOR i IN 1..2000 LOOP PERFORM pg_try_advisory_lock(7399) AND pg_advisory_unlock(7399); END LOOP;
    INSERT INTO r VALUES ('lock read (pg_try_advisory_lock + unlock)', extract(epoch FROM clock_timestamp() - t0) * 1e6 / 2000);
    t0 := clock_timestamp();
    FOR i IN 1..2000 LOOP PERFORM coord.try_lock('/bench/p'); PERFORM coord.unlock('/bench/p'); END LOOP;
    INSERT INTO r VALUES ('coord.try_lock + coord.unlock', extract(epoch FROM clock_timestamp() - t0) * 1e6 / 2000);
  END LOOP;
END $$;
SELECT count(coord.enqueue('bp', '{}', key => 'k' || n)) FROM generate_series(1, 20000) AS n;
DO $$
DECLARE
  t0 timestamptz; i int; round int; j record;
BEGIN
  FOR round IN 1..5 LOOP
    t0 := clock_timestamp();
    FOR i IN 1..2000 LOOP
      SELECT * INTO j FROM coord.claim('bp', 1);
      PERFORM coord.complete(j.id, j.token);
    END LOOP;
    INSERT INTO r VALUES ('claim + complete', extract(epoch FROM clock_timestamp() - t0) * 1e6 / 2000);
    t0 := clock_timestamp();
    FOR i IN 1..2000 LOOP
      SELECT * INTO j FROM coord.claim('bp', 1, partition_group => 'bp');
      PERFORM coord.complete(j.id, j.token);
    END LOOP;
    INSERT INTO r VALUES ('group claim + complete', extract(epoch FROM clock_timestamp() - t0) * 1e6 / 2000);
  END LOOP;
END $$;
SELECT what, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY us)::numeric, 1) AS median_us_per_call
  FROM r GROUP BY what ORDER BY what;
SELECT coord.leave('bp'), coord.leave('bp3');
DELETE FROM coord.job WHERE queue = 'bp';
DELETE FROM coord.job_history WHERE queue = 'bp';
