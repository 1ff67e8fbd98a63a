-- pgTAP: retention (issue 23, section 2): coord.retention, what each
-- coord.tick purges and what it keeps (rows made old by hand), the
-- per-call caps of workers, and coord.drop_group / coord.drop_election with
-- their errors and grants.  The growth loops themselves, as a worker and
-- on the clock, are test/crash/growth.sh; the races with a join and a
-- campaign test/specs/iso_retention.spec.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = warning;
BEGIN;
SELECT plan(66);

-- Surface, grants.
SELECT function_returns('coord', 'drop_group', ARRAY['text'], 'boolean');
SELECT function_returns('coord', 'drop_election', ARRAY['text'], 'boolean');
SELECT is((SELECT count(*)::int FROM pg_proc WHERE pronamespace = 'coord'::regnamespace
            AND proname IN ('drop_group', 'drop_election') AND obj_description(oid, 'pg_proc') IS NOT NULL),
          2, 'both have comments');
SELECT ok(has_function_privilege('coord_admin', 'coord.drop_group(text)', 'EXECUTE'), 'admin may drop a group');
SELECT ok(has_function_privilege('coord_admin', 'coord.drop_election(text)', 'EXECUTE'), 'admin may drop an election');
SELECT ok(NOT has_function_privilege('coord_worker', 'coord.drop_group(text)', 'EXECUTE'), 'worker may not drop a group');
SELECT ok(NOT has_function_privilege('coord_worker', 'coord.drop_election(text)', 'EXECUTE'), 'worker may not drop an election');
SELECT ok(NOT has_function_privilege('coord_monitor', 'coord.drop_group(text)', 'EXECUTE'), 'monitor may not drop a group');
SELECT is((SELECT count(*)::int FROM pg_proc, aclexplode(proacl) AS a
            WHERE pronamespace = 'coord'::regnamespace AND proname IN ('drop_group', 'drop_election')
              AND a.grantee = 0), 0, 'nothing granted to PUBLIC');
SELECT has_column('coord', 'partition_groups', 'empty_since', 'groups have empty_since');

-- drop_group / drop_election: errors and refusals
SELECT throws_ok($$SELECT coord.drop_group(NULL)$$, '22004', NULL, 'drop_group(NULL)');
SELECT throws_ok($$SELECT coord.drop_group('')$$, '22023', NULL, 'drop_group: empty name');
SELECT throws_ok($$SELECT coord.drop_election(NULL)$$, '22004', NULL, 'drop_election(NULL)');
SELECT throws_ok($$SELECT coord.drop_election('')$$, '22023', NULL, 'drop_election: empty name');
SELECT is(coord.drop_group('tap-ret/none'), false, 'drop_group: no such group');
SELECT is(coord.drop_election('tap-ret-none'), false, 'drop_election: no such election');
SELECT is(current_setting('coord.retention'), '1d', 'coord.retention defaults to a day (the library is loaded now)');
SELECT is(cardinality(coord.join('tap-ret/d', 'm', segments => 16)), 16, 'a group to drop');
SELECT throws_ok($$SELECT coord.drop_group('tap-ret/d')$$, '55000', 'partition group "tap-ret/d" has live members',
                 'drop_group: a live member');
SELECT is(coord.leave('tap-ret/d'), true, 'its member leaves');
SELECT is(coord.drop_group('tap-ret/d'), true, 'drop_group: an empty group');
SELECT is((SELECT count(*)::int FROM coord.partition_segments WHERE partition_group = 'tap-ret/d'), 0,
          'its segments went with it');
SELECT ok(coord.campaign('tap-ret-d') > 0, 'an election to drop');
SELECT throws_ok($$SELECT coord.drop_election('tap-ret-d')$$, '55000', 'election "tap-ret-d" has a leader',
                 'drop_election: a leader');
SELECT is(coord.resign('tap-ret-d'), true, 'its leader resigns');
SELECT is(coord.drop_election('tap-ret-d'), true, 'drop_election: a resigned election');
SELECT is((SELECT count(*)::int FROM coord.elections WHERE election = 'tap-ret-d'), 0, 'its row is gone');

