-- pgTAP: flow control (docs/flow-control.md): the functions and views of
-- DESIGN 3.8, their argument errors with SQLSTATEs, the grants per role,
-- concurrency and rate limits, pauses, fail's pause_key, snoozes and expiry,
-- as one session sees them (several sessions: test/specs/iso_limits*.spec).
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = error;
BEGIN;
SELECT plan(136);

-- The contract's functions and views.
SELECT function_returns('coord', 'set_limit',
       ARRAY['text', 'integer', 'integer', 'interval', 'integer', 'boolean'], 'void');
SELECT function_returns('coord', 'drop_limit', ARRAY['text', 'boolean'], 'boolean');
SELECT function_returns('coord', 'pause', ARRAY['text', 'timestamp with time zone', 'text'], 'boolean');
SELECT function_returns('coord', 'resume', ARRAY['text', 'text'], 'boolean');
SELECT function_returns('coord', 'next_due', ARRAY['text'], 'timestamp with time zone');
SELECT function_returns('coord', 'fail', ARRAY['bigint', 'bigint', 'text', 'interval', 'boolean'], 'text');
SELECT function_returns('coord', 'enqueue',
       ARRAY['text', 'jsonb', 'timestamp with time zone', 'integer', 'text', 'text', 'integer', 'text',
             'text', 'integer', 'timestamp with time zone', 'bigint[]', 'text', 'bigint', 'text'], 'bigint');
SELECT function_returns('coord', 'enqueue_many',
       ARRAY['text', 'jsonb[]', 'timestamp with time zone', 'integer', 'text', 'integer',
             'text', 'integer', 'timestamp with time zone', 'bigint[]', 'text', 'bigint', 'text'], 'setof bigint');
SELECT is((SELECT count(*)::integer FROM pg_proc WHERE pronamespace = 'coord'::regnamespace
            AND proname IN ('enqueue', 'enqueue_many', 'fail')), 3, 'no old overloads of enqueue, enqueue_many, fail');
SELECT has_view('coord', 'limits', 'view coord.limits');
SELECT columns_are('coord', 'limits', ARRAY['queue', 'limit_key', 'concurrency', 'running', 'rate', 'per',
       'burst', 'tokens', 'paused_until']);
SELECT has_column('coord', 'jobs', 'limit_key', 'coord.jobs has limit_key');
SELECT has_column('coord', 'jobs', 'snoozes', 'coord.jobs has snoozes');
SELECT has_column('coord', 'jobs', 'expires_at', 'coord.jobs has expires_at');
SELECT has_column('coord', 'queue_stats', 'paused_until', 'coord.queue_stats has paused_until');
SELECT has_column('coord', 'queue_stats', 'limited_keys', 'coord.queue_stats has limited_keys');
SELECT has_column('coord', 'job_history', 'limit_key', 'the history keeps limit_key');
SELECT is((SELECT proparallel FROM pg_proc
            WHERE oid = 'coord.set_limit(text,integer,integer,interval,integer,boolean)'::regprocedure),
          'u', 'set_limit is parallel unsafe');

-- Grants: limits and pauses are coord_admin's; workers fail (with pause_key) and ask next_due.
SELECT ok(has_function_privilege('coord_admin', 'coord.set_limit(text,integer,integer,interval,integer,boolean)', 'EXECUTE'),
          'coord_admin may set limits');
SELECT ok(NOT has_function_privilege('coord_worker', 'coord.set_limit(text,integer,integer,interval,integer,boolean)', 'EXECUTE'),
          'coord_worker may not set limits');
SELECT ok(NOT has_function_privilege('coord_monitor', 'coord.set_limit(text,integer,integer,interval,integer,boolean)', 'EXECUTE'),
          'coord_monitor may not set limits');
