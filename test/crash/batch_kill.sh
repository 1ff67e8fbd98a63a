#!/usr/bin/env bash
# A batch of BATCH_JOBS jobs (default 20000; 100000 for the issue's figure) worked by worker processes that
# are SIGKILLed at random (issue 27, crash test): exactly one callback job,
# with counts that match the history.
set -euo pipefail
exec "${PYTHON:-/usr/bin/python3}" "$(dirname "$0")/batch_kill.py" "$@"
