#!/usr/bin/env bash
# Lease locks through a real PgBouncer in pool_mode = transaction with one
# server connection (coord_pgbouncer_run, test/lib.sh), in front of the
# cluster of test/run.sh; and a lease holder killed with SIGKILL, whose
# lease is free at its TTL and not before (lease_pgbouncer.py).
# Exit 0 = pass; the last line says what was checked.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
coord_pgbouncer_run coord_lpgb "${COORD_LEASE_PGB_PORT:-54475}" "$(dirname "$0")/lease_pgbouncer.py"
