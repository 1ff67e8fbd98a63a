#!/usr/bin/env bash
# bench/callgrind.sh: instructions per job, counted by valgrind's callgrind,
# for pg_coord's claim + complete and for the hand-written SKIP LOCKED queue
# of bench/run.sh.  Instruction counts do not depend on the machine's load,
# so they show a change of a few percent that make bench's throughput
# figures (noisy on a shared 2-core machine) cannot.
#
#   bench/callgrind.sh [jobs]      (default 3000; needs valgrind)
#
# A private cluster (fsync off) gets 40,000 ready jobs in coord.job and in
# the raw table; then `postgres --single` runs under callgrind, once per
# side, one prepared statement per job and transaction:
#   coord: SELECT coord.complete(id, token) FROM coord.claim('q')
#   worker: the same as a member of coord_worker (not the owner: a lease
#          claim's completion then tests the claiming role)
#   group: the coord side with partition_group, as the one member of a group
#          (issue 16: at most 1.1x coord)
#   raw:   WITH c AS (UPDATE ... FOR UPDATE SKIP LOCKED ... RETURNING id)
#          DELETE FROM bench_jobs USING c WHERE bench_jobs.id = c.id
# Enqueue sides (issue 27, not in the default; CALLGRIND_SIDES="enq enqafter
# enqdone"): the instructions per enqueue of
#   enq:      SELECT coord.enqueue('e', '{"x":1}')
#   enqafter: the same with after => ARRAY[p], p a live job in another queue
#   enqdone:  the same with after => ARRAY[p], p a finished job (history)
#   next:  one commit per job, as a worker loop runs it: complete_and_claim
#          of the job in hand (its id and token carried from one statement to
#          the next in two settings, set_config), which claims the next
#   nextraw: the raw queue's same loop: WITH d AS (DELETE the job in hand)
#          UPDATE ... SKIP LOCKED ... RETURNING, carried the same way
#   batch: SELECT coord.complete_many(array_agg(id), array_agg(token))
#          FROM coord.claim('q', 100): 100 jobs a statement (counted per job)
#   batchraw: the raw queue's WITH c AS (UPDATE ... LIMIT 100 ...) DELETE
# (the default sides: coord worker group raw next nextraw batch batchraw)
# Each side also runs 0 jobs (start-up and PREPARE only), which is
# subtracted.  Both run claim and complete in one statement here (make bench
# runs them as two transactions), so only the ratio and the changes between
# commits mean anything.  Uses the installed pg_coord.
set -eu
JOBS=${1:-3000}
DIR=$(cd "$(dirname "$0")/.." && pwd)
. "$DIR/test/lib.sh"
command -v valgrind >/dev/null || { log "valgrind is not installed (apt-get install valgrind)"; exit 2; }

TMP=$(mktemp -d /tmp/pg_coord_cg.XXXXXX)
chmod 755 "$TMP"
[ "$(id -u)" -eq 0 ] && chown postgres: "$TMP"
DATA=$TMP/data
as_pg "$PGBIN/initdb" -D "$DATA" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
cat >>"$DATA/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$TMP'
port = ${COORD_PGPORT:-54361}
fsync = off
synchronous_commit = off
CONF
as_pg "$PGBIN/pg_ctl" -D "$DATA" -l "$TMP/server.log" -w start >/dev/null
trap 'as_pg "$PGBIN/pg_ctl" -D "$DATA" -m immediate -w stop >/dev/null 2>&1 || true; rm -rf "$TMP"' EXIT
psql -qX -h "$TMP" -p "${COORD_PGPORT:-54361}" -U postgres -d postgres -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE EXTENSION pg_coord;
CREATE ROLE cg_worker IN ROLE coord_worker;
SELECT count(*) FROM generate_series(1, 4) AS i,
  LATERAL coord.enqueue_many('q', array_fill(jsonb_build_object('x', 1 + 0 * i), ARRAY[10000])) AS e;
CREATE TABLE bench_jobs (id bigserial PRIMARY KEY, queue text NOT NULL, payload jsonb NOT NULL,
  run_at timestamptz NOT NULL DEFAULT now(), priority int NOT NULL DEFAULT 0,
  state text NOT NULL DEFAULT 'ready', attempts int NOT NULL DEFAULT 0, locked_until timestamptz);
CREATE INDEX bench_jobs_ready ON bench_jobs (queue, priority DESC, run_at, id) WHERE state = 'ready';
INSERT INTO bench_jobs (queue, payload) SELECT 'q', '{"x":1}' FROM generate_series(1, 40000);
-- the enqueue sides' parents: a live job (with a child already, so it is
-- marked as a parent, as in steady use) and a finished one
SELECT coord.enqueue('p', '{}', priority => -1);
SELECT coord.enqueue('p', '{}', after => ARRAY[(SELECT max(id) FROM coord.job WHERE queue = 'p')]);
SELECT coord.enqueue('pd', '{}');
SELECT coord.complete(id, token) FROM coord.claim('pd');
VACUUM ANALYZE;
SQL
# CALLGRIND_WAITING=N: N waiting jobs in queue q (after a parent that never
# ends), to count what a waiting backlog costs the claims (issue 27)
if [ "${CALLGRIND_WAITING:-0}" -gt 0 ]; then
  psql -qX -h "$TMP" -p "${COORD_PGPORT:-54361}" -U postgres -d postgres -v ON_ERROR_STOP=1 >/dev/null <<SQL
SELECT coord.enqueue('wbp', '{}');
SELECT count(*) FROM generate_series(1, ceil(${CALLGRIND_WAITING} / 10000.0)::int) AS i,
  LATERAL coord.enqueue_many('q', array_fill(jsonb_build_object('i', i), ARRAY[10000]),
                             after => ARRAY[(SELECT id FROM coord.job WHERE queue = 'wbp')]) AS e;
