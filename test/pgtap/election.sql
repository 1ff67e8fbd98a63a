-- pgTAP: leader election's surface, single-session semantics, and every
-- error with its SQLSTATE (issue 16, section 3).
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = warning;
BEGIN;
SELECT plan(59);

-- Signatures, properties, comments.
SELECT function_returns('coord', 'campaign', ARRAY['text', 'text', 'interval'], 'bigint');
SELECT function_returns('coord', 'leader', ARRAY['text'], 'setof record');
SELECT function_returns('coord', 'resign', ARRAY['text'], 'boolean');
SELECT is(pg_get_function_arguments('coord.campaign(text,text,interval)'::regprocedure),
          'election text, value text DEFAULT NULL::text, timeout interval DEFAULT NULL::interval',
          'campaign: argument names and defaults');
SELECT is(pg_get_function_arguments('coord.leader(text)'::regprocedure),
          'election text, OUT value text, OUT pid integer, OUT since timestamp with time zone, OUT term bigint',
          'leader: its columns');
SELECT is((SELECT array_agg(DISTINCT provolatile::text || proparallel::text) FROM pg_proc
            WHERE pronamespace = 'coord'::regnamespace AND proname IN ('campaign', 'leader', 'resign')),
          ARRAY['vu'], 'all three are volatile and parallel unsafe');
SELECT is((SELECT count(*)::int FROM pg_proc
            WHERE pronamespace = 'coord'::regnamespace AND proname IN ('campaign', 'leader', 'resign')
              AND obj_description(oid, 'pg_proc') IS NOT NULL), 3, 'all three have comments');
SELECT has_table('coord', 'elections', 'table coord.elections');
SELECT has_sequence('coord', 'election_term_seq', 'sequence coord.election_term_seq');

-- Least privilege.
SELECT ok(has_function_privilege('coord_worker', 'coord.campaign(text,text,interval)', 'EXECUTE'), 'worker may campaign');
SELECT ok(has_function_privilege('coord_worker', 'coord.resign(text)', 'EXECUTE'), 'worker may resign');
SELECT ok(has_function_privilege('coord_worker', 'coord.leader(text)', 'EXECUTE'), 'worker may read the leader');
SELECT ok(has_function_privilege('coord_monitor', 'coord.leader(text)', 'EXECUTE'), 'monitor may read the leader');
SELECT ok(NOT has_function_privilege('coord_monitor', 'coord.campaign(text,text,interval)', 'EXECUTE'), 'monitor may not campaign');
SELECT ok(NOT has_function_privilege('coord_monitor', 'coord.resign(text)', 'EXECUTE'), 'monitor may not resign');
SELECT is((SELECT count(*)::int FROM pg_proc, aclexplode(proacl) AS a
            WHERE pronamespace = 'coord'::regnamespace AND proname IN ('campaign', 'leader', 'resign')
              AND a.grantee = 0), 0, 'nothing granted to PUBLIC');
SELECT ok(NOT has_table_privilege('coord_worker', 'coord.elections', 'SELECT'), 'the table is not granted');

-- Arguments.
SELECT throws_ok($$SELECT coord.campaign(NULL)$$, '22004', 'election must not be null', 'campaign(NULL)');
SELECT throws_ok($$SELECT * FROM coord.leader(NULL)$$, '22004', 'election must not be null', 'leader(NULL)');
SELECT throws_ok($$SELECT coord.resign(NULL)$$, '22004', 'election must not be null', 'resign(NULL)');
SELECT throws_ok($$SELECT coord.campaign('')$$, '22023', 'election name must not be empty', 'campaign empty');
SELECT throws_ok($$SELECT * FROM coord.leader('')$$, '22023', 'election name must not be empty', 'leader empty');
SELECT throws_ok($$SELECT coord.resign('')$$, '22023', 'election name must not be empty', 'resign empty');
SELECT throws_ok($$SELECT coord.campaign(repeat('e', 51))$$, '54000', 'election name is too long', 'campaign 51 bytes');
SELECT throws_ok($$SELECT * FROM coord.leader(repeat('é', 26))$$, '54000', 'election name is too long',
                 'leader: 52 bytes in 26 characters');
SELECT throws_ok($$SELECT coord.resign(repeat('e', 51))$$, '54000', 'election name is too long', 'resign 51 bytes');
SELECT throws_ok($$SELECT coord.campaign(E'a\nb')$$, '22023', 'invalid election name', 'control character');
SELECT throws_ok($$SELECT coord.campaign('tap', timeout => '-1s')$$, '22023', 'timeout must be zero or positive', 'negative timeout');
SELECT throws_ok($$SELECT coord.campaign('tap', timeout => '178000000 years')$$, '22015', NULL, 'huge timeout');
SELECT throws_ok($$SELECT coord.campaign('tap', repeat('v', 65537))$$, '54000', 'leader value is too large', 'value too large');
SELECT is((SELECT count(*)::int FROM coord.leader('tap')), 0, 'failed campaigns leave no leader');

