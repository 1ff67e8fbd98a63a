#!/usr/bin/env bash
# Upgrades and pg_dump, on the cluster of test/run.sh (PG* environment),
# every update path to the version in development ($dev, the control file's):
# 1. 0.1.0 -> 0.2.0 -> dev: an installation made at 0.1.0 (from the copy of
#    its released script in test/upgrade/) with state in it (jobs ready and
#    claimed, a request, a fence) is updated step by step with ALTER
#    EXTENSION UPDATE TO; the state survives and works, the new functions
#    are there, and the catalog is the same as a fresh install's, object for
#    object (tables, columns, indexes, constraints, functions with their
#    definitions, grants and comments, views, column grants, config tables).
# 2. 0.2.0 -> dev, with the live state 0.2.0 wrote (test/upgrade/
#    state-0.2.0.sql: jobs of every state, a lease claim, requests, fences,
#    schedules, apps and runs): the same checks; and a pg_dump of that 0.2.0
#    database restored across the update (into a fresh dev install) keeps
#    every row, and tokens issued afterwards are larger.
# 2b. 0.3.0 -> dev, with the live state 0.3.0 wrote (test/upgrade/
#    state-0.3.0.sql: jobs of every state, lease and session claims, limits,
#    pauses and buckets, requests, fences, a lease lock, elections, a
#    partition group with members and segments, schedules in a time zone,
#    apps with runs, reruns, alerts and a signal): the same checks, and the
#    0.3.0 features go on working from that state.
# 3. pg_dump | psql at dev into a second database keeps queues, history,
#    requests, fences, schedules and apps, and tokens issued afterwards are
#    larger.
# Exit 0 = pass; the last line says what was checked.
set -uo pipefail
checks=0
fail() { echo "FAIL: $*"; exit 1; }
q() { psql -qXAt -v ON_ERROR_STOP=1 -d "$1" -c "$2"; }
expect() {  # expect DB SQL WANT WHAT
  local got
  got=$(q "$1" "$2") || fail "$4: query failed: $2"
  [ "$got" = "$3" ] || fail "$4: got '$got', want '$3'"
  checks=$((checks + 1))
}
dev=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$(pg_config --sharedir)/extension/pg_coord.control")
for db in coord_up coord_fresh coord_src coord_dst coord_b020 coord_b020_dst coord_b030 coord_b030_dst; do
  psql -qX -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
done
trap 'for db in coord_up coord_fresh coord_src coord_dst coord_b020 coord_b020_dst coord_b030 coord_b030_dst; do psql -qX -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1; done
      psql -qX -d postgres -c "DROP ROLE IF EXISTS upgrade_worker" >/dev/null 2>&1' EXIT

# ---- 1. update from 0.1.0
q coord_up "CREATE EXTENSION pg_coord VERSION '0.1.0'" >/dev/null
expect coord_up "SELECT extversion FROM pg_extension WHERE extname = 'pg_coord'" "0.1.0" "installed at 0.1.0"
# The library serves only its own version's catalog (a call at 0.1.0 is an
# error, test/upgrade/version_mismatch.sh), so the 0.1.0 state is written as
# 0.1.0's functions wrote it: two ready jobs (one with a key), a lease claim
# (state running, with a lease), a registered and fenced path, a queued key.
q coord_up "INSERT INTO coord.job (queue, payload, run_at, priority, max_attempts, key)
            VALUES ('up', '{\"n\": 1}', now(), 0, 25, NULL), ('up', '{\"n\": 2}', now(), 0, 25, 'two')" >/dev/null
q coord_up "INSERT INTO coord.job (queue, payload, run_at, priority, max_attempts, state, lease_until, token, attempt)
            VALUES ('up', '{\"n\": 3}', now(), 0, 25, 'running', now() + interval '1 hour', 77, 1)" >/dev/null
q coord_up "INSERT INTO coord.lock_names (key, path) VALUES (coord.path_key('/up/leader'), '/up/leader');
            INSERT INTO coord.fences (path, token, fenced_at) VALUES ('/up/leader', nextval('coord.fence_seq'), now())" >/dev/null
