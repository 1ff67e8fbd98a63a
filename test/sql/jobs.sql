-- Jobs: what one session can observe (races are in test/specs/iso_jobs_*).
\set VERBOSITY terse
SET client_min_messages = warning;
CREATE FUNCTION pg_temp.claim1(q text, sb boolean DEFAULT false, h text DEFAULT NULL)
RETURNS TABLE (payload jsonb, attempt integer, leased boolean)
LANGUAGE sql AS $$
  SELECT payload, attempt, lease_until IS NOT NULL FROM coord.claim(q, 1, session_bound => sb, host => h)
$$;

-- Claim order: highest priority first, then oldest run_at, then id; future jobs wait.
SELECT count(*) FROM (
  SELECT coord.enqueue('order', '{"n":"low-old"}', run_at => now() - interval '2 min', priority => 0),
         coord.enqueue('order', '{"n":"high"}', priority => 5),
         coord.enqueue('order', '{"n":"low-older"}', run_at => now() - interval '3 min'),
         coord.enqueue('order', '{"n":"future"}', run_at => now() + interval '1 hour', priority => 9)) s;
SELECT payload->>'n' AS claimed, attempt, lease_until > now() AS leased
  FROM coord.claim('order', 10);
SELECT state, count(*) FROM coord.jobs WHERE queue = 'order' GROUP BY state ORDER BY state;

-- Dedupe by key over live jobs; a finished job's key can be used again.
SELECT coord.enqueue('dedupe', key => 'k') = coord.enqueue('dedupe', '{"other":1}', key => 'k') AS same_id;
SELECT count(*) FROM coord.job WHERE queue = 'dedupe';
SELECT coord.complete(id, token) FROM coord.claim('dedupe');
SELECT coord.enqueue('dedupe', key => 'k') <> (SELECT max(id) FROM coord.job_history) AS new_id_after_done;

-- enqueue_many returns ids in array order.
SELECT array_agg(x ORDER BY o) = array_agg(x ORDER BY x) AS ids_in_order, count(*)
  FROM coord.enqueue_many('many', ARRAY['{"i":1}', '{"i":2}', '{"i":3}']::jsonb[]) WITH ORDINALITY AS t(x, o);
SELECT count(*) FROM coord.enqueue_many('many', '{}'::jsonb[]);

-- Host targeting: a host's jobs go only to that host's claimers; untargeted ones to anyone.
SELECT count(*) FROM (SELECT coord.enqueue('hosts', '{"for":"h1"}', host => 'h1'),
                             coord.enqueue('hosts', '{"for":"any"}')) s;
SELECT payload FROM pg_temp.claim1('hosts', h => 'h2');
SELECT payload FROM pg_temp.claim1('hosts', h => 'h2');
SELECT payload FROM pg_temp.claim1('hosts');
SELECT payload FROM pg_temp.claim1('hosts', h => 'h1');

-- Hash-space partitions split the jobs: every job in exactly one of 3 segments.
SELECT count(*) FROM coord.enqueue_many('parts', array_fill('{}'::jsonb, ARRAY[30]));
SELECT sum((SELECT count(*) FROM coord.claim('parts', 100, partition => p, partitions => 3))) AS claimed_over_3
  FROM generate_series(0, 2) p;
SELECT count(*) AS left_in_parts FROM coord.jobs WHERE queue = 'parts' AND state <> 'running';

-- Group: one job of a group at a time, in enqueue order.
SELECT count(*) FROM (SELECT coord.enqueue('grp', '{"g":1}', group_key => 'A'),
                             coord.enqueue('grp', '{"g":2}', group_key => 'A'),
                             coord.enqueue('grp', '{"g":"b1"}', group_key => 'B')) s;
SELECT payload FROM coord.claim('grp', 10) ORDER BY payload::text;
SELECT coord.complete(id, token) FROM coord.jobs WHERE queue = 'grp' AND payload = '{"g":1}';
SELECT payload FROM coord.claim('grp', 10);

-- Tokens: a new one per claim; a stale token changes nothing.
SELECT coord.enqueue('tok') AS tid \gset
SELECT token AS t1 FROM coord.claim('tok', lease => '1 ms') \gset
SELECT pg_sleep(1.1);
SELECT token AS t2 FROM coord.claim('tok') \gset
SELECT :t2 > :t1 AS newer_token,
       coord.heartbeat(:tid, :t1) IS NULL AS old_heartbeat_refused,
       coord.fail(:tid, :t1, 'late') IS NULL AS old_fail_refused,
       coord.complete(:tid, :t1) AS old_complete,
       coord.job_state(:tid);
SELECT coord.heartbeat(:tid, :t2, '1 hour') > now() + interval '59 minutes' AS extended;
SELECT coord.complete(:tid, :t2, '{"r":1}') AS completed;
SELECT coord.job_state(:tid), (SELECT result FROM coord.jobs WHERE id = :tid);
SELECT coord.complete(:tid, :t2) AS completed_twice;

