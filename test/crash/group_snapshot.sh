#!/usr/bin/env bash
# A group's later job claimed while an earlier one's claim statement reads
# the group (issue 23 review), on a cluster of its own: group_snapshot.py
# stops that claim in coord.claim_free with gdb, after its snapshot, while
# the later job's lease claim commits.  Skipped (exit 0) without gdb or
# ptrace.  Exit 0 = pass; the last line says what was checked.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
if ! command -v gdb >/dev/null 2>&1; then
  echo "skipped: no gdb"
  exit 0
fi
COORD_PGPORT=${COORD_GROUPSNAP_PGPORT:-54474} coord_cluster_start
out=$("$PYTHON" "$(dirname "$0")/group_snapshot.py") || { echo "$out"; exit 1; }
echo "$out"