q coord_up "INSERT INTO coord.request_keys (key, state, requested_at, queued_at) VALUES ('up-key', 'queued', now(), now())" >/dev/null
q coord_up "ALTER EXTENSION pg_coord UPDATE TO '0.2.0'" >/dev/null || fail "ALTER EXTENSION pg_coord UPDATE TO '0.2.0' failed"
expect coord_up "SELECT extversion FROM pg_extension WHERE extname = 'pg_coord'" "0.2.0" "updated to 0.2.0"
q coord_up "ALTER EXTENSION pg_coord UPDATE" >/dev/null || fail "ALTER EXTENSION pg_coord UPDATE (0.2.0 -> $dev) failed"
expect coord_up "SELECT extversion FROM pg_extension WHERE extname = 'pg_coord'" "$dev" "updated to $dev"
expect coord_up "SELECT string_agg(payload->>'n' || ':' || state, ',' ORDER BY id) FROM coord.jobs" \
       "1:ready,2:ready,3:running" "jobs survive; the lease claim is still running"
expect coord_up "SELECT coord.enqueue('up', '{}', key => 'two') = (SELECT id FROM coord.job WHERE key = 'two')" "t" "dedupe keys still hold"
psql -qX -d postgres -c "SET client_min_messages = warning" -c "DROP ROLE IF EXISTS upgrade_worker" -c "CREATE ROLE upgrade_worker IN ROLE coord_worker" >/dev/null
expect coord_up "SET ROLE upgrade_worker; SELECT coord.complete($(q coord_up "SELECT id FROM coord.job WHERE payload->>'n' = '3'"), 77)" "f" \
       "a lease claim made before the update has no claimant: a worker role cannot complete it"
expect coord_up "SELECT coord.complete(id, 77) FROM coord.job WHERE payload->>'n' = '3'" "t" "the old claim's token completes it"
expect coord_up "SELECT count(*) FROM coord.claim('up', 10)" "2" "the ready jobs are claimable"
expect coord_up "SELECT coord.request_state('up-key')" "queued" "requests survive"
expect coord_up "SELECT coord.lock('/up/leader') AND coord.fence('/up/leader') > 1" "t" "fencing tokens go on increasing"
expect coord_up "SELECT coord.schedule('up-s', 'up', every => '1 hour') > 0" "t" "new function: coord.schedule"
q coord_up "SELECT coord.define_app('up-a', starts => 'hourly')" >/dev/null || fail "coord.define_app"
expect coord_up "SELECT count(*) FROM coord.runs WHERE app = 'up-a'" "0" "new view: coord.runs"
expect coord_up "SELECT coord.tick() >= 0" "t" "new function: coord.tick"
expect coord_up "SELECT string_agg(p.oid::regprocedure::text, ',' ORDER BY 1) FROM pg_proc AS p
                  WHERE p.pronamespace = 'coord'::regnamespace AND p.proname IN ('complete', 'complete_many')" \
       "coord.complete(bigint,bigint,jsonb),coord.complete_many(bigint[],bigint[])" \
       "0.1.0's batch overload of coord.complete is gone, coord.complete_many replaces it"
expect coord_up "PREPARE untyped AS SELECT coord.complete(\$1, \$2); EXECUTE untyped(-1, 1)" "f" \
       "coord.complete(\$1, \$2) with untyped parameters is not ambiguous"

q coord_fresh "CREATE EXTENSION pg_coord" >/dev/null
catalog="
SELECT 'rel ' || c.relname || ' ' || c.relkind::text || ' ' || coalesce(obj_description(c.oid, 'pg_class'), '-') || ' ' || coalesce(c.relacl::text, '-') || ' ' || coalesce(array_to_string(c.reloptions, ','), '')
  FROM pg_class c WHERE c.relnamespace = 'coord'::regnamespace
UNION ALL
SELECT 'col ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
       || ' ' || coalesce(a.attacl::text, '-') || ' ' || coalesce(col_description(c.oid, a.attnum), '-')
  FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
  LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
 WHERE c.relnamespace = 'coord'::regnamespace
UNION ALL
SELECT 'idx ' || pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
 WHERE c.relnamespace = 'coord'::regnamespace
UNION ALL
SELECT 'con ' || conrelid::regclass || ' ' || pg_get_constraintdef(oid) FROM pg_constraint WHERE connamespace = 'coord'::regnamespace
UNION ALL
SELECT 'fn ' || p.oid::regprocedure || ' ' || p.provolatile::text || p.proparallel::text || p.prosecdef::text || ' ' || coalesce(p.proacl::text, '-')
       || ' ' || coalesce(obj_description(p.oid, 'pg_proc'), '-') || ' ' || md5(pg_get_functiondef(p.oid))
  FROM pg_proc p WHERE p.pronamespace = 'coord'::regnamespace
