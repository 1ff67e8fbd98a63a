#!/usr/bin/env bash
# Load and faults: workers of every kind (locks with fencing tokens, requests,
# job producers and workers, two schedules, three apps, coord.tick callers)
# run together for LF_DURATION seconds (default 45) while the script SIGKILLs
# workers, terminates backends and restarts the server with pg_ctl -m
# immediate; then it drains the queues and checks and prints the invariants
# (no job lost or done twice, no request owned by two sessions, every lock
# free or held by a live session, fencing tokens strictly increasing,
# schedules and apps intact).  Its own cluster on port 54333, database lf.
#
# Environment: LF_DURATION, LF_SEED (repeat a fault schedule), LF_RESTARTS
# (default 2), LF_KEEP=1 keeps the worker logs.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
# a signal ends the script through its EXIT trap (coord_cluster_stop)
trap 'exit 130' INT TERM
COORD_PGPORT=54333 coord_cluster_start
coord_createdb lf
"$PYTHON" "$HERE/load_and_fault.py"