SELECT ok(has_function_privilege('coord_admin', 'coord.drop_limit(text,boolean)', 'EXECUTE'), 'coord_admin may drop limits');
SELECT ok(NOT has_function_privilege('coord_worker', 'coord.drop_limit(text,boolean)', 'EXECUTE'), 'coord_worker may not drop limits');
SELECT ok(has_function_privilege('coord_admin', 'coord.pause(text,timestamptz,text)', 'EXECUTE'), 'coord_admin may pause');
SELECT ok(NOT has_function_privilege('coord_worker', 'coord.pause(text,timestamptz,text)', 'EXECUTE'), 'coord_worker may not pause');
SELECT ok(has_function_privilege('coord_admin', 'coord.resume(text,text)', 'EXECUTE'), 'coord_admin may resume');
SELECT ok(NOT has_function_privilege('coord_worker', 'coord.resume(text,text)', 'EXECUTE'), 'coord_worker may not resume');
SELECT ok(has_function_privilege('coord_worker', 'coord.fail(bigint,bigint,text,interval,boolean)', 'EXECUTE'),
          'coord_worker may fail with pause_key');
SELECT ok(has_function_privilege('coord_worker', 'coord.next_due(text)', 'EXECUTE'), 'coord_worker may ask next_due');
SELECT ok(has_function_privilege('coord_monitor', 'coord.next_due(text)', 'EXECUTE'), 'coord_monitor may ask next_due');
SELECT ok(has_function_privilege('coord_worker', 'coord.job_snoozes(bigint)', 'EXECUTE'), 'coord_worker may read snoozes');
SELECT ok(NOT has_function_privilege('public', 'coord.next_due(text)', 'EXECUTE'), 'PUBLIC may not ask next_due');
SELECT ok(NOT has_function_privilege('public', 'coord.pause(text,timestamptz,text)', 'EXECUTE'), 'PUBLIC may not pause');
SELECT ok(has_table_privilege('coord_monitor', 'coord.limits', 'SELECT'), 'coord_monitor reads coord.limits');
SELECT ok(has_table_privilege('coord_admin', 'coord.limits', 'SELECT'), 'coord_admin reads coord.limits');
SELECT ok(NOT has_table_privilege('coord_worker', 'coord.limits', 'SELECT'), 'coord_worker does not');
SELECT ok(has_column_privilege('coord_monitor', 'coord.jobs', 'snoozes', 'SELECT'), 'coord_monitor reads coord.jobs.snoozes');
SELECT ok(NOT has_table_privilege('coord_admin', 'coord.job_limit', 'SELECT'), 'the tables are granted to no one');
SELECT ok(NOT has_table_privilege('coord_monitor', 'coord.job_running', 'SELECT'), 'nor the running claims');

CREATE ROLE tap_l_worker IN ROLE coord_worker;
SET ROLE tap_l_worker;
SELECT throws_ok($$SELECT coord.set_limit('lq', 1)$$, '42501', NULL, 'a worker calling set_limit is refused');
SELECT throws_ok($$SELECT coord.pause('lq')$$, '42501', NULL, 'a worker calling pause is refused');
RESET ROLE;

-- Arguments.
SELECT throws_ok($$SELECT coord.set_limit(NULL, 1)$$, '22004', 'queue must not be null', 'set_limit queue NULL');
SELECT throws_ok($$SELECT coord.set_limit('lq', 0)$$, '22023', 'concurrency must be positive', 'concurrency 0');
SELECT throws_ok($$SELECT coord.set_limit('lq', -3)$$, '22023', 'concurrency must be positive', 'concurrency negative');
SELECT throws_ok($$SELECT coord.set_limit('lq', rate => 0)$$, '22023', 'rate must be positive', 'rate 0');
SELECT throws_ok($$SELECT coord.set_limit('lq', rate => 5, burst => 0)$$, '22023', 'burst must be positive', 'burst 0');
SELECT throws_ok($$SELECT coord.set_limit('lq', rate => 5, per => '0 s')$$, '22023', NULL, 'per 0');
SELECT throws_ok($$SELECT coord.set_limit('lq', rate => 5, per => '-1 s')$$, '22023', NULL, 'per negative');
SELECT throws_ok($$SELECT coord.set_limit('lq', rate => 5, per => NULL)$$, '22004', 'per must not be null', 'per NULL');
SELECT throws_ok($$SELECT coord.set_limit('lq', 1, per_key => NULL)$$, '22004', 'per_key must not be null', 'per_key NULL');
SELECT throws_ok($$SELECT coord.set_limit('lq', burst => 3)$$, '22023', 'burst needs a rate', 'burst without rate');
SELECT throws_ok($$SELECT coord.set_limit('bad name!', 1)$$, '22023', NULL, 'a malformed queue name');
SELECT throws_ok($$SELECT coord.drop_limit(NULL)$$, '22004', NULL, 'drop_limit queue NULL');
SELECT throws_ok($$SELECT coord.drop_limit('lq', NULL)$$, '22004', NULL, 'drop_limit per_key NULL');
SELECT throws_ok($$SELECT coord.pause(NULL)$$, '22004', NULL, 'pause queue NULL');
SELECT throws_ok($$SELECT coord.pause('lq', 'infinity')$$, '22023', 'until must be finite', 'pause until infinity');
SELECT throws_ok($$SELECT coord.pause('lq', NULL, '')$$, '22023', NULL, 'pause of an empty key');
SELECT throws_ok($$SELECT coord.resume(NULL)$$, '22004', NULL, 'resume queue NULL');
SELECT throws_ok($$SELECT coord.resume('never-heard-of')$$, '42704', 'queue "never-heard-of" does not exist',
                 'resume of an unknown queue');
