#!/usr/bin/env bash
# The Python client's side of bench/run.sh's clients section: Worker and
# Client.enqueue beside hand-written psycopg 3 loops sending the same SQL
# (bench/clients/python.py says what each side sends).  Prints the lines of
# the clients convention (bench/run.sh's header): "ratio|SIDE|BASELINE|MIN|TEXT"
# first, then "SIDE|JOBS_PER_S|CPU_US_PER_JOB[|CLIENT_US|SERVER_US]" per round.
#   PGDATABASE=coord_bench bash bench/clients/python.sh
# Knobs: CLIENTS_ROUNDS (5), CLIENTS_JOBS (800 a single-job or enqueue side
# and round), CLIENTS_BATCH_JOBS (3200 a batched side and round).
set -eu
exec "${PYTHON:-/usr/bin/python3}" "$(dirname "$0")/python.py" --rounds "${CLIENTS_ROUNDS:-5}" \
  --jobs "${CLIENTS_JOBS:-800}" --batch-jobs "${CLIENTS_BATCH_JOBS:-3200}"
