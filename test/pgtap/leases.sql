-- pgTAP: lease locks, single session: signatures, the view and its grants,
-- every argument and error, the hierarchy, tokens, renew and unlock, expiry
-- by the server's clock (clock_timestamp, so this one long transaction
-- cannot keep a lease alive).
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = error;
BEGIN;
SELECT plan(54);

SELECT function_returns('coord', 'lease_lock', ARRAY['text', 'interval', 'text'], 'bigint');
SELECT function_returns('coord', 'renew', ARRAY['text', 'bigint', 'interval'], 'timestamp with time zone');
SELECT function_returns('coord', 'lease_unlock', ARRAY['text', 'bigint'], 'boolean');
SELECT is((SELECT count(*)::int FROM pg_proc
            WHERE oid IN ('coord.lease_lock(text,interval,text)'::regprocedure,
                          'coord.renew(text,bigint,interval)'::regprocedure,
                          'coord.lease_unlock(text,bigint)'::regprocedure)
              AND provolatile = 'v' AND proparallel = 'u'), 3, 'volatile and parallel unsafe');
SELECT ok(has_function_privilege('coord_worker', 'coord.lease_lock(text,interval,text)', 'EXECUTE')
          AND has_function_privilege('coord_worker', 'coord.renew(text,bigint,interval)', 'EXECUTE')
          AND has_function_privilege('coord_worker', 'coord.lease_unlock(text,bigint)', 'EXECUTE'),
          'coord_worker may use leases');
SELECT ok(NOT has_function_privilege('public', 'coord.lease_lock(text,interval,text)', 'EXECUTE')
          AND NOT has_function_privilege('coord_monitor', 'coord.renew(text,bigint,interval)', 'EXECUTE'),
          'PUBLIC and coord_monitor may not');
SELECT has_view('coord', 'leases', 'view coord.leases');
SELECT columns_are('coord', 'leases', ARRAY['path', 'holder', 'token', 'taken_at', 'expires_at', 'live']);
SELECT ok(has_column_privilege('coord_monitor', 'coord.leases', 'path', 'SELECT')
          AND has_column_privilege('coord_monitor', 'coord.leases', 'live', 'SELECT'),
          'coord_monitor reads the view');
SELECT ok(NOT has_column_privilege('coord_monitor', 'coord.leases', 'token', 'SELECT'),
          'but not the token, which is what renews and unlocks');
SELECT ok(NOT has_table_privilege('coord_worker', 'coord.lease', 'SELECT'), 'nobody reads the table');

CREATE TEMP TABLE tok (name text PRIMARY KEY, token bigint);
CREATE FUNCTION pg_temp.t(n text) RETURNS bigint LANGUAGE sql AS $$ SELECT token FROM tok WHERE name = n $$;

-- take, conflict by the hierarchy, siblings
INSERT INTO tok SELECT 'ab', coord.lease_lock('/ls/a/b', '1 hour', 'worker-1');
SELECT ok(pg_temp.t('ab') IS NOT NULL, 'a lease is a token');
SELECT is(coord.lease_lock('/ls/a/b', '1 hour'), NULL, 'the same path: NULL while live');
SELECT is(coord.lease_lock('/ls/a', '1 hour'), NULL, 'an ancestor: NULL');
SELECT is(coord.lease_lock('/ls', '1 hour'), NULL, 'the root-most ancestor: NULL');
SELECT is(coord.lease_lock('/ls/a/b/c/d', '1 hour'), NULL, 'a descendant: NULL');
SELECT is(coord.lease_lock('/ls/a/b', '1 hour', 'worker-1'), NULL, 'not reentrant: the holder is a label');
INSERT INTO tok SELECT 'ac', coord.lease_lock('/ls/a/c', '1 hour');
SELECT ok(pg_temp.t('ac') > pg_temp.t('ab'), 'a sibling is free, and its token is larger');
INSERT INTO tok SELECT 'abx', coord.lease_lock('/ls/a/bx', '1 hour');
SELECT ok(pg_temp.t('abx') IS NOT NULL, '/ls/a/bx is not under /ls/a/b');
INSERT INTO tok SELECT 'ab0', coord.lease_lock('/ls/a/b0', '1 hour');
SELECT ok(pg_temp.t('ab0') IS NOT NULL, 'nor is /ls/a/b0 (the range scan ends before it)');
SELECT is((SELECT holder || ' ' || live FROM coord.leases WHERE path = '/ls/a/b'), 'worker-1 true',
          'the view shows holder and liveness');
SELECT ok((SELECT expires_at - taken_at = '1 hour' FROM coord.leases WHERE path = '/ls/a/b'), 'expiry is ttl after taking');

-- tokens are fencing tokens: shared with coord.fence
SELECT ok(coord.fence_ok('/ls/a/b', pg_temp.t('ab')), 'fence_ok accepts the lease token');
SELECT ok(NOT coord.fence_ok('/ls/a/b', pg_temp.t('ab') - 1), 'and no other');

