#!/usr/bin/env bash
# A wait that fails just as its lock is granted leaves no session lock behind.
set -euo pipefail
exec "${PYTHON:-/usr/bin/python3}" "$(dirname "$0")/lock_timeout_race.py"
