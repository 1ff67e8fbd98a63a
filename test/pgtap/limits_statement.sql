-- pgTAP: flow-control calls repeated within one statement (issue 17; found by
-- the fuzz, test/fuzz/fuzz.py): each changes coord.job_limit or
-- coord.job_pause and invalidates its relcache entry, and the next call in
-- the same statement must still work (it failed with XX000 "cache lookup
-- failed for relation 0").  Also: what each such call leaves behind.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = error;
BEGIN;
SELECT plan(8);

SELECT lives_ok($$SELECT coord.set_limit('tap-s1', concurrency => 2) FROM generate_series(1, 2)$$,
                'set_limit twice in one statement');
SELECT lives_ok($$SELECT coord.set_limit(q, rate => 5, burst => 2, per_key => true)
                    FROM (VALUES ('tap-s2'), ('tap-s3')) AS v(q)$$,
                'set_limit of two queues in one statement');
SELECT is((SELECT count(*)::int FROM coord.job_limit WHERE queue IN ('tap-s1', 'tap-s2', 'tap-s3')), 3,
          'the three limits are there');
SELECT lives_ok($$SELECT coord.drop_limit('tap-s1') FROM generate_series(1, 2)$$,
                'drop_limit twice in one statement');
SELECT lives_ok($$SELECT coord.drop_limit(q, per_key => true) FROM (VALUES ('tap-s2'), ('tap-s3')) AS v(q)$$,
                'drop_limit of two queues in one statement');
SELECT is((SELECT count(*)::int FROM coord.job_limit WHERE queue IN ('tap-s1', 'tap-s2', 'tap-s3')), 0,
          'the limits are gone');
SELECT lives_ok($$SELECT coord.pause('tap-s4', limit_key => k), coord.resume('tap-s4', limit_key => k)
                    FROM (VALUES ('a'), ('b')) AS v(k)$$,
                'pause and resume of two keys in one statement');
SELECT lives_ok($$SELECT coord.set_limit('tap-s5', concurrency => 1), coord.pause('tap-s5'),
                         coord.drop_limit('tap-s5'), coord.resume('tap-s5')
                    FROM generate_series(1, 2)$$,
                'set_limit, pause, drop_limit, resume, twice, in one statement');

SELECT * FROM finish();
ROLLBACK;