SELECT throws_ok($$SELECT coord.next_due(NULL)$$, '22004', NULL, 'next_due queue NULL');
SELECT throws_ok($$SELECT coord.enqueue('lq', '{}', limit_key => '')$$, '22023', NULL, 'an empty limit_key');
SELECT throws_ok($$SELECT coord.enqueue('lq', '{}', max_snoozes => NULL)$$, '22004', 'max_snoozes must not be null',
                 'max_snoozes NULL');
SELECT throws_ok($$SELECT coord.enqueue('lq', '{}', max_snoozes => -1)$$, '22023', NULL, 'max_snoozes negative');
SELECT throws_ok($$SELECT coord.enqueue_many('lq', ARRAY['{}'::jsonb], max_snoozes => NULL)$$, '22004', NULL,
                 'enqueue_many max_snoozes NULL');
SELECT throws_ok($$SELECT coord.fail(1, 1, 'x', NULL, pause_key => true)$$, '22004', 'pause_key needs retry_after',
                 'pause_key without retry_after');
SELECT throws_ok($$SELECT coord.fail(1, 1, 'x', '1 s', pause_key => NULL)$$, '22004', NULL, 'pause_key NULL');

-- Old calls keep working: positional enqueue of 0.2.0, and the defaults.
SELECT ok(coord.enqueue('lq-old', '{}', NULL, 0, NULL, NULL, 25, NULL) > 0, 'an 8-argument enqueue still works');
SELECT is((SELECT row(limit_key, snoozes, expires_at)::text FROM coord.jobs WHERE queue = 'lq-old'),
          row(NULL::text, 0, NULL::timestamptz)::text, 'defaults: no limit_key, no snoozes, no deadline');
SELECT is((SELECT max_snoozes FROM coord.job WHERE queue = 'lq-old'), 100, 'max_snoozes defaults to 100');

-- Concurrency per key: 2 of each key run, the others wait; a complete frees a slot.
SELECT lives_ok($$SELECT coord.set_limit('lc', concurrency => 2, per_key => true)$$, 'a per-key concurrency limit');
SELECT count(*) FROM (SELECT coord.enqueue('lc', jsonb_build_object('i', g), limit_key => k)
                        FROM generate_series(1, 4) g, (VALUES ('a'), ('b')) AS v(k)) s;
CREATE TEMP TABLE lc_claimed AS SELECT c.id, c.token, j.limit_key FROM coord.claim('lc', 10) c JOIN coord.job j USING (id);
SELECT is((SELECT string_agg(limit_key || ':' || n, ',' ORDER BY limit_key)
             FROM (SELECT limit_key, count(*) n FROM lc_claimed GROUP BY 1) s), 'a:2,b:2',
          'a claim of 10 takes 2 jobs of each key');
SELECT is((SELECT count(*)::integer FROM coord.claim('lc', 10)), 0, 'and the next claim none');
SELECT is((SELECT string_agg(limit_key || ':' || running || '/' || concurrency, ',' ORDER BY limit_key)
             FROM coord.limits WHERE queue = 'lc'), 'a:2/2,b:2/2', 'coord.limits shows the running claims');