-- One session: campaign, again, leader, resign.
SELECT lives_ok($$SELECT coord.campaign(repeat('e', 50), timeout => '0')$$, 'a 50-byte name (channel of 63 bytes)');
CREATE TEMP TABLE t(name text PRIMARY KEY, term bigint);
INSERT INTO t SELECT 'first', coord.campaign('tap', 'me:5432');
SELECT ok((SELECT term FROM t WHERE name = 'first') > 0, 'campaign returns a positive term');
SELECT results_eq($$SELECT value, pid, term FROM coord.leader('tap')$$,
                  $$SELECT 'me:5432'::text, pg_backend_pid(), term FROM t WHERE name = 'first'$$,
                  'leader: value, pid and term of this session');
SELECT ok((SELECT since <= clock_timestamp() AND since >= now() FROM coord.leader('tap')), 'since: when it won');
SELECT is(coord.campaign('tap', 'other value', '0'), (SELECT term FROM t WHERE name = 'first'),
          'campaigning again while leading returns the current term');
SELECT is((SELECT value FROM coord.leader('tap')), 'me:5432', 'and keeps the value');
SELECT is(coord.campaign(election => 'tap', value => 'x', timeout => '1s'), (SELECT term FROM t WHERE name = 'first'),
          'named arguments');
SELECT ok(coord.resign('tap'), 'resign: true while leading');
SELECT is((SELECT count(*)::int FROM coord.leader('tap')), 0, 'no leader once resigned');
SELECT ok(NOT coord.resign('tap'), 'resign again: false');
SELECT ok(NOT coord.resign('tap-never'), 'resign of an election never led: false');
SELECT is((SELECT count(*)::int FROM coord.leader('tap-never')), 0, 'an unknown election has no leader');
-- the resign is not committed yet: campaigning again undoes it, same term
SELECT is(coord.campaign('tap'), (SELECT term FROM t WHERE name = 'first'),
          'campaign after a resign in the same transaction keeps the term');
SELECT is((SELECT term FROM coord.leader('tap')), (SELECT term FROM t WHERE name = 'first'), 'and leads again');
-- a savepoint rolled back undoes a resign
SAVEPOINT s1;
SELECT ok(coord.resign('tap'), 'resign in a savepoint');
ROLLBACK TO SAVEPOINT s1;
SELECT is((SELECT count(*)::int FROM coord.leader('tap')), 1, 'a rolled-back resign keeps the leader');
SELECT ok(coord.resign('tap'), 'and resign still works');
-- a savepoint rolled back undoes a campaign; its term is never reused
SAVEPOINT s2;
INSERT INTO t SELECT 'rolled back', coord.campaign('tap2');
ROLLBACK TO SAVEPOINT s2;
INSERT INTO t SELECT 'rolled back', nextval('coord.election_term_seq') - 1;
SELECT is((SELECT count(*)::int FROM coord.leader('tap2')), 0, 'a rolled-back campaign leaves no leader');
INSERT INTO t SELECT 'after', coord.campaign('tap2');
SELECT ok((SELECT term FROM t WHERE name = 'after') > (SELECT term FROM t WHERE name = 'rolled back'),
          'the next term is larger than the rolled-back one');
SELECT ok((SELECT term FROM t WHERE name = 'after') > (SELECT term FROM t WHERE name = 'first'),
          'terms only grow');
SELECT is((SELECT count(*)::int FROM coord.locks WHERE pid = pg_backend_pid()), 0,
          'leadership is not a path lock');
SELECT is((SELECT count(*)::int FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory'
             AND objsubid IN (17212, 17214) AND granted), 6,
          'a leader holds its election and term locks (3 elections led)');

-- Locks let go behind pg_coord's back (pg_advisory_unlock_all, DISCARD ALL):
-- the session leads no more, and a new campaign gets a new term.
INSERT INTO t SELECT 'unlocked', coord.campaign('tap3');
SELECT lives_ok($$SELECT pg_advisory_unlock_all()$$, 'pg_advisory_unlock_all');
SELECT is((SELECT count(*)::int FROM coord.leader('tap3')), 0, 'no leader once its locks are gone');
SELECT ok(NOT coord.resign('tap3'), 'resign: false once the locks are gone');
SELECT ok(coord.campaign('tap3') > (SELECT term FROM t WHERE name = 'unlocked'), 'campaigning again: a new term');

-- Where it cannot run.
SAVEPOINT s3;
SET LOCAL transaction_read_only = on;
SELECT throws_ok($$SELECT coord.campaign('tap-ro')$$, '25006', 'cannot campaign in a read-only transaction', 'read-only campaign');
ROLLBACK TO SAVEPOINT s3;
SELECT is((SELECT count(*)::int FROM coord.leader('tap-ro')), 0, 'no leader after a refused campaign');

SELECT * FROM finish();
ROLLBACK;
