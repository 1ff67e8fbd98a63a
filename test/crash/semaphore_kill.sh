#!/usr/bin/env bash
# SIGKILL a semaphore permit holder while a client waits (issue 16, crash test).
set -euo pipefail
exec "${PYTHON:-/usr/bin/python3}" "$(dirname "$0")/semaphore_kill.py"
