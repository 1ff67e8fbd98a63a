#!/usr/bin/env bash
# make bench, clients section: the Node client (clients/node) against
# hand-written node-postgres loops doing the same SQL, on the running cluster
# of make bench (its PG* environment), in a database of its own
# (coord_bench_node, dropped at the end).
#
# Prints the lines of bench/run.sh's clients convention on stdout: the
# comparisons (ratio|SIDE|BASELINE|MIN_RATIO|TEXT), then one line per round
# and side, SIDE|JOBS_PER_S|CPU_US_PER_JOB|CLIENT_US|SERVER_US (CPU per job:
# this Node process plus its server backend, from /proc). Sides:
#   worker_single / raw_single        concurrency 1, coord.complete_and_claim per job
#   worker_onecommit / worker_claim_then_complete
#                                     the single-job Worker with and without
#                                     coord.complete_and_claim (issue 28: >= 1.3x)
#   worker_batch / raw_batch          claims of 100; raw: claim + complete_many
#   enqueue_client / enqueue_raw      Client.enqueue against pg.Pool.query
# Knobs:
# CLIENTS_ROUNDS (3), CLIENTS_JOBS (600: a single-job or enqueue side),
# CLIENTS_BATCH_JOBS (6000), NODE_BENCH_SIDES (all) — see
# clients/node/bench/worker_bench.js.  About a minute and a half on 2 busy
# cores.  Exits 0, also when Node or pg cannot be had (then says why on stderr).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
NODE_DIR=$ROOT/clients/node
DB=coord_bench_node
if ! command -v node >/dev/null; then
  echo "# bench/clients/node.sh: node not found (Debian: nodejs); skipped" >&2
  exit 0
fi
if [ ! -d "$NODE_DIR/node_modules/pg" ]; then
  (cd "$NODE_DIR" && npm install --no-audit --no-fund --silent --no-package-lock) >/dev/null 2>&1 || {
    echo "# bench/clients/node.sh: npm install of pg in clients/node failed; skipped" >&2
    exit 0
  }
fi
psql -qX -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null &&
  psql -qX -d "$DB" -c "CREATE EXTENSION pg_coord" >/dev/null || {
  echo "# bench/clients/node.sh: could not create database $DB; skipped" >&2
  exit 0
}
BENCH_DB=$DB node "$NODE_DIR/bench/worker_bench.js" ||
  echo "# bench/clients/node.sh: clients/node/bench/worker_bench.js failed (exit $?)" >&2
psql -qX -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1
exit 0