-- per-call caps: a worker's new group, a worker's leader value
SAVEPOINT w;
SET LOCAL ROLE coord_worker;
SELECT throws_ok($$SELECT coord.join('tap-ret/w', 'm', segments => 4097)$$, '54000',
                 'a new partition group has at most 4096 segments', 'worker: 4097 segments');
SELECT throws_ok($$SELECT coord.campaign('tap-ret-w', repeat('v', 8193))$$, '54000', 'leader value is too large',
                 'worker: a value of 8193 bytes');
SELECT is(cardinality(coord.join('tap-ret/w', 'm', segments => 4096)), 4096, 'worker: 4096 segments');
SELECT ok(coord.campaign('tap-ret-w', repeat('v', 8192)) > 0, 'worker: a value of 8192 bytes');
ROLLBACK TO SAVEPOINT w;
SELECT is(cardinality(coord.join('tap-ret/a', 'm', segments => 5000)), 5000, 'admin: 5000 segments');
SELECT ok(coord.campaign('tap-ret-a', repeat('v', 65536)) > 0, 'admin: a value of 64 kB');
SELECT throws_ok($$SELECT coord.campaign('tap-ret-a2', repeat('v', 65537))$$, '54000', 'leader value is too large',
                 'admin: 64 kB and one');
SELECT is(cardinality(coord.join('tap-ret/a', 'm', segments => 5000)), 5000, 'a worker joins an admin''s big group');
SELECT is(coord.leave('tap-ret/a'), true, 'and leaves');
SELECT is(coord.resign('tap-ret-a'), true, 'the admin resigns');

-- What the tick purges: dead rows made old by hand; and what it keeps.
SELECT ok(coord.lease_lock('/tap-ret/l', '1 hour') > 0, 'a lease that will be old');
SELECT ok(coord.lease_lock('/tap-ret/live', '1 hour') > 0, 'a live lease');
UPDATE coord.lease SET expires_at = now() - interval '2 days' WHERE path = '/tap-ret/l';
UPDATE coord.fences SET fenced_at = now() - interval '2 days' WHERE path IN ('/tap-ret/l', '/tap-ret/live');
SELECT ok(coord.lock('/tap-ret/n') AND coord.unlock('/tap-ret/n'), 'a lock name nobody holds');
SELECT ok(coord.lock('/tap-ret/h') AND coord.fence('/tap-ret/h') > 0, 'a held lock with a fence');
UPDATE coord.lock_names SET registered_at = now() - interval '2 days' WHERE path LIKE '/tap-ret/%';
UPDATE coord.fences SET fenced_at = now() - interval '2 days' WHERE path = '/tap-ret/h';
INSERT INTO coord.fences VALUES ('/tap-ret/f', 1, now() - interval '2 days');
SELECT ok(coord.campaign('tap-ret-e') > 0 AND coord.resign('tap-ret-e'), 'a resigned election');
SELECT ok(coord.campaign('tap-ret-live') > 0, 'a live leader');
UPDATE coord.elections SET since = now() - interval '2 days' WHERE election LIKE 'tap-ret-%';
SELECT ok(coord.join('tap-ret/g', 'm') IS NOT NULL AND coord.leave('tap-ret/g'), 'a group without members');
SELECT ok(coord.join('tap-ret/live', 'm') IS NOT NULL, 'a group with a live member');
INSERT INTO coord.job_bucket VALUES ('tap-ret-q', 'k', 0, now() - interval '2 days');
INSERT INTO coord.job_pause VALUES ('tap-ret-q', 'k', now() - interval '2 days'), ('tap-ret-q', 'k2', NULL);
INSERT INTO coord.job_running VALUES ('tap-ret-q', true, 'k', 0, -1, 1);
SELECT ok(coord.signal('tap-ret-unused', '2026-01-01') AND coord.signal('tap-ret-used', '2026-01-01'), 'two signals');
SELECT lives_ok($$SELECT coord.define_app('tap-ret-app', depends => '{"@tap-ret-used": "daily"}')$$, 'an app using one');
UPDATE coord.app_signals SET signalled_at = now() - interval '30 days' WHERE name LIKE 'tap-ret-%';
SELECT ok(coord.request('tap-ret-r'), 'a request this session owns');
INSERT INTO coord.request_keys (key, state, owner_pid, owner_start, requested_at)
  VALUES ('tap-ret-r2', 'requested', 1, now(), now() - interval '2 days');