SELECT is((SELECT limited_keys FROM coord.queue_stats WHERE queue = 'lc'), 2::bigint, 'queue_stats: 2 keys at their limit');
SELECT ok(coord.complete(id, token), 'a job of key a completes') FROM lc_claimed WHERE limit_key = 'a' LIMIT 1;
SELECT is((SELECT string_agg(j.limit_key, ',') FROM coord.claim('lc', 10) c JOIN coord.job j USING (id)), 'a',
          'its slot is taken by one more job of key a');
SELECT ok(coord.next_due('lc') >= now(), 'next_due of a full queue is a time to look again');

-- A queue-wide limit, changed: takes effect for the next claim.
SELECT coord.set_limit('lw', concurrency => 1);
SELECT count(*) FROM (SELECT coord.enqueue('lw', '{}') FROM generate_series(1, 3)) s;
SELECT is((SELECT count(*)::integer FROM coord.claim('lw', 3)), 1, 'a queue-wide limit of 1: one claim');
SELECT coord.set_limit('lw', concurrency => 2);
SELECT is((SELECT count(*)::integer FROM coord.claim('lw', 3)), 1, 'raised to 2: one more');
SELECT ok(coord.drop_limit('lw'), 'drop_limit says there was one');
SELECT ok(NOT coord.drop_limit('lw'), 'and then none');
SELECT is((SELECT count(*)::integer FROM coord.claim('lw', 3)), 1, 'without the limit the last job is claimed');

-- Rate: a bucket of burst 3 refilled at 1 per hour gives 3 claims, then none.
SELECT coord.set_limit('lr', rate => 1, per => '1 hour', burst => 3);
SELECT count(*) FROM (SELECT coord.enqueue('lr', '{}') FROM generate_series(1, 5)) s;
SELECT is((SELECT count(*)::integer FROM coord.claim('lr', 5)), 3, 'the burst: 3 claims');
SELECT is((SELECT count(*)::integer FROM coord.claim('lr', 5)), 0, 'then the bucket is empty');
SELECT ok((SELECT tokens < 1 FROM coord.limits WHERE queue = 'lr' AND limit_key IS NULL), 'coord.limits shows its tokens');
SELECT ok(coord.next_due('lr') > now() + interval '50 minutes', 'next_due is the refill, about an hour on');

-- Pause and resume of a queue and of a key.
SELECT count(*) FROM (SELECT coord.enqueue('lp', '{}', limit_key => 'k1'), coord.enqueue('lp', '{}', limit_key => 'k2')) s;
SELECT ok(coord.pause('lp'), 'pause a queue');
SELECT ok(NOT coord.pause('lp'), 'pausing it again says it was paused');
SELECT is((SELECT count(*)::integer FROM coord.claim('lp', 5)), 0, 'a paused queue gives nothing');
SELECT is(coord.next_due('lp'), NULL, 'next_due of a queue paused until resumed is NULL');
SELECT is((SELECT paused_until FROM coord.queue_stats WHERE queue = 'lp'), 'infinity'::timestamptz,
          'queue_stats shows the pause');
SELECT ok(coord.resume('lp'), 'resume it');
SELECT ok(NOT coord.resume('lp'), 'resuming again says it was not paused');
SELECT ok(coord.pause('lp', clock_timestamp() + interval '1 hour', 'k1'), 'pause key k1 for an hour');
SELECT is((SELECT string_agg(j.limit_key, ',') FROM coord.claim('lp', 5) c JOIN coord.job j USING (id)), 'k2',
          'only the other key is claimed');
SELECT ok(coord.resume('lp', 'k1'), 'resume key k1');
SELECT is((SELECT string_agg(j.limit_key, ',') FROM coord.claim('lp', 5) c JOIN coord.job j USING (id)), 'k1',
          'now k1 is claimed');

-- fail(..., pause_key): the whole key cools down, no attempt used, a snooze counted.
SELECT count(*) FROM (SELECT coord.enqueue('l429', '{}', limit_key => 'site', max_snoozes => 1),
                             coord.enqueue('l429', '{}', limit_key => 'site'),
                             coord.enqueue('l429', '{}', limit_key => 'other')) s;
