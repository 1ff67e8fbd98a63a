-- pgTAP: the job queue's surface, key behaviour, and every error with its SQLSTATE.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = warning;
BEGIN;
SELECT plan(61);

SELECT function_returns('coord', 'enqueue',
       ARRAY['text', 'jsonb', 'timestamp with time zone', 'integer', 'text', 'text', 'integer', 'text',
             'text', 'integer', 'timestamp with time zone', 'bigint[]', 'text', 'bigint', 'text'], 'bigint');
SELECT function_returns('coord', 'enqueue_many',
       ARRAY['text', 'jsonb[]', 'timestamp with time zone', 'integer', 'text', 'integer',
             'text', 'integer', 'timestamp with time zone', 'bigint[]', 'text', 'bigint', 'text'], 'setof bigint');
SELECT function_returns('coord', 'claim',
       ARRAY['text', 'integer', 'interval', 'text', 'boolean', 'integer', 'integer', 'text'], 'setof coord.claimed_job');
SELECT function_returns('coord', 'complete', ARRAY['bigint', 'bigint', 'jsonb'], 'boolean');
SELECT function_returns('coord', 'complete_many', ARRAY['bigint[]', 'bigint[]'], 'integer');
SELECT function_returns('coord', 'fail', ARRAY['bigint', 'bigint', 'text', 'interval', 'boolean'], 'text');
SELECT function_returns('coord', 'heartbeat', ARRAY['bigint', 'bigint', 'interval'], 'timestamp with time zone');
SELECT function_returns('coord', 'cancel', ARRAY['bigint'], 'boolean');
SELECT function_returns('coord', 'retry', ARRAY['bigint'], 'boolean');
SELECT function_returns('coord', 'job_state', ARRAY['bigint'], 'text');
SELECT function_returns('coord', 'mark_queued',
       ARRAY['text', 'text', 'jsonb', 'timestamp with time zone', 'integer', 'text', 'integer'], 'bigint');
SELECT has_type('coord', 'claimed_job', 'type coord.claimed_job');
SELECT is((SELECT array_agg(attname::text ORDER BY attnum) FROM pg_attribute
            WHERE attrelid = 'coord.claimed_job'::regclass AND attnum > 0),
          ARRAY['id', 'queue', 'payload', 'attempt', 'token', 'lease_until', 'key', 'group_key', 'host', 'run_at', 'trace'],
          'claimed_job has the contract''s columns');
SELECT has_view('coord', 'jobs', 'view coord.jobs');
SELECT has_view('coord', 'queue_stats', 'view coord.queue_stats');
SELECT ok((SELECT array_agg(attname::text) FROM pg_attribute WHERE attrelid = 'coord.jobs'::regclass AND attnum > 0)
          @> ARRAY['id', 'queue', 'state', 'payload', 'run_at', 'priority', 'key', 'group_key', 'host', 'attempt',
                   'max_attempts', 'lease_until', 'last_error'], 'coord.jobs has the contract''s columns');
SELECT ok((SELECT array_agg(attname::text) FROM pg_attribute WHERE attrelid = 'coord.queue_stats'::regclass AND attnum > 0)
          @> ARRAY['queue', 'ready', 'scheduled', 'running', 'dead', 'done_last_hour', 'oldest_ready_age'],
          'coord.queue_stats has the contract''s columns');
-- An untyped literal payload is never ambiguous (enqueue_many has its own name).
SELECT lives_ok($$SELECT coord.enqueue('tap', '{"a":1}')$$, 'enqueue with an untyped literal');

-- Behaviour.
SELECT is((SELECT count(*)::int FROM coord.claim('tap', 5)), 1, 'claim takes the due job');
SELECT is((SELECT count(*)::int FROM coord.claim('tap', 5)), 0, 'and not twice');
SELECT is((SELECT state FROM coord.jobs WHERE queue = 'tap'), 'running', 'running while claimed');
SELECT is(coord.complete_many(ARRAY(SELECT id FROM coord.job WHERE queue = 'tap'),
                               ARRAY(SELECT token FROM coord.job WHERE queue = 'tap')), 1, 'batch complete');
SELECT is((SELECT state FROM coord.jobs WHERE queue = 'tap'), 'done', 'done after complete');
SELECT is(coord.job_state(coord.enqueue('tap', run_at => now() + interval '1 day')), 'scheduled', 'future job is scheduled');
SELECT is((SELECT scheduled FROM coord.queue_stats WHERE queue = 'tap'), 1::bigint, 'queue_stats counts it');