UNION ALL
SELECT 'view ' || c.relname || ' ' || md5(pg_get_viewdef(c.oid)) FROM pg_class c
 WHERE c.relnamespace = 'coord'::regnamespace AND c.relkind = 'v'
UNION ALL
SELECT 'cfg ' || unnest(extconfig)::regclass FROM pg_extension WHERE extname = 'pg_coord'
ORDER BY 1"
same_catalog() {  # same_catalog DB PATH: DB's catalog is a fresh install's
  q "$1" "$catalog" >"${TMPDIR:-/tmp}/coord_up.catalog" || fail "catalog query"
  q coord_fresh "$catalog" >"${TMPDIR:-/tmp}/coord_fresh.catalog" || fail "catalog query"
  if ! diff -u "${TMPDIR:-/tmp}/coord_fresh.catalog" "${TMPDIR:-/tmp}/coord_up.catalog" >"${TMPDIR:-/tmp}/coord_catalog.diff"; then
    head -40 "${TMPDIR:-/tmp}/coord_catalog.diff"
    fail "$2: the updated catalog differs from a fresh $dev installation (- fresh, + updated)"
  fi
  objects=$(wc -l <"${TMPDIR:-/tmp}/coord_fresh.catalog")
  checks=$((checks + 1))
  rm -f "${TMPDIR:-/tmp}"/coord_up.catalog "${TMPDIR:-/tmp}"/coord_fresh.catalog "${TMPDIR:-/tmp}"/coord_catalog.diff
}
same_catalog coord_up "0.1.0 -> 0.2.0 -> $dev"

# ---- 2. update from 0.2.0, with the state 0.2.0 wrote; its dump restored across the update
q coord_b020 "CREATE EXTENSION pg_coord VERSION '0.2.0'" >/dev/null
psql -qX -v ON_ERROR_STOP=1 -d coord_b020 -f "$(dirname "$0")/state-0.2.0.sql" >/dev/null || fail "loading the 0.2.0 state"
# the fixture's lease claim (job 3, token 3) is still running; its claimant is this superuser
q coord_b020 "UPDATE coord.job SET lease_until = now() + interval '1 hour', claimed_by = 'postgres'::regrole WHERE id = 3" >/dev/null
state020="
SELECT 'job ' || id || ' ' || queue || ' ' || state || ' ' || payload || ' ' || coalesce(key, '-') || ' ' || coalesce(group_key, '-') || ' ' || coalesce(origin, '-') || ' ' || token || ' ' || coalesce(result::text, '-') FROM coord.jobs
UNION ALL SELECT 'req ' || key || ' ' || state FROM coord.requests
UNION ALL SELECT 'fence ' || path || ' ' || token FROM coord.fences
UNION ALL SELECT 'name ' || path FROM coord.lock_names
UNION ALL SELECT 'sched ' || name || ' ' || queue || ' ' || coalesce(every::text, cron) || ' ' || coalesce(next_run_at::text, '-') || ' ' || coalesce(job_id::text, '-') FROM coord.schedules
UNION ALL SELECT 'run ' || app || ' ' || period_start || ' ' || state || ' ' || attempts || ' ' || coalesce(result::text, '-') FROM coord.runs
UNION ALL SELECT 'seq ' || last_value FROM coord.job_token_seq
UNION ALL SELECT 'seq ' || last_value FROM coord.fence_seq
ORDER BY 1"
q coord_b020 "$state020" >"${TMPDIR:-/tmp}/coord_b020.state" || fail "0.2.0 state query"
pg_dump -d coord_b020 >"${TMPDIR:-/tmp}/coord_b020.dump" || fail "pg_dump at 0.2.0"
q coord_b020 "ALTER EXTENSION pg_coord UPDATE" >/dev/null || fail "ALTER EXTENSION pg_coord UPDATE (0.2.0 -> $dev) failed"
expect coord_b020 "SELECT extversion FROM pg_extension WHERE extname = 'pg_coord'" "$dev" "0.2.0 updated to $dev"
q coord_b020 "$state020" >"${TMPDIR:-/tmp}/coord_b020.after" || fail "state query after the update"
diff -u "${TMPDIR:-/tmp}/coord_b020.state" "${TMPDIR:-/tmp}/coord_b020.after" || fail "the update from 0.2.0 changed the state (- before, + after)"
checks=$((checks + 1))
same_catalog coord_b020 "0.2.0 -> $dev"
expect coord_b020 "SELECT string_agg(state, ',' ORDER BY state) FROM (SELECT DISTINCT state FROM coord.jobs) s" \
       "cancelled,dead,done,ready,running,scheduled" "jobs of every state survive the update"
