#!/usr/bin/env bash
# pg_coord through a transaction pooler: a real PgBouncer in pool_mode =
# transaction with one server connection (coord_pgbouncer_run, test/lib.sh),
# in front of the cluster of test/run.sh.  pgbouncer.py backs each row of
# the table of docs/operations/poolers.md with an assertion,
# psycopg 3's prepared statements (its defaults, prepare_threshold=None)
# included.
# Exit 0 = pass; the last line says what was checked.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
coord_pgbouncer_run coord_pgb "${COORD_PGB_PORT:-54355}" "$(dirname "$0")/pgbouncer.py"