CREATE TEMP TABLE l429 AS SELECT c.id, c.token, c.attempt FROM coord.claim('l429', 1) c;
SELECT is(coord.fail(id, token, 'HTTP 429', '1 hour', pause_key => true), 'scheduled', 'a 429 with pause_key')
  FROM l429;
SELECT ok((SELECT paused_until > now() + interval '50 minutes' FROM coord.limits
            WHERE queue = 'l429' AND limit_key = 'site'), 'the key is paused for retry_after');
SELECT is((SELECT string_agg(j.limit_key, ',') FROM coord.claim('l429', 5) c JOIN coord.job j USING (id)), 'other',
          'no job of the paused key is claimed, the other key is');
SELECT is((SELECT row(attempt, snoozes)::text FROM coord.jobs WHERE id = (SELECT id FROM l429)),
          row(0, 1)::text, 'no attempt used, one snooze counted');
SELECT is(coord.job_snoozes((SELECT id FROM l429)), 1, 'coord.job_snoozes says so');

-- Snoozes are bounded: past max_snoozes the job dies, saying why (a job
-- claimed in this transaction is not claimed again in it: max_snoozes 0).
SELECT ok(coord.enqueue('lsn', '{}', max_snoozes => 0) > 0, 'a job that may not snooze');
CREATE TEMP TABLE lsn AS SELECT c.id, c.token FROM coord.claim('lsn', 1) c;
SELECT is(coord.fail(id, token, 'HTTP 429', '1 s'), 'dead', 'its first snooze kills it') FROM lsn;
SELECT is((SELECT last_error FROM coord.jobs WHERE id = (SELECT id FROM lsn)),
          'snoozed 0 times (max_snoozes 0): HTTP 429', 'last_error says it was snoozed too often');
SELECT is((SELECT row(state, attempt, max_snoozes)::text FROM coord.job_history WHERE id = (SELECT id FROM lsn)),
          row('dead', 1, 0)::text, 'the history keeps max_snoozes');

-- Past expires_at the job is dead: at a claim, and at a fail whose retry would come after it.
SELECT ok(coord.enqueue('le', '{}', expires_at => now() - interval '1 s') > 0, 'a job already expired');
SELECT is((SELECT count(*)::integer FROM coord.claim('le', 1)), 0, 'is not claimed');
SELECT is((SELECT state || ': ' || last_error FROM coord.jobs WHERE queue = 'le'), 'dead: expired: past its expires_at',
          'it died, saying why');
SELECT ok(coord.enqueue('le2', '{}', expires_at => clock_timestamp() + interval '1 minute') > 0, 'a job with a minute left');
SELECT is(coord.fail(id, token, 'busy', '1 hour'), 'dead', 'a retry after its deadline kills it') FROM coord.claim('le2', 1);
SELECT matches((SELECT last_error FROM coord.jobs WHERE queue = 'le2'), '^expired', 'last_error says it expired');

-- Bounds (issue 23): retry_after is at most coord.max_retry_after (superuser,
-- 1 hour by default), with pause_key or without; bucket times are finite.
SELECT is(current_setting('coord.max_retry_after', true), '1h', 'coord.max_retry_after defaults to an hour');
SELECT count(*) FROM (SELECT coord.enqueue('lmax', '{}', limit_key => 'site')) s;
CREATE TEMP TABLE lmax AS SELECT c.id, c.token FROM coord.claim('lmax', 1) c;
SELECT throws_ok(format($$SELECT coord.fail(%s, %s, 'HTTP 429', '80000 years', pause_key => true)$$, id, token),
                 '22023', 'retry_after is longer than coord.max_retry_after', 'a pause_key of 80000 years is refused')
  FROM lmax;
SELECT is((SELECT count(*)::integer FROM coord.job_pause WHERE queue = 'lmax'), 0, 'and pauses nothing');
SELECT throws_ok(format($$SELECT coord.fail(%s, %s, 'HTTP 429', '1 hour 1 second')$$, id, token),
                 '22023', 'retry_after is longer than coord.max_retry_after', 'so is a retry_after just past the cap')
  FROM lmax;
SELECT is((SELECT lease_until IS NOT NULL FROM coord.job WHERE queue = 'lmax'), true, 'the job is still claimed');
SET LOCAL coord.max_retry_after = '1d';
SELECT is(coord.fail(id, token, 'HTTP 429', '1 hour 1 second', pause_key => true), 'scheduled',
          'under a raised cap it is taken') FROM lmax;