-- Errors.
SELECT throws_ok($$SELECT coord.enqueue(NULL)$$, '22004', 'queue must not be null', 'enqueue queue NULL');
SELECT throws_ok($$SELECT coord.enqueue('')$$, '22023', NULL, 'enqueue empty queue');
SELECT throws_ok($$SELECT coord.enqueue('a b')$$, '22023', 'invalid queue name "a b"', 'enqueue bad queue');
SELECT throws_ok($$SELECT coord.enqueue(repeat('q', 49))$$, '22023', NULL, 'enqueue long queue');
SELECT throws_ok($$SELECT coord.enqueue('q', NULL)$$, '22004', 'payload must not be null', 'enqueue payload NULL');
SELECT throws_ok($$SELECT coord.enqueue('q', priority => NULL)$$, '22004', NULL, 'enqueue priority NULL');
SELECT throws_ok($$SELECT coord.enqueue('q', max_attempts => NULL)$$, '22004', NULL, 'enqueue max_attempts NULL');
SELECT throws_ok($$SELECT coord.enqueue('q', max_attempts => -1)$$, '22023', NULL, 'enqueue negative max_attempts');
SELECT throws_ok($$SELECT coord.enqueue('q', key => '')$$, '22023', NULL, 'enqueue empty key');
SELECT throws_ok($$SELECT coord.enqueue('q', group_key => repeat('g', 1025))$$, '22023', NULL, 'enqueue long group_key');
SELECT throws_ok($$SELECT coord.enqueue('q', host => '')$$, '22023', NULL, 'enqueue empty host');
SELECT throws_ok($$SELECT coord.enqueue('q', jsonb_build_object('x', repeat('x', 1100000)))$$, '54000',
                 'job payload is too large', 'oversized payload');
SELECT throws_ok($$SELECT coord.enqueue_many('q', NULL)$$, '22004', NULL, 'enqueue_many NULL');
SELECT throws_ok($$SELECT coord.enqueue_many('q', ARRAY['{}', NULL]::jsonb[])$$, '22004', NULL, 'enqueue_many NULL element');
SELECT throws_ok($$SELECT coord.enqueue_many('q', ARRAY[['{}'], ['{}']]::jsonb[])$$, '2202E', NULL, 'enqueue_many 2-D');
SELECT throws_ok($$SELECT coord.enqueue_many('q', array_fill('{}'::jsonb, ARRAY[10001]))$$, '54000',
                 'too many payloads for coord.enqueue_many', 'enqueue_many of more than 10000 payloads');
SELECT is((SELECT count(*)::integer FROM coord.enqueue_many('q-10k', array_fill('{}'::jsonb, ARRAY[10000]))), 10000,
          'enqueue_many of 10000 payloads');
SELECT throws_ok($$SELECT coord.claim(NULL)$$, '22004', NULL, 'claim queue NULL');
SELECT throws_ok($$SELECT coord.claim('q', -1)$$, '22023', NULL, 'claim negative n');
SELECT throws_ok($$SELECT coord.claim('q', 10001)$$, '22023', NULL, 'claim huge n');
SELECT throws_ok($$SELECT coord.claim('q', NULL)$$, '22004', NULL, 'claim n NULL');
SELECT throws_ok($$SELECT coord.claim('q', 1, '-5 minutes')$$, '22023', NULL, 'claim negative lease');
SELECT throws_ok($$SELECT coord.claim('q', 1, NULL)$$, '22004', NULL, 'claim lease NULL');
SELECT throws_ok($$SELECT coord.claim('q', session_bound => NULL)$$, '22004', NULL, 'claim session_bound NULL');
SELECT throws_ok($$SELECT coord.claim('q', partitions => 4)$$, '22004', NULL, 'claim partitions alone');
SELECT throws_ok($$SELECT coord.claim('q', partition => -1, partitions => 4)$$, '22023', NULL, 'claim bad partition');
SELECT throws_ok($$SELECT coord.claim('q', partition => 0, partitions => 0)$$, '22023', NULL, 'claim zero partitions');
SELECT throws_ok($$SELECT coord.complete(1, NULL)$$, '22004', NULL, 'complete token NULL');
SELECT throws_ok($$SELECT coord.complete_many(ARRAY[1], ARRAY[1, 2])$$, '2202E', NULL, 'complete lengths differ');
SELECT throws_ok($$SELECT coord.fail(NULL, 1)$$, '22004', NULL, 'fail id NULL');
SELECT throws_ok($$SELECT coord.fail(1, 1, 'x', '-1 s')$$, '22023', NULL, 'fail negative retry_after');
SELECT throws_ok($$SELECT coord.heartbeat(1, 1, '-1 s')$$, '22023', NULL, 'heartbeat negative lease');
SELECT throws_ok($$SELECT coord.cancel(NULL)$$, '22004', NULL, 'cancel NULL');
SELECT throws_ok($$SELECT coord.retry(NULL)$$, '22004', NULL, 'retry NULL');
SELECT throws_ok($$SELECT coord.purge_jobs('-1 s')$$, '22023', NULL, 'purge negative');
SELECT throws_ok($$SELECT coord.mark_queued('nobody-requested', 'q')$$, '55000', NULL, 'mark_queued job without request');

SELECT * FROM finish();
ROLLBACK;