-- fail: backoff, then dead after max_attempts; retry brings it back; retry_after keeps the attempt.
SELECT coord.enqueue('fails', max_attempts => 2) AS fid \gset
SELECT coord.fail(id, token, 'first') FROM coord.claim('fails');
SELECT attempt, last_error, run_at > now() AS backed_off FROM coord.jobs WHERE id = :fid;
UPDATE coord.job SET run_at = now() WHERE id = :fid;
SELECT coord.fail(id, token, 'second') FROM coord.claim('fails');
SELECT coord.job_state(:fid), attempt, last_error FROM coord.jobs WHERE id = :fid;
SELECT dead FROM coord.queue_stats WHERE queue = 'fails';
SELECT coord.retry(:fid), coord.retry(:fid) AS again;
SELECT attempt, state FROM coord.jobs WHERE id = :fid;
SELECT coord.fail(id, token, 'HTTP 429', retry_after => '30 seconds') FROM coord.claim('fails');
SELECT attempt, run_at > now() + interval '29 seconds' AS delayed, last_error FROM coord.jobs WHERE id = :fid;

-- cancel: only unfinished jobs; the claimer's complete then fails.
SELECT coord.enqueue('cancel') AS cid \gset
SELECT token AS ct FROM coord.claim('cancel') \gset
SELECT coord.cancel(:cid), coord.cancel(:cid) AS again, coord.complete(:cid, :ct) AS complete_after_cancel;
SELECT coord.job_state(:cid), coord.retry(:cid) AS retry_cancelled;

