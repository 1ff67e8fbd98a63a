#!/usr/bin/env bash
# The Node client's tests (clients/node: node --test, TAP, one line per
# scenario of clients/scenarios.md) against the running cluster of
# test/run.sh (its PG* environment), or a private one when none answers.
# Installs what they need: pg from npm into clients/node (as
# examples/quickstart does), tsc from Debian's node-typescript, npm when
# missing; runs PgBouncer in transaction mode in front of the cluster for
# S-pgbouncer-lease (coord_pgbouncer_run, test/lib.sh).
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
NODE_DIR=$COORD_ROOT/clients/node
started=
if ! psql -qXAt -d postgres -c 'SELECT 1' >/dev/null 2>&1; then
  coord_build >/dev/null && coord_cluster_start && started=1
fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
command -v node >/dev/null || { echo "not ok 1 - node not found (Debian: nodejs)"; exit 1; }
if ! command -v npm >/dev/null; then
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null
fi
if ! command -v tsc >/dev/null; then
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq node-typescript >/dev/null ||
    { $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null &&
      $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq node-typescript >/dev/null; }
fi
if [ ! -d "$NODE_DIR/node_modules/pg" ]; then
  (cd "$NODE_DIR" && npm install --no-audit --no-fund --silent --no-package-lock) >/dev/null 2>&1 ||
    { echo "not ok 1 - npm install of pg in clients/node failed"; exit 1; }
fi
export PGB_DB=coord_node_pgb
PYTHON=$(command -v node) coord_pgbouncer_run coord_node_pgb "${COORD_NODE_PGB_PORT:-54367}" "$NODE_DIR/test/run.js"
rc=$?
coord_pgbouncer_stop
trap - EXIT
[ -n "$started" ] && coord_cluster_stop
exit $rc