expect coord_b020 "SELECT coord.complete(3, 3, '{\"after\": 1}')" "t" "the 0.2.0 lease claim completes with its token"
expect coord_b020 "SELECT string_agg(c.group_key, ',') FROM coord.claim('u', 10) AS c WHERE c.group_key IS NOT NULL" "grp" \
       "one job of a group at a time, after the update"
expect coord_b020 "SELECT coord.request_state('u-done') || ',' || coord.request_state('u-queued')" "done,queued" "requests survive"
expect coord_b020 "SELECT coord.lock('/u/leader') AND coord.fence('/u/leader') > 2" "t" "fencing tokens go on increasing"
expect coord_b020 "SELECT coord.retry(id) FROM coord.jobs WHERE queue = 'u-dead'" "t" "a 0.2.0 dead job is retried"
q coord_b020 "SELECT coord.tick('2026-01-01 03:30Z')" >/dev/null || fail "tick after the update from 0.2.0"
expect coord_b020 "SELECT string_agg(to_char(period_start AT TIME ZONE 'UTC', 'HH24MI'), ',' ORDER BY period_start) FROM coord.runs WHERE app = 'u-up'" \
       "0000,0100,0200,0300" "apps go on from the 0.2.0 state (the next hour, nothing twice)"
# the 0.2.0 dump, restored where pg_coord is at $dev (pg_dump names no version)
psql -qX -v ON_ERROR_STOP=1 -d coord_b020_dst -f "${TMPDIR:-/tmp}/coord_b020.dump" >/dev/null 2>"${TMPDIR:-/tmp}/coord_restore.err" ||
  { cat "${TMPDIR:-/tmp}/coord_restore.err"; fail "restoring the 0.2.0 dump"; }
expect coord_b020_dst "SELECT extversion FROM pg_extension WHERE extname = 'pg_coord'" "$dev" "the 0.2.0 dump restores into $dev"
q coord_b020_dst "$state020" >"${TMPDIR:-/tmp}/coord_b020_dst.state" || fail "state query after the restore"
diff -u "${TMPDIR:-/tmp}/coord_b020.state" "${TMPDIR:-/tmp}/coord_b020_dst.state" || fail "the 0.2.0 dump restored across the update lost or changed rows (- 0.2.0, + restored)"
rows020=$(wc -l <"${TMPDIR:-/tmp}/coord_b020.state")
checks=$((checks + 1))
expect coord_b020_dst "SELECT coord.lock('/u/leader') AND coord.fence('/u/leader') > 2" "t" "fencing tokens after the restore across the update are larger"
expect coord_b020_dst "SELECT min(token) > 6 FROM coord.claim('u', 2)" "t" "claim tokens after the restore across the update are larger"
rm -f "${TMPDIR:-/tmp}"/coord_b020.state "${TMPDIR:-/tmp}"/coord_b020.after "${TMPDIR:-/tmp}"/coord_b020.dump "${TMPDIR:-/tmp}"/coord_b020_dst.state

# ---- 2b. update from 0.3.0, with the state 0.3.0 wrote; its dump restored across the update
q coord_b030 "CREATE EXTENSION pg_coord VERSION '0.3.0'" >/dev/null
psql -qX -v ON_ERROR_STOP=1 -d coord_b030 -f "$(dirname "$0")/state-0.3.0.sql" >/dev/null || fail "loading the 0.3.0 state"
# the fixture's lease claims (job 2 token 3; jobs 15 and 16 holding ul's
# limit slots) and its lease lock are live again; job 11's session-bound
# claim, e-lead's leader and pg's members were sessions now gone
q coord_b030 "UPDATE coord.job SET lease_until = now() + interval '1 hour' WHERE id IN (2, 15, 16);
              UPDATE coord.lease SET expires_at = now() + interval '1 hour'" >/dev/null
state030="
SELECT 'job ' || id || ' ' || queue || ' ' || state || ' ' || payload || ' ' || coalesce(key, '-') || ' ' || coalesce(group_key, '-') || ' ' || coalesce(limit_key, '-')
       || ' ' || coalesce(origin, '-') || ' ' || attempt || ' ' || token || ' ' || snoozes || ' ' || coalesce(expires_at::text, '-') || ' ' || coalesce(result::text, '-') || ' ' || coalesce(last_error, '-') FROM coord.jobs
