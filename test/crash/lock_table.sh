#!/usr/bin/env bash
# The shared lock table (issue 23, section 1) on a cluster of its own with
# max_locks_per_transaction = 64: a coord_worker's lease claims in one
# transaction take no entry, and claims over many limit keys and permits
# taken twice get 53400 at coord.max_locks_per_session; connections to
# another database keep working throughout (lock_table.py).  Exit 0 = pass.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
COORD_PGPORT=${COORD_LOCKTABLE_PGPORT:-54472} coord_cluster_start
echo "max_locks_per_transaction = 64" >>"$PGDATA/postgresql.conf"
coord_cluster_crash_restart
out=$("$PYTHON" "$(dirname "$0")/lock_table.py") || { echo "$out"; exit 1; }
echo "$out"
