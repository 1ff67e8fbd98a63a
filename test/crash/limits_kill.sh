#!/usr/bin/env bash
# SIGKILL a claim holder that fills a concurrency limit (issue 17, crash test):
# a session-bound holder's slot is free at once, a lease holder's at expiry, also
# across an immediate server restart.
set -euo pipefail
exec "${PYTHON:-/usr/bin/python3}" "$(dirname "$0")/limits_kill.py"