-- Session-bound claims: the row stays ready, the job shows as running;
-- heartbeat answers 9999-01-01 00:00:00+00, not infinity (which drivers
-- cannot read), and in the zones furthest from UTC it is still a year
-- below 10000 (Python's datetime.MAXYEAR is 9999).
SELECT coord.enqueue('sess') AS sid \gset
SELECT token AS st FROM coord.claim('sess', session_bound => true) \gset
SELECT coord.job_state(:sid), coord.heartbeat(:sid, :st) AS hb,
       coord.heartbeat(:sid, :st) = '9999-01-01 00:00:00+00' AS hb_is_9999,
       (SELECT count(*) FROM coord.claim('sess', session_bound => true)) AS claimable_again;
SET TimeZone = 'Pacific/Kiritimati';
SELECT coord.heartbeat(:sid, :st)::text AS hb_utc_plus_14,
       extract(year FROM coord.heartbeat(:sid, :st) + interval '300 days') < 10000 AS plus_300_days_fits;
SET TimeZone = 'Etc/GMT+12';
SELECT coord.heartbeat(:sid, :st)::text AS hb_utc_minus_12;
RESET TimeZone;
SELECT coord.complete(:sid, :st);
SELECT coord.job_state(:sid);
-- ... a claim in a transaction that rolls back is given up.
SELECT coord.enqueue('sess') AS sid2 \gset
BEGIN;
SELECT count(*) FROM coord.claim('sess', session_bound => true);
ROLLBACK;
SELECT coord.job_state(:sid2), coord.job_claimed(:sid2) AS lock_held;

-- mark_queued(key, queue, ...): the job completes the request; a dead one removes it.
SELECT coord.request('page-1'), coord.mark_queued('page-1', 'crawl', '{"url":"page-1"}') IS NOT NULL AS enqueued;
SELECT coord.request_state('page-1');
SELECT coord.complete(id, token) FROM coord.claim('crawl');
SELECT coord.request_state('page-1');
SELECT coord.request('page-2'), coord.mark_queued('page-2', 'crawl', max_attempts => 1) IS NOT NULL AS enqueued;
SELECT coord.fail(id, token, 'gone') FROM coord.claim('crawl');
SELECT coord.request_state('page-2') IS NULL AS key_removed, coord.request('page-2') AS can_request_again;
SELECT coord.mark_queued('not-mine', 'crawl');

-- History retention.
SELECT count(*) > 0 AS has_history FROM coord.job_history;
SELECT coord.purge_jobs() AS purged_within_retention;
UPDATE coord.job_history SET finished_at = now() - interval '8 days';
SELECT coord.purge_jobs() > 0 AS purged_old;
SET coord.job_history_retention = '1h';
SHOW coord.job_history_retention;
RESET coord.job_history_retention;

-- Bad input.
\set VERBOSITY default
SELECT coord.enqueue(NULL);
SELECT coord.enqueue('');
SELECT coord.enqueue(repeat('q', 49));
SELECT coord.enqueue('has space');
SELECT coord.enqueue('q', NULL);
SELECT coord.enqueue('q', priority => NULL);
SELECT coord.enqueue('q', max_attempts => 0);
SELECT coord.enqueue('q', key => '');
SELECT coord.enqueue('q', host => 'bad host');
SELECT coord.enqueue('q', jsonb_build_object('big', repeat('x', 1100000)));
SELECT coord.enqueue_many('q', NULL);
SELECT coord.enqueue_many('q', ARRAY['{}', NULL]::jsonb[]);
SELECT coord.claim('q', -1);
SELECT coord.claim('q', NULL);
SELECT coord.claim('q', 1, NULL);
SELECT coord.claim('q', 1, '0');
SELECT coord.claim('q', 1, '-1 second');
SELECT coord.claim('q', partition => 1);
SELECT coord.claim('q', partition => 3, partitions => 3);
SELECT coord.complete(NULL, 1);
SELECT coord.complete_many(ARRAY[1, 2], ARRAY[1]);
SELECT coord.complete_many(ARRAY[1, NULL], ARRAY[1, 2]);
-- untyped parameters (node-postgres sends them so) find one coord.complete
PREPARE untyped_complete AS SELECT coord.complete($1, $2);
EXECUTE untyped_complete(-1, 1);
DEALLOCATE untyped_complete;
SELECT coord.fail(1, NULL);
SELECT coord.fail(1, 1, retry_after => '-1 second');
SELECT coord.heartbeat(1, 1, '0');
SELECT coord.job_state(NULL);
SELECT coord.purge_jobs('-1 day');
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT coord.claim('q');
ROLLBACK;
\set VERBOSITY terse
SELECT coord.job_state(-1) IS NULL AS unknown_job, coord.cancel(-1), coord.retry(-1),
       coord.complete(-1, 1), coord.fail(-1, 1) IS NULL AS fail_unknown, coord.heartbeat(-1, 1) IS NULL AS hb_unknown;
SELECT count(*) AS claimed_from_unknown_queue FROM coord.claim('no-such-queue');
SELECT pg_advisory_unlock_all();

-- Claims write their rows through the table AM (ClaimRow): when a page is
-- full the update is not HOT and ClaimRow inserts the index entries itself.
-- amcheck's heapallindexed finds any row version missing from an index.
-- Full pages for that (coord.job keeps room for a claimed version of each
-- row: fillfactor 45), set back after.
CREATE EXTENSION amcheck;
ALTER TABLE coord.job SET (fillfactor = 100);
SELECT count(*) AS padded FROM (
  SELECT coord.enqueue('nh', jsonb_build_object('pad', repeat('x', 1500), 'i', g), key => 'k' || g,
                       group_key => CASE WHEN g % 3 = 0 THEN 'g' || g END)
    FROM generate_series(1, 120) g) s;
BEGIN;
SELECT n_tup_upd AS upd0, n_tup_hot_upd AS hot0
  FROM pg_stat_xact_user_tables WHERE relid = 'coord.job'::regclass \gset
SELECT count(*) AS lease_claims FROM coord.claim('nh', 80);
SELECT count(*) AS session_claims FROM coord.claim('nh', 20, session_bound => true);
SELECT n_tup_upd - :upd0 AS updates, n_tup_upd - :upd0 > n_tup_hot_upd - :hot0 AS some_not_hot
  FROM pg_stat_xact_user_tables WHERE relid = 'coord.job'::regclass;
COMMIT;
ALTER TABLE coord.job SET (fillfactor = 45);
-- A claim of many jobs in one transaction prunes none of their old
-- versions: each page keeps room for a claimed version of its rows, so
-- nearly every update of a 100-job claim is HOT (at fillfactor 70 about
-- half were not, each inserting into every index of coord.job).
SELECT count(*) AS hot_jobs FROM coord.enqueue_many('hot', array_fill('{"x": 1}'::jsonb, ARRAY[100]));
BEGIN;
SELECT n_tup_upd AS upd1, n_tup_hot_upd AS hot1
  FROM pg_stat_xact_user_tables WHERE relid = 'coord.job'::regclass \gset
SELECT count(*) AS claimed_100 FROM coord.claim('hot', 100);
SELECT n_tup_upd - :upd1 AS updates, n_tup_hot_upd - :hot1 >= 90 AS nearly_all_hot
  FROM pg_stat_xact_user_tables WHERE relid = 'coord.job'::regclass;
COMMIT;
SELECT c.relname AS checked_index
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid,
       LATERAL (SELECT bt_index_check(i.indexrelid, true)) AS chk
 WHERE i.indrelid = 'coord.job'::regclass ORDER BY 1;
SET enable_seqscan = off;
SELECT count(*) AS by_key FROM coord.job WHERE queue = 'nh' AND key IS NOT NULL;
RESET enable_seqscan;
SELECT count(*) FILTER (WHERE state = 'running') AS running, count(*) AS live
  FROM coord.jobs WHERE queue = 'nh';
SELECT pg_advisory_unlock_all();
DROP EXTENSION amcheck;
