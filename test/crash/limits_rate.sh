#!/usr/bin/env bash
# A queue-wide rate limit under real workers (issue 17): 300 jobs at 10 claims
# a second with a burst of 5, six worker processes claiming as fast as they can.
set -euo pipefail
exec "${PYTHON:-/usr/bin/python3}" "$(dirname "$0")/limits_rate.py"
