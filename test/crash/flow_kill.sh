#!/usr/bin/env bash
# Job dependencies under crashes: a flow of 50 nodes (coord.enqueue_flow)
# over 4 worker processes, two of them SIGKILLed and the server restarted
# once with pg_ctl -m immediate; every node must be done exactly once (a
# results table written in the same transaction as coord.complete) and no
# node started before all its parents had ended.
set -euo pipefail
exec "${PYTHON:-/usr/bin/python3}" "$(dirname "$0")/flow_kill.py"
