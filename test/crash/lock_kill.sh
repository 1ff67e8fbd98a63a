#!/usr/bin/env bash
# SIGKILL a session-lock holder while a client waits (issue: locks, crash test).
set -euo pipefail
exec "${PYTHON:-/usr/bin/python3}" "$(dirname "$0")/lock_kill.py"
