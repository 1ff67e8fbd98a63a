-- pgTAP: the request API's surface, behaviour and every error with its SQLSTATE.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = warning;
BEGIN;
SELECT plan(41);

SELECT function_returns('coord', 'request', ARRAY['text', 'boolean', 'interval', 'interval'], 'boolean');
SELECT function_returns('coord', 'mark_queued', ARRAY['text'], 'void');
SELECT function_returns('coord', 'mark_done', ARRAY['text'], 'void');
SELECT function_returns('coord', 'release', ARRAY['text'], 'void');
SELECT function_returns('coord', 'request_state', ARRAY['text'], 'text');
SELECT function_returns('coord', 'purge_requests', ARRAY['interval'], 'bigint');
SELECT has_view('coord', 'requests', 'view coord.requests');
SELECT columns_are('coord', 'requests', ARRAY['key', 'state', 'owner_pid', 'owner_alive', 'waiters',
       'requested_at', 'queued_at', 'done_at']);
SELECT volatility_is('coord', 'request', ARRAY['text', 'boolean', 'interval', 'interval'], 'volatile');
SELECT is((SELECT proparallel FROM pg_proc
            WHERE oid = 'coord.request(text,boolean,interval,interval)'::regprocedure),
          'u', 'coord.request is parallel unsafe');

-- behaviour (one session; races are in the isolation spec)
SELECT ok(coord.request('tap/1'), 'a new key is ours');
SELECT ok(coord.request('tap/1', false, NULL, NULL), 'reentrant, positional arguments');
SELECT is(coord.request_state('tap/1'), 'requested', 'state requested');
SELECT results_eq($$SELECT state, owner_pid, owner_alive, waiters FROM coord.requests WHERE key = 'tap/1'$$,
                  $$VALUES ('requested'::text, pg_backend_pid(), true, 0::bigint)$$, 'the view shows the owner');
SELECT lives_ok($$SELECT coord.mark_queued('tap/1')$$, 'mark_queued by the owner');
SELECT is(coord.request_state('tap/1'), 'queued', 'state queued');
SELECT ok(NOT coord.request('tap/1'), 'queued answers false');
SELECT lives_ok($$SELECT coord.mark_done('tap/1')$$, 'mark_done of a queued key');
SELECT ok(NOT coord.request('tap/1'), 'done answers false');
SELECT ok(coord.request('tap/1', stale_after => '0'), 'stale done answers true');
SELECT lives_ok($$SELECT coord.release('tap/1')$$, 'release by the owner');
SELECT is(coord.request_state('tap/1'), NULL, 'released key has no state');
SELECT lives_ok($$SELECT coord.mark_done('tap/none')$$, 'mark_done without request');
UPDATE coord.request_keys SET done_at = now() - interval '2 days' WHERE key = 'tap/none';
SELECT is(coord.purge_requests('1 day'), 1::bigint, 'purge removes done keys older than the interval');
SELECT is(coord.request_state('tap/none'), NULL, 'purged');

-- errors
SELECT throws_ok($$SELECT coord.request(NULL)$$, '22004', 'key must not be null', 'request(NULL)');
SELECT throws_ok($$SELECT coord.request('k', NULL)$$, '22004', 'wait must not be null', 'wait NULL');
SELECT throws_ok($$SELECT coord.request('')$$, '22023', 'request key must not be empty', 'empty key');
SELECT throws_ok($$SELECT coord.request(repeat('k', 2049))$$, '22023', 'request key is too long', 'long key');
SELECT throws_ok($$SELECT coord.request('k', stale_after => '-1s')$$, '22023', NULL, 'negative stale_after');
SELECT throws_ok($$SELECT coord.request('k', timeout => '-1s')$$, '22023', NULL, 'negative timeout');
SELECT throws_ok($$SELECT coord.request('k', timeout => '178000000 years')$$, '22015', NULL, 'huge timeout');
SELECT throws_ok($$SELECT coord.mark_queued(NULL)$$, '22004', NULL, 'mark_queued(NULL)');
SELECT throws_ok($$SELECT coord.mark_queued('tap/never')$$, '55000',
                 'cannot queue key "tap/never": it is not requested by this session', 'mark_queued without request');
SELECT coord.mark_done('tap/d');
SELECT throws_ok($$SELECT coord.mark_queued('tap/d')$$, '55000', NULL, 'mark_queued of a done key');
SELECT throws_ok($$SELECT coord.mark_done(NULL)$$, '22004', NULL, 'mark_done(NULL)');
SELECT throws_ok($$SELECT coord.mark_done('')$$, '22023', NULL, 'mark_done empty');
SELECT throws_ok($$SELECT coord.release(NULL)$$, '22004', NULL, 'release(NULL)');
SELECT throws_ok($$SELECT coord.request_state(NULL)$$, '22004', NULL, 'request_state(NULL)');
SELECT throws_ok($$SELECT coord.purge_requests(NULL)$$, '22004', NULL, 'purge NULL');
SELECT throws_ok($$SELECT coord.purge_requests('-1 day')$$, '22023', NULL, 'purge negative');

SELECT * FROM finish();
ROLLBACK;
