#!/usr/bin/env bash
# coord.request with real processes: SIGKILLed owner, immediate server restart.
set -euo pipefail
exec "${PYTHON:-/usr/bin/python3}" "$(dirname "$0")/request_takeover.py"
