#!/usr/bin/env bash
# Partition groups with real processes: three members 3:2:1 claim from one
# queue, one is SIGKILLed; the survivors own its segments, no job is done
# twice or lost.
set -euo pipefail
exec "${PYTHON:-/usr/bin/python3}" "$(dirname "$0")/partitions_kill.py" "$@"