UNION ALL SELECT 'req ' || key || ' ' || state FROM coord.requests
UNION ALL SELECT 'fence ' || path || ' ' || token FROM coord.fences
UNION ALL SELECT 'name ' || path FROM coord.lock_names
UNION ALL SELECT 'lease ' || path || ' ' || token || ' ' || coalesce(holder, '-') FROM coord.lease
UNION ALL SELECT 'limit ' || queue || ' ' || per_key || ' ' || coalesce(concurrency::text, '-') || ' ' || coalesce(rate::text, '-') || ' ' || per || ' ' || coalesce(burst::text, '-') FROM coord.job_limit
UNION ALL SELECT 'pause ' || queue || ' ' || limit_key || ' ' || coalesce(until::text, '-') FROM coord.job_pause
UNION ALL SELECT 'election ' || election || ' ' || term || ' ' || coalesce(value, '-') || ' ' || (pid IS NULL) FROM coord.elections
UNION ALL SELECT 'pgroup ' || partition_group || ' ' || segments || ' ' || assignor FROM coord.partition_groups
UNION ALL SELECT 'segment ' || partition_group || ' ' || segment || ' ' || token || ' ' || (owner_pid IS NULL) FROM coord.partition_segments
UNION ALL SELECT 'sched ' || name || ' ' || queue || ' ' || coalesce(every::text, cron) || ' ' || tz || ' ' || coalesce(next_run_at::text, '-') || ' ' || coalesce(job_id::text, '-') FROM coord.schedules
UNION ALL SELECT 'app ' || name || ' ' || coalesce(starts, '-') || ' ' || depends || ' ' || tz || ' ' || coalesce(deadline::text, '-') || ' ' || coalesce(next_period::text, '-') FROM coord.app_defs
UNION ALL SELECT 'run ' || app || ' ' || period_start || ' ' || attempt_no || ' ' || current || ' ' || state || ' ' || attempts || ' ' || coalesce(result::text, '-') FROM coord.runs
UNION ALL SELECT 'rerun ' || app || ' ' || period_start FROM coord.app_reruns
UNION ALL SELECT 'alert ' || app || ' ' || period_start || ' ' || kind || ' ' || (cleared_at IS NULL) || ' ' || events FROM coord.alerts
UNION ALL SELECT 'signal ' || name || ' ' || period_start || ' ' || payload FROM coord.signals
UNION ALL SELECT 'seq job ' || last_value FROM coord.job_token_seq
UNION ALL SELECT 'seq fence ' || last_value FROM coord.fence_seq
UNION ALL SELECT 'seq term ' || last_value FROM coord.election_term_seq
UNION ALL SELECT 'seq segment ' || last_value FROM coord.segment_token_seq
ORDER BY 1"
# rows pg_dump leaves out (members, buckets, limit slots): kept by the update only
live030="
SELECT 'member ' || partition_group || ' ' || member || ' ' || weight || ' ' || meta FROM coord.partition_members
UNION ALL SELECT 'bucket ' || queue || ' ' || limit_key || ' ' || tokens FROM coord.job_bucket
UNION ALL SELECT 'slot ' || queue || ' ' || per_key || ' ' || limit_key || ' ' || slot || ' ' || job_id || ' ' || token FROM coord.job_running
ORDER BY 1"
q coord_b030 "$state030" >"${TMPDIR:-/tmp}/coord_b030.state" || fail "0.3.0 state query"
q coord_b030 "$live030" >"${TMPDIR:-/tmp}/coord_b030.live" || fail "0.3.0 live state query"
pg_dump -d coord_b030 >"${TMPDIR:-/tmp}/coord_b030.dump" || fail "pg_dump at 0.3.0"
q coord_b030 "ALTER EXTENSION pg_coord UPDATE" >/dev/null || fail "ALTER EXTENSION pg_coord UPDATE (0.3.0 -> $dev) failed"
expect coord_b030 "SELECT extversion FROM pg_extension WHERE extname = 'pg_coord'" "$dev" "0.3.0 updated to $dev"
q coord_b030 "$state030" >"${TMPDIR:-/tmp}/coord_b030.after" || fail "state query after the update"
diff -u "${TMPDIR:-/tmp}/coord_b030.state" "${TMPDIR:-/tmp}/coord_b030.after" || fail "the update from 0.3.0 changed the state (- before, + after)"
q coord_b030 "$live030" >"${TMPDIR:-/tmp}/coord_b030.after" || fail "live state query after the update"
diff -u "${TMPDIR:-/tmp}/coord_b030.live" "${TMPDIR:-/tmp}/coord_b030.after" || fail "the update from 0.3.0 changed members, buckets or limit slots (- before, + after)"
checks=$((checks + 2))
same_catalog coord_b030 "0.3.0 -> $dev"
expect coord_b030 "SELECT string_agg(state, ',' ORDER BY state) FROM (SELECT DISTINCT state FROM coord.jobs) s" \
       "cancelled,dead,done,ready,running,scheduled" "0.3.0 jobs of every state survive the update"
