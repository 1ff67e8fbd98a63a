#!/usr/bin/env bash
# bench/cascade.sh: how long a cancel takes to cascade (src/workflows/README.md,
# Cascades without recursion).  A private cluster gets, in its own database:
#   chain: N waiting jobs, each after the previous one, enqueued one per
#          transaction (as a producer would), the head far in the future;
#   fan:   N children of one parent (one coord.enqueue_many);
#   flow:  a coord.enqueue_flow of N nodes, each after the previous one;
# then VACUUM ANALYZE, and the head of each is cancelled in a fresh session,
# timed by psql.  Every job must end cancelled (checked).
#
#   bench/cascade.sh [N]      (default 10000; uses the installed pg_coord)
set -eu
N=${1:-10000}
DIR=$(cd "$(dirname "$0")/.." && pwd)
. "$DIR/test/lib.sh"
coord_cluster_start
coord_createdb coord_cascade
q() { psql -qXAt -d coord_cascade "$@"; }
head=$(q -c "SELECT coord.enqueue('chain', '{}', run_at => pg_catalog.now() + interval '1 day')")
{ echo "SELECT $head AS p \\gset"
  for _ in $(seq "$N"); do echo "SELECT coord.enqueue('chain', '{}', after => ARRAY[:p]) AS p \\gset"; done; } | q >/dev/null
fan=$(q -c "SELECT coord.enqueue('fan', '{}', run_at => pg_catalog.now() + interval '1 day')")
q -c "SELECT count(*) FROM coord.enqueue_many('fan', (SELECT array_agg('{}'::jsonb) FROM generate_series(1, $N)), after => ARRAY[$fan])" >/dev/null
flow=$(q -c "SELECT (coord.enqueue_flow((SELECT jsonb_agg(jsonb_build_object('name', 'n' || i, 'queue', 'flow')
  || CASE WHEN i > 1 THEN jsonb_build_object('after', jsonb_build_array('n' || (i - 1))) ELSE '{}' END)
  FROM generate_series(1, $N) AS i)) ->> 'n1')")
q -c "VACUUM ANALYZE"
for what in "chain $head" "fan $fan" "flow $flow"; do
  set -- $what
  ms=$(psql -qX -d coord_cascade -c '\timing on' -c "SELECT coord.cancel($2)" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p')
  left=$(q -c "SELECT count(*) FROM coord.jobs WHERE queue = '$1' AND state <> 'cancelled'")
  [ "$left" = 0 ] || { echo "FAIL: $left jobs of $1 not cancelled"; exit 1; }
  echo "$1 of $N: cancel cascaded in $ms ms"
done
