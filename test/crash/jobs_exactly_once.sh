#!/usr/bin/env bash
# The job queue under crashes: 8 worker processes (session-bound and lease
# claims) do 20,000 jobs while 6 of them are SIGKILLed and the server is
# restarted once with pg_ctl -m immediate; every job must be done exactly
# once by a results table written in the same transaction as coord.complete.
set -euo pipefail
exec "${PYTHON:-/usr/bin/python3}" "$(dirname "$0")/jobs_exactly_once.py"