RESET coord.max_retry_after;
SET ROLE tap_l_worker;
SELECT throws_ok($$SET coord.max_retry_after = '1d'$$, '42501', NULL, 'only a superuser sets coord.max_retry_after');
RESET ROLE;
SELECT throws_ok($$SELECT coord.bucket_tokens(1, '-infinity', 1, '1 s', 5)$$, '22023',
                 'refilled_at must be a finite time', 'bucket_tokens refuses -infinity');
SELECT throws_ok($$SELECT coord.bucket_tokens(1, 'infinity', 1, '1 s', 5)$$, '22023',
                 'refilled_at must be a finite time', 'and infinity');
SELECT is(coord.bucket_tokens(1, now() - interval '1 year', 1, '1 s', 5), 5::float8, 'a finite time refills');
-- A claim kills at most 32 expired jobs on its way, then stops; the next
-- claim goes on from there.  It used to kill, and lock, the whole backlog
-- to find its one job (spent jobs too: test/crash/expired_backlog.sh, as a
-- claim's own locks hide them from the claims of its transaction).
CREATE TEMP TABLE lock_count AS SELECT 0 AS n;
CREATE FUNCTION pg_temp.locks_held() RETURNS integer LANGUAGE sql AS
  $$SELECT count(*)::integer FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory'$$;
SELECT is((SELECT count(*)::integer FROM coord.enqueue_many('lx', array_fill('{}'::jsonb, ARRAY[100]),
                                                             expires_at => now() - interval '1 s')), 100, '100 expired jobs');
SELECT ok(coord.enqueue('lx', '{"live": 1}') > 0, 'a live job behind them');
UPDATE lock_count SET n = pg_temp.locks_held();
SELECT is((SELECT count(*)::integer FROM coord.claim('lx', 1)), 0, 'a claim stops after killing 32 of them');
SELECT cmp_ok(pg_temp.locks_held() - (SELECT n FROM lock_count), '<=', 33, 'holding at most 33 more lock entries');
SELECT is((SELECT count(*)::integer FROM coord.job_history WHERE queue = 'lx' AND state = 'dead'
             AND last_error = 'expired: past its expires_at'), 32, 'they died, saying why');
SELECT is((SELECT count(*)::integer FROM coord.claim('lx', 1)), 0, 'the next claim kills 32 more');
SELECT is((SELECT count(*)::integer FROM coord.job WHERE queue = 'lx'), 37, '36 expired jobs left, and the live one');

-- coord.tick kills the rest, at most 10,000 of a kind per tick.
SELECT is((SELECT count(*)::integer FROM coord.enqueue_many('lx', array_fill('{}'::jsonb, ARRAY[10000]),
                                                             expires_at => now() - interval '1 s')), 10000, '10000 more');
CREATE TEMP TABLE ticked AS SELECT coord.tick() AS n;
SELECT ok((SELECT n BETWEEN 1000 AND 10000 FROM ticked), 'a tick kills at most 10,000 expired jobs');
SELECT is((SELECT count(*)::integer FROM coord.job WHERE queue = 'lx' AND expires_at IS NOT NULL),
          10036 - (SELECT n FROM ticked), 'the rest wait for the next tick');

-- The expired jobs a claim kills take no token of its queue's rate limit:
-- only the job it claims does (each took one).
SELECT coord.set_limit('lxr', rate => 10, per => '1 hour');
SELECT is((SELECT count(*)::integer FROM coord.enqueue_many('lxr', array_fill('{}'::jsonb, ARRAY[5]),
                                                             expires_at => now() - interval '1 s')), 5, 'five expired jobs');
SELECT ok(coord.enqueue('lxr', '{"live": true}') > 0, 'and a live one behind them');
SELECT is((SELECT payload FROM coord.claim('lxr', 1)), '{"live": true}'::jsonb,
          'a claim kills the expired jobs and takes the live one');
SELECT is((SELECT round(tokens)::integer FROM coord.job_bucket WHERE queue = 'lxr' AND limit_key = ''), 9,
          'one token taken, for the job claimed');

SELECT * FROM finish();
ROLLBACK;