expect coord_b030 "SELECT coord.complete(2, 3, '{\"after\": 1}')" "t" "the 0.3.0 lease claim completes with its token"
expect coord_b030 "SELECT count(*) FROM coord.claim('ul', 10)" "0" "limit slots held by 0.3.0 claims still count"
expect coord_b030 "SELECT coord.complete(15, 7) AND coord.complete(16, 8)" "t" "the claims holding the limit slots complete"
expect coord_b030 "SELECT string_agg(payload->>'l', ',' ORDER BY id) FROM coord.claim('ul', 10)" "3,4" "the freed slots are claimable, one per key"
expect coord_b030 "SELECT c.id FROM coord.claim('u-sess', 1) AS c WHERE c.token > 11" "11" \
       "a 0.3.0 session claim whose session is gone is claimed again, with a larger token"
expect coord_b030 "SELECT string_agg(c.group_key, ',') FROM coord.claim('u', 10) AS c WHERE c.group_key IS NOT NULL" "grp" \
       "one job of a group at a time, after the update from 0.3.0"
expect coord_b030 "SELECT count(*) FROM coord.claim('up', 1)" "0" "a 0.3.0 pause holds"
expect coord_b030 "SELECT coord.resume('up') AND (SELECT count(*) FROM coord.claim('up', 1)) = 1" "t" "it is resumed"
expect coord_b030 "SELECT coord.request_state('u-done') || ',' || coord.request_state('u-queued')" "done,queued" "0.3.0 requests survive"
expect coord_b030 "SELECT coord.lease_lock('/u/lease', '1 minute') IS NULL" "t" "a 0.3.0 lease lock still holds"
expect coord_b030 "SELECT coord.lock('/u/leader') AND coord.fence('/u/leader') > 3" "t" "fencing tokens go on increasing after 0.3.0"
expect coord_b030 "SELECT NOT EXISTS (SELECT FROM coord.leader('e-lead')) AND coord.campaign('e-lead', 'node-c', '1 second') > 2" "t" \
       "an election whose 0.3.0 leader is gone is won again, with a larger term"
expect coord_b030 "SELECT array_length(coord.join('pg', 'm3'), 1)" "8" "a partition group whose 0.3.0 members are gone goes to a new member"
expect coord_b030 "SELECT min(token) > 13 FROM coord.partition_segments" "t" "with larger segment tokens"
expect coord_b030 "SELECT coord.signal('feed', '2026-01-01 00:00Z')" "f" "0.3.0 signals survive"
q coord_b030 "SELECT coord.tick('2026-01-01 03:30Z')" >/dev/null || fail "tick after the update from 0.3.0"
expect coord_b030 "SELECT string_agg(to_char(period_start AT TIME ZONE 'UTC', 'HH24MI'), ',' ORDER BY period_start) FROM coord.runs WHERE app = 'u-up' AND current" \
       "0000,0100,0200,0300" "0.3.0 apps go on (the next hour, nothing twice)"
expect coord_b030 "SELECT bool_and(coord.complete(c.id, c.token, '{\"rows\": 8}')) FROM coord.claim('apps', 10) AS c" "t" \
       "u-up's runs complete, the rerun of its first hour among them"
expect coord_b030 "SELECT string_agg(to_char(period_start AT TIME ZONE 'UTC', 'HH24MI') || ':' || attempt_no, ',' ORDER BY period_start)
                     FROM coord.runs WHERE app = 'u-down' AND current" "0000:2,0100:1,0200:1,0300:1" \
       "the 0.3.0 rerun's downstream run is created once its upstream's new run completes"