-- renew
SELECT is(coord.renew('/ls/a/b', pg_temp.t('ab') + 1000, '1 hour'), NULL, 'renew with a wrong token: NULL');
SELECT is(coord.renew('/ls/a/c', pg_temp.t('ab'), '1 hour'), NULL, 'renew with another path''s token: NULL');
SELECT is(coord.renew('/ls/nothing', 1, '1 hour'), NULL, 'renew of no lease: NULL');
SELECT ok(coord.renew('/ls/a/b', pg_temp.t('ab'), '2 hours') > clock_timestamp() + '1 hour 59 minutes',
          'renew returns the new expiry');
SELECT ok((SELECT expires_at > clock_timestamp() + '1 hour 59 minutes' FROM coord.leases WHERE path = '/ls/a/b'),
          'and stores it');

-- unlock
SELECT is(coord.lease_unlock('/ls/a/b', pg_temp.t('ab') + 1000), false, 'unlock with a wrong token: false');
SELECT is(coord.lease_unlock('/ls/a/b', pg_temp.t('ab')), true, 'unlock with the token: true');
SELECT is(coord.lease_unlock('/ls/a/b', pg_temp.t('ab')), false, 'a second unlock: false');
SELECT is(coord.renew('/ls/a/b', pg_temp.t('ab'), '1 hour'), NULL, 'renew after unlock: NULL');
SELECT is(coord.lease_lock('/ls/a', '1 hour'), NULL, '/ls/a still conflicts with /ls/a/c');
SELECT ok(coord.lease_unlock('/ls/a/c', pg_temp.t('ac')) AND coord.lease_unlock('/ls/a/bx', pg_temp.t('abx'))
          AND coord.lease_unlock('/ls/a/b0', pg_temp.t('ab0')), 'unlock the rest');
INSERT INTO tok SELECT 'a', coord.lease_lock('/ls/a', '1 hour');
SELECT ok(pg_temp.t('a') > pg_temp.t('ab0'), 'now /ls/a is free; tokens only grow');
SELECT ok(coord.lease_unlock('/ls/a', pg_temp.t('a')), 'unlock /ls/a');

-- expiry by the server's clock, inside one long transaction (now() stands still)
INSERT INTO tok SELECT 'e', coord.lease_lock('/ls/e/f', '100 ms');
SELECT pg_sleep(0.3);
SELECT is((SELECT live FROM coord.leases WHERE path = '/ls/e/f'), false, 'expired after its ttl');
SELECT is(coord.renew('/ls/e/f', pg_temp.t('e'), '1 hour'), NULL, 'an expired lease renews nothing');
INSERT INTO tok SELECT 'e2', coord.lease_lock('/ls/e', '1 hour');
SELECT ok(pg_temp.t('e2') > pg_temp.t('e'), 'an expired descendant does not block');
SELECT is((SELECT count(*)::int FROM coord.leases WHERE path = '/ls/e/f'), 0, 'and its row is gone');
SELECT is(coord.lease_unlock('/ls/e/f', pg_temp.t('e')), false, 'unlock of that expired lease: false');
INSERT INTO tok SELECT 'g', coord.lease_lock('/ls/g', '100 ms');
SELECT pg_sleep(0.3);
SELECT is(coord.lease_unlock('/ls/g', pg_temp.t('g')), false, 'unlock after expiry: false');
SELECT is((SELECT count(*)::int FROM coord.leases WHERE path = '/ls/g'), 0, 'and the row is deleted');

-- errors
SELECT throws_ok($$SELECT coord.lease_lock(NULL, '1s')$$, '22004', 'path must not be null', 'path NULL');
SELECT throws_ok($$SELECT coord.lease_lock('/ls/x', NULL)$$, '22004', 'ttl must not be null', 'ttl NULL');
SELECT throws_ok($$SELECT coord.lease_lock('/ls/x', '0')$$, '22023', 'ttl must be positive', 'ttl zero');
SELECT throws_ok($$SELECT coord.lease_lock('/ls/x', '-1s')$$, '22023', 'ttl must be positive', 'ttl negative');
SELECT throws_ok($$SELECT coord.lease_lock('/ls/x', '1 day 1 second')$$, '22023', 'ttl must be at most 1 day', 'ttl over a day');
SELECT throws_ok($$SELECT coord.lease_lock('/ls/x', '1s', repeat('h', 1025))$$, '54000', NULL, 'holder too large');
SELECT throws_ok($$SELECT coord.lease_lock('ls/x', '1s')$$, '22023', NULL, 'an invalid path');
SELECT throws_ok($$SELECT coord.renew('/ls/x', NULL, '1s')$$, '22004', 'token must not be null', 'renew: token NULL');
SELECT throws_ok($$SELECT coord.renew('/ls/x', 1, '0')$$, '22023', 'ttl must be positive', 'renew: ttl zero');
SELECT throws_ok($$SELECT coord.lease_unlock('/ls/x', NULL)$$, '22004', 'token must not be null', 'unlock: token NULL');

SELECT * FROM finish();
ROLLBACK;
