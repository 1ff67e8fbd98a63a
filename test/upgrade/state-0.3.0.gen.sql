-- How test/upgrade/state-0.3.0.sql was made (kept for the record and for
-- the next release's fixture; no test runs this file).  With the 0.3.0
-- library installed (built from the release commit), in a fresh database
-- with CREATE EXTENSION pg_coord VERSION '0.3.0' on a test cluster:
--   PGDATABASE=db psql -X -d db -f test/upgrade/state-0.3.0.gen.sql
-- writes /tmp/state-0.3.0.dump.sql (pg_dump's data, taken while this
-- session still leads, holds its session claim and is a partition member)
-- and /tmp/state-0.3.0.live.sql (rows pg_dump leaves out); the fixture is
-- its header, then
--   grep -E '^(INSERT|SELECT pg_catalog.setval)' /tmp/state-0.3.0.dump.sql
--   cat /tmp/state-0.3.0.live.sql
\set ON_ERROR_STOP 1
-- jobs
SELECT coord.enqueue('u', jsonb_build_object('n', g)) FROM generate_series(1, 6) g;      -- 1..6
SELECT coord.enqueue('u', '{"later": true}', run_at => '2030-01-01Z', key => 'later');  -- 7 scheduled, keyed
SELECT coord.enqueue('u', '{"g": 1}', group_key => 'grp'), coord.enqueue('u', '{"g": 2}', group_key => 'grp'); -- 8, 9
SELECT coord.enqueue('u', '{"exp": 1}', expires_at => '2031-01-01Z', priority => 5);    -- 10
SELECT coord.complete(id, token, '{"ok": 1}') FROM coord.claim('u', 2);                 -- 10 (priority 5), 1 done
SELECT id, token FROM coord.claim('u', 1, lease => '1 hour');                           -- 2: lease claim, token 3
SELECT id, token FROM coord.claim('u-sess', 0);
SELECT coord.enqueue('u-sess', '{"s": 1}');                                              -- 11
SELECT id, token FROM coord.claim('u-sess', 1, session_bound => true);                  -- 11: session claim
SELECT coord.enqueue('u-dead', '{}', max_attempts => 1);                                 -- 12
SELECT coord.fail(id, token, 'boom') FROM coord.claim('u-dead', 1);                      -- dead
SELECT coord.enqueue('u-retry', '{}', max_attempts => 5);                                -- 13
SELECT coord.fail(id, token, 'transient', retry_after => '1 hour') FROM coord.claim('u-retry', 1); -- retried later
SELECT coord.cancel(coord.enqueue('u-cancel', '{}'));                                    -- 14 cancelled
-- flow control: limits (queue-wide and per key), buckets, running slots, pauses
SELECT coord.set_limit('ul', concurrency => 2, rate => 10, per => '1 minute', burst => 5);
SELECT coord.set_limit('ul', concurrency => 1, per_key => true);
SELECT coord.enqueue('ul', jsonb_build_object('l', g), limit_key => 'k' || (g % 2)) FROM generate_series(1, 4) g; -- 15..18
SELECT id, token FROM coord.claim('ul', 2, lease => '1 hour');
SELECT coord.pause('up');
SELECT coord.enqueue('up', '{"paused": true}');
SELECT coord.pause('ul', until => '2030-01-01Z', limit_key => 'k9');
-- locks, fences, lease locks
SELECT coord.lock('/u/leader'), coord.fence('/u/leader'), coord.fence('/u/leader');
SELECT coord.lease_lock('/u/lease', '1 hour', 'holder-a');
-- requests
SELECT coord.request('u-done'); SELECT coord.mark_done('u-done');
SELECT coord.request('u-queued'); SELECT coord.mark_queued('u-queued', 'u', '{"req": 1}');
-- elections: one with a leader (this session), one resigned
SELECT coord.campaign('e-lead', 'node-a');
SELECT coord.campaign('e-gone', 'node-b'); SELECT coord.resign('e-gone');
-- partition groups: members and segments
SELECT coord.join('pg', 'm1', segments => 8, meta => '{"zone": "a"}');
\! (psql -qXAt -d "$PGDATABASE" -c "SELECT coord.join('pg', 'm2', weight => 2)" -c "SELECT pg_sleep(3)" -c "SELECT coord.owned('pg')" -c "SELECT pg_sleep(1)" -c "SELECT coord.owned('pg')" -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &)
SELECT pg_sleep(1.5);
SELECT coord.owned('pg');
SELECT pg_sleep(4);
-- semaphores live in the lock manager only: a permit held now leaves no row
SELECT coord.acquire_permit('/u/sem', 3);
-- schedules: every, cron, cron in a time zone
SELECT coord.schedule('u-every', 'us', every => '1 hour', payload => '{"e": 1}', starts_at => '2026-01-01Z');
SELECT coord.schedule('u-cron', 'us', cron => '0 3 * * *');
SELECT coord.schedule('u-paris', 'us', cron => '30 8 * * 1-5', tz => 'Europe/Paris');
-- apps: time-driven, dependent, on a signal, with a deadline; runs done, dead, live; a rerun
SELECT coord.define_app('u-up', starts => 'hourly', catchup_from => '2026-01-01Z', deadline => '10 minutes');
SELECT coord.define_app('u-down', depends => '{"u-up": "hourly"}', conf => '{"c": 1}', queue => 'apps-down', catchup_from => '2026-01-01Z');
SELECT coord.define_app('u-sig', depends => '{"@feed": "hourly"}', queue => 'apps-sig', catchup_from => '2026-01-01Z');
SELECT coord.define_app('u-tz', starts => 'daily', tz => 'America/New_York', catchup_from => '2026-01-01Z', queue => 'apps-tz');
SELECT coord.tick('2026-01-01 02:30Z');
SELECT coord.signal('feed', '2026-01-01 00:00Z', '{"rows": 3}');
SELECT coord.complete(id, token, '{"rows": 7}') FROM coord.claim('apps', 1);
SELECT coord.complete(id, token, '{"down": 1}') FROM coord.claim('apps-down', 1);
UPDATE coord.job SET max_attempts = 1 WHERE queue = 'apps-sig';
SELECT coord.fail(id, token, 'bad feed') FROM coord.claim('apps-sig', 1);
SELECT coord.tick('2026-01-01 02:40Z');
SELECT coord.rerun('u-up', '2026-01-01 00:00Z', '2026-01-01 01:00Z', downstream => true);
SELECT coord.owned('pg');
\! pg_dump --data-only --column-inserts -d "$PGDATABASE" > /tmp/state-0.3.0.dump.sql
-- not in pg_dump's data (no extension config): written as INSERTs here
\pset tuples_only on
\pset format unaligned
\o /tmp/state-0.3.0.live.sql
SELECT format('INSERT INTO %s SELECT * FROM pg_catalog.jsonb_populate_record(NULL::%s, %L);', t, t, j)
  FROM (SELECT 'coord.partition_members' AS t, to_jsonb(x) AS j, x.partition_group || '/' || x.member AS k FROM coord.partition_members x
        UNION ALL SELECT 'coord.job_bucket', to_jsonb(x), x.queue || '/' || x.limit_key FROM coord.job_bucket x
        UNION ALL SELECT 'coord.job_running', to_jsonb(x), x.queue || '/' || x.per_key || '/' || x.limit_key || '/' || x.slot FROM coord.job_running x) s
 ORDER BY t, k;
\o