# the 0.3.0 dump, restored where pg_coord is at $dev
psql -qX -v ON_ERROR_STOP=1 -d coord_b030_dst -f "${TMPDIR:-/tmp}/coord_b030.dump" >/dev/null 2>"${TMPDIR:-/tmp}/coord_restore.err" ||
  { cat "${TMPDIR:-/tmp}/coord_restore.err"; fail "restoring the 0.3.0 dump"; }
expect coord_b030_dst "SELECT extversion FROM pg_extension WHERE extname = 'pg_coord'" "$dev" "the 0.3.0 dump restores into $dev"
q coord_b030_dst "$state030" >"${TMPDIR:-/tmp}/coord_b030_dst.state" || fail "state query after the restore"
diff -u "${TMPDIR:-/tmp}/coord_b030.state" "${TMPDIR:-/tmp}/coord_b030_dst.state" || fail "the 0.3.0 dump restored across the update lost or changed rows (- 0.3.0, + restored)"
rows030=$(wc -l <"${TMPDIR:-/tmp}/coord_b030.state")
checks=$((checks + 1))
expect coord_b030_dst "SELECT coord.lock('/u/leader') AND coord.fence('/u/leader') > 3" "t" "fencing tokens after the restore of 0.3.0 are larger"
expect coord_b030_dst "SELECT min(token) > 11 FROM coord.claim('u', 2)" "t" "claim tokens after the restore of 0.3.0 are larger"
rm -f "${TMPDIR:-/tmp}"/coord_b030.state "${TMPDIR:-/tmp}"/coord_b030.live "${TMPDIR:-/tmp}"/coord_b030.after "${TMPDIR:-/tmp}"/coord_b030.dump "${TMPDIR:-/tmp}"/coord_b030_dst.state

# ---- 3. pg_dump and restore
q coord_src "CREATE EXTENSION pg_coord" >/dev/null
q coord_src "SELECT coord.enqueue('d', jsonb_build_object('n', g)) FROM generate_series(1, 5) g" >/dev/null
q coord_src "SELECT coord.enqueue('d', '{\"later\": true}', run_at => now() + interval '1 day', key => 'later')" >/dev/null
q coord_src "SELECT coord.complete(id, token, '{\"ok\": 1}') FROM coord.claim('d', 2)" >/dev/null
q coord_src "SELECT count(*) FROM coord.claim('d', 1, lease => '1 hour')" >/dev/null
q coord_src "SELECT coord.lock('/d/leader'), coord.fence('/d/leader'), coord.fence('/d/leader')" >/dev/null
q coord_src "SELECT coord.request('d-done'), coord.mark_done('d-done')" >/dev/null
q coord_src "SELECT coord.schedule('d-every', 'ds', every => '1 hour', payload => '{\"e\": 1}')" >/dev/null
q coord_src "SELECT coord.schedule('d-cron', 'ds', cron => '0 3 * * *')" >/dev/null
# nothing stored may be a time PostgreSQL cannot read back (or restore): a
# fixed-rate grid whose next slot is past the end of the timestamptz range is
# refused when defined, and one stored before that check stops at the
# finish of its instance (here: cancelled) instead of storing 294277-01-01
out=$(psql -qXAt -d coord_src -v VERBOSITY=verbose -c "SELECT coord.schedule('d-end', 'ds', every => '1 day', starts_at => '294276-12-31 12:00Z', fixed_rate => true)" 2>&1)
echo "$out" | grep -q "ERROR:  22008" || fail "a schedule whose next slot is out of range was not refused with 22008: $out"
checks=$((checks + 1))
q coord_src "SELECT coord.schedule('d-edge', 'ds', every => '1 day', fixed_rate => true)" >/dev/null
q coord_src "UPDATE coord.schedule_defs SET starts_at = '294276-12-31 12:00Z', next_run_at = '294276-12-31 12:00Z' WHERE name = 'd-edge';
             UPDATE coord.job SET run_at = '294276-12-31 12:00Z' WHERE origin = 's:d-edge'" >/dev/null
expect coord_src "SELECT coord.cancel(id) FROM coord.job WHERE origin = 's:d-edge'" "t" "the instance of a schedule at the end of the range is cancelled"
expect coord_src "SELECT count(*) FROM coord.schedule_defs WHERE next_run_at::text IS NOT NULL OR last_run_at::text IS NOT NULL OR starts_at::text IS NOT NULL" \
       "3" "every stored schedule time reads back"
expect coord_src "SELECT next_run_at IS NULL AND last_error LIKE '%out of range%' FROM coord.schedules WHERE name = 'd-edge'" "t" \
       "a schedule whose next slot is out of range stops with its error"
