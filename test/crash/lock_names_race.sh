#!/usr/bin/env bash
# A rolled-back registrar must not leave a waiter's path unnamed (the
# iso_locks_registry flake): see lock_names_race.py.
set -euo pipefail
exec "${PYTHON:-/usr/bin/python3}" "$(dirname "$0")/lock_names_race.py"