VACUUM ANALYZE;
SQL
  log "waiting jobs in queue q: $(psql -qXAt -h "$TMP" -p "${COORD_PGPORT:-54361}" -U postgres -d postgres -c "SELECT count(*) FROM coord.job_wait WHERE queue = 'q'")"
fi
PLIVE=$(psql -qXAt -h "$TMP" -p "${COORD_PGPORT:-54361}" -U postgres -d postgres -c "SELECT id FROM coord.job WHERE queue = 'p'")
PDONE=$(psql -qXAt -h "$TMP" -p "${COORD_PGPORT:-54361}" -U postgres -d postgres -c "SELECT id FROM coord.job_history WHERE queue = 'pd'")
as_pg "$PGBIN/pg_ctl" -D "$DATA" -w stop >/dev/null

declare -A PREP=(
  [coord]="PREPARE j AS SELECT coord.complete(id, token) FROM coord.claim('q');"
  [worker]="SET ROLE cg_worker; PREPARE j AS SELECT coord.complete(id, token) FROM coord.claim('q');"
  [group]="SELECT coord.join('g', 'm'); PREPARE j AS SELECT coord.complete(id, token) FROM coord.claim('q', partition_group => 'g');"
  [enq]="PREPARE j AS SELECT coord.enqueue('e', '{\"x\":1}');"
  [enqafter]="PREPARE j AS SELECT coord.enqueue('e', '{\"x\":1}', after => ARRAY[${PLIVE}::bigint]);"
  [enqdone]="PREPARE j AS SELECT coord.enqueue('e', '{\"x\":1}', after => ARRAY[${PDONE}::bigint]);"
  [raw]="PREPARE j AS WITH c AS (UPDATE bench_jobs SET state = 'running', attempts = attempts + 1, locked_until = now() + interval '5 minutes' WHERE id IN (SELECT id FROM bench_jobs WHERE queue = 'q' AND state = 'ready' AND run_at <= now() ORDER BY priority DESC, run_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id) DELETE FROM bench_jobs USING c WHERE bench_jobs.id = c.id;"
  [next]="SELECT set_config('cg.id', id::text, false), set_config('cg.token', token::text, false) FROM coord.claim('q'); PREPARE j AS SELECT set_config('cg.id', id::text, false), set_config('cg.token', token::text, false) FROM coord.complete_and_claim(current_setting('cg.id')::bigint, current_setting('cg.token')::bigint);"
  [nextraw]="WITH c AS (UPDATE bench_jobs SET state = 'running', attempts = attempts + 1, locked_until = now() + interval '5 minutes' WHERE id IN (SELECT id FROM bench_jobs WHERE queue = 'q' AND state = 'ready' AND run_at <= now() ORDER BY priority DESC, run_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id) SELECT set_config('cg.id', id::text, false) FROM c; PREPARE j AS WITH d AS (DELETE FROM bench_jobs WHERE id = current_setting('cg.id')::bigint), c AS (UPDATE bench_jobs SET state = 'running', attempts = attempts + 1, locked_until = now() + interval '5 minutes' WHERE id IN (SELECT id FROM bench_jobs WHERE queue = 'q' AND state = 'ready' AND run_at <= now() ORDER BY priority DESC, run_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id) SELECT set_config('cg.id', id::text, false) FROM c;"
  [batch]="PREPARE j AS SELECT coord.complete_many(array_agg(id), array_agg(token)) FROM coord.claim('q', 100);"
  [batchraw]="PREPARE j AS WITH c AS (UPDATE bench_jobs SET state = 'running', attempts = attempts + 1, locked_until = now() + interval '5 minutes' WHERE id IN (SELECT id FROM bench_jobs WHERE queue = 'q' AND state = 'ready' AND run_at <= now() ORDER BY priority DESC, run_at, id LIMIT 100 FOR UPDATE SKIP LOCKED) RETURNING id) DELETE FROM bench_jobs USING c WHERE bench_jobs.id = c.id;"
)
# jobs per EXECUTE of a side (the batch sides take 100 a statement)
declare -A PER=([batch]=100 [batchraw]=100)
# instructions of one single-user run of n jobs, on a fresh copy of the data
count() {
  local side=$1 n=$2 copy=$TMP/run
  rm -rf "$copy" && cp -a "$DATA" "$copy" && chmod 700 "$copy"
  { echo "${PREP[$side]}"; for _ in $(seq "$n"); do echo "EXECUTE j;"; done; } >"$TMP/script.sql"
  chown postgres: "$TMP/script.sql" 2>/dev/null || true
  as_pg valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.out" ${CALLGRIND_OPTS:-} \
    "$PGBIN/postgres" --single -D "$copy" -c shared_preload_libraries= postgres \
    <"$TMP/script.sql" >"$TMP/single.log" 2>&1
  # CALLGRIND_KEEP=DIR keeps each run's profile (callgrind_annotate it)
  [ -n "${CALLGRIND_KEEP:-}" ] && cp "$TMP/cg.out" "$CALLGRIND_KEEP/cg.$side.$n.out"
  sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p' "$TMP/single.log"
}
printf '%-8s %12s %16s\n' side "jobs" "instructions/job"
for side in ${CALLGRIND_SIDES:-coord worker group raw next nextraw batch batchraw}; do
  per=${PER[$side]:-1}
  base=$(count "$side" 0)
  full=$(count "$side" $((JOBS / per)))
  printf '%-8s %12s %16s\n' "$side" "$((JOBS / per * per))" "$(( (full - base) / (JOBS / per * per) ))"
done
