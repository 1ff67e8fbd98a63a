#!/bin/bash
# S1's autonomous component (examples/s1/component.sh) as a coord-agent task:
# what cron started in the original, a job now.  The allow-list fixes the
# component and procedure, so a job only says which one to run:
#
#   [task s1-checksum]
#   command = /path/to/examples/agent/tasks/s1-component.sh checksum 1 150
#
#   s1-component.sh COMPONENT PROCEDURE [WORK_MS]
#
# One job is one run until the index has nothing left for the component
# (procedure 1: index lock /SBOI/<component> only while picking a batch;
# procedure 2: the index lock held through every batch), each batch under
# its lock /<component>/B<batch>-RT<roundtrip> and stored with that lock's
# fencing token.  The worker is named <host>.job<id>, which is what
# s1.attempts, s1.results and coord.locks (application_name s1:<worker>)
# show.  The component's log goes to stderr and, with S1_LOGDIR set (a task
# env line), to S1_LOGDIR/<worker>.log; the last stdout line is the result:
#
#   {"component": "checksum", "worker": "tr-oddjob-dal-01.job1010", "stored": 3}
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 COMPONENT PROCEDURE [WORK_MS]" >&2; exit 2; }
component=$1 procedure=$2 work_ms=${3:-300}
s1=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../s1" && pwd)
worker="${COORD_HOST:?run me from coord-agent}.job${COORD_JOB_ID:?run me from coord-agent}"
exec 0</dev/null

rc=0
out=$("$BASH" "$s1/component.sh" -c "$component" -p "$procedure" -w "$worker" -t "$work_ms" 2>&1) || rc=$?
printf '%s\n' "$out" >&2
[ -n "${S1_LOGDIR:-}" ] && printf '%s\n' "$out" >"$S1_LOGDIR/$worker.log"
[ "$rc" = 0 ] || exit "$rc"
printf '{"component": "%s", "worker": "%s", "stored": %d}\n' \
  "$component" "$worker" "$(grep -c ' stored /' <<<"$out" || true)"