UPDATE coord.request_keys SET requested_at = now() - interval '2 days' WHERE key = 'tap-ret-r';

SET LOCAL coord.retention = 0;
SELECT ok(coord.tick() >= 0, 'a tick with retention 0');
SELECT is((SELECT count(*)::int FROM coord.lease WHERE path = '/tap-ret/l'), 1, 'retention 0 keeps an expired lease');
RESET coord.retention;
SELECT ok(coord.tick() >= 0, 'a tick');
SELECT is((SELECT empty_since FROM coord.partition_groups WHERE partition_group = 'tap-ret/g'), now(),
          'it marks a group without members empty');
UPDATE coord.partition_groups SET empty_since = now() - interval '2 days' WHERE partition_group = 'tap-ret/g';
SELECT ok(coord.tick() >= 0, 'a tick a day later');
SELECT results_eq($$SELECT path COLLATE "default" FROM coord.lease WHERE path LIKE '/tap-ret/%' ORDER BY path$$,
                  ARRAY['/tap-ret/live'], 'the expired lease goes, the live one stays');
SELECT results_eq($$SELECT path FROM coord.fences WHERE path LIKE '/tap-ret/%' ORDER BY path$$,
                  ARRAY['/tap-ret/h', '/tap-ret/l', '/tap-ret/live'],
                  'an old fence of a free path goes; those of a held lock and a live lease stay (and /tap-ret/l''s: its lease_lock''s transaction, this one, holds the path)');
SELECT results_eq($$SELECT path FROM coord.lock_names WHERE path LIKE '/tap-ret/%' ORDER BY path$$,
                  ARRAY['/tap-ret/h'], 'a held lock''s name stays, the others go');
SELECT results_eq($$SELECT election FROM coord.elections WHERE election LIKE 'tap-ret-%' ORDER BY election$$,
                  ARRAY['tap-ret-live'], 'elections without a leader go');
SELECT results_eq($$SELECT partition_group, empty_since IS NULL FROM coord.partition_groups
                     WHERE partition_group IN ('tap-ret/g', 'tap-ret/live') ORDER BY 1$$,
                  $$VALUES ('tap-ret/live', true)$$, 'an empty group goes; a live one stays, unmarked');
SELECT is((SELECT count(*)::int FROM coord.job_bucket WHERE queue = 'tap-ret-q'), 0, 'a bucket without a limit goes');
SELECT results_eq($$SELECT limit_key FROM coord.job_pause WHERE queue = 'tap-ret-q'$$, ARRAY['k2'],
                  'an ended pause goes, one until resumed stays');
SELECT is((SELECT count(*)::int FROM coord.job_running WHERE queue = 'tap-ret-q'), 0, 'slots of a gone job go');
SELECT results_eq($$SELECT name FROM coord.app_signals WHERE name LIKE 'tap-ret-%'$$, ARRAY['tap-ret-used'],
                  'a signal no app depends on goes, one in use stays');
SELECT results_eq($$SELECT key FROM coord.request_keys WHERE key LIKE 'tap-ret-%'$$, ARRAY['tap-ret-r'],
                  'a requested key whose owner is gone goes, an owned one stays');

-- a row a share cannot handle costs a WARNING, not the tick
INSERT INTO coord.fences VALUES ('no/such path', 1, now() - interval '2 days');
INSERT INTO coord.job_pause VALUES ('tap-ret-q', 'k3', now() - interval '2 days');
SET LOCAL client_min_messages = error;
SELECT lives_ok($$SELECT coord.tick()$$, 'a tick with a fence row whose path is not a path');
RESET client_min_messages;
SELECT is((SELECT count(*)::int FROM coord.fences WHERE path = 'no/such path'), 1, 'that row stays');
SELECT is((SELECT count(*)::int FROM coord.job_pause WHERE limit_key = 'k3'), 0, 'the other shares still purge');

SELECT * FROM finish();
ROLLBACK;