q coord_src "SELECT coord.define_app('d-up', starts => 'hourly', catchup_from => '2026-01-01 00:00Z'),
                    coord.define_app('d-down', depends => '{\"d-up\": \"hourly\"}')" >/dev/null
q coord_src "SELECT coord.tick('2026-01-01 02:30Z')" >/dev/null
q coord_src "SELECT coord.complete(id, token, '{\"rows\": 7}') FROM coord.claim('apps', 1)" >/dev/null
state="
SELECT 'job ' || id || ' ' || queue || ' ' || state || ' ' || payload || ' ' || coalesce(key, '-') || ' ' || coalesce(origin, '-') || ' ' || coalesce(result::text, '-') FROM coord.jobs
UNION ALL SELECT 'req ' || key || ' ' || state FROM coord.requests
UNION ALL SELECT 'fence ' || path || ' ' || token FROM coord.fences
UNION ALL SELECT 'sched ' || name || ' ' || queue || ' ' || coalesce(every::text, cron) || ' ' || coalesce(next_run_at::text, '-') || ' ' || coalesce(job_id::text, '-') FROM coord.schedules
UNION ALL SELECT 'run ' || app || ' ' || period_start || ' ' || state || ' ' || coalesce(result::text, '-') FROM coord.runs
ORDER BY 1"
q coord_src "$state" >"${TMPDIR:-/tmp}/coord_src.state" || fail "state query"
tok_before=$(q coord_src "SELECT max(token) FROM coord.fences")
job_tok_before=$(q coord_src "SELECT max(token) FROM coord.jobs")
pg_dump -d coord_src >"${TMPDIR:-/tmp}/coord_src.dump" || fail "pg_dump"
psql -qX -v ON_ERROR_STOP=1 -d coord_dst -f "${TMPDIR:-/tmp}/coord_src.dump" >/dev/null 2>"${TMPDIR:-/tmp}/coord_restore.err" ||
  { cat "${TMPDIR:-/tmp}/coord_restore.err"; fail "restore"; }
q coord_dst "$state" >"${TMPDIR:-/tmp}/coord_dst.state" || fail "state query"
if ! diff -u "${TMPDIR:-/tmp}/coord_src.state" "${TMPDIR:-/tmp}/coord_dst.state"; then
  fail "the restored state differs (- source, + restored)"
fi
rows=$(wc -l <"${TMPDIR:-/tmp}/coord_src.state")
checks=$((checks + 1))
rm -f "${TMPDIR:-/tmp}"/coord_src.state "${TMPDIR:-/tmp}"/coord_dst.state "${TMPDIR:-/tmp}"/coord_src.dump "${TMPDIR:-/tmp}"/coord_restore.err
expect coord_dst "SELECT coord.lock('/d/leader') AND coord.fence('/d/leader') > $tok_before" "t" "fencing tokens after the restore are larger"
expect coord_dst "SELECT min(token) > $job_tok_before FROM coord.claim('d', 2)" "t" "claim tokens after the restore are larger"
expect coord_dst "SELECT coord.enqueue('d', '{}', key => 'later') = (SELECT id FROM coord.job WHERE key = 'later')" "t" "dedupe keys hold after the restore"
expect coord_dst "SELECT coord.request('d-done')" "f" "a done request stays done"
expect coord_dst "SELECT count(*) FROM coord.schedules WHERE job_id IS NOT NULL" "2" "each schedule still has its instance"
q coord_dst "SELECT coord.tick('2026-01-01 03:30Z')" >/dev/null || fail "tick after the restore"
expect coord_dst "SELECT string_agg(to_char(period_start AT TIME ZONE 'UTC', 'HH24MI'), ',' ORDER BY period_start) FROM coord.runs WHERE app = 'd-up'" \
       "0000,0100,0200,0300" "apps go on from their stored state (the next hour, nothing twice)"
echo "upgrade_and_dump: $checks checks passed; 0.1.0 -> 0.2.0 -> $dev and 0.2.0 -> $dev keep jobs of every state, claims, requests, fences, schedules, apps and runs and match a fresh install ($objects catalog lines); the 0.2.0 dump restored across the update kept $rows020 rows; 0.3.0 -> $dev keeps its live state (elections, partitions, limits, leases, reruns, alerts, signals) and its dump restored across the update kept $rows030 rows; pg_dump/restore at $dev kept $rows state rows; tokens stay increasing"
