#!/usr/bin/env bash
# Durable steps when the handler dies (issue 27, crash test): a worker
# process using three steps is SIGKILLed after step 2; re-run, it does not
# redo steps 1 and 2 and does step 3 once.  A worker stopped (SIGSTOP) past
# its lease is a zombie once another claims the job: resumed, its
# step_done is refused and its side effect rolls back.
set -euo pipefail
exec "${PYTHON:-/usr/bin/python3}" "$(dirname "$0")/steps_kill.py"
