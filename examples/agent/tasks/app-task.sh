#!/bin/bash
# A generic app run for coord-agent: the task of S2's four apps in the agent
# demo (examples/agent/demo_section.sh).  The agent starts it for a job whose
# payload is {"app": ..., "period_start": ..., "period_end": ..., "conf": {},
# "upstream": {APP: [result, ...], ...}} and hands over COORD_APP,
# COORD_PERIOD_START and COORD_HOST; the payload comes on stdin (always,
# unlike COORD_PAYLOAD, which is unset above 64 KiB).
#
# "Work": an app without upstream runs (adxcheck, retgtcheck) counts a
# made-up number of rows for its hour; an app with upstream runs (counter,
# bigcounter) adds up the "rows" of their results and counts them per app.
# The result is the last line of stdout, which the agent passes to
# coord.complete; downstream runs receive it in their payload's "upstream":
#
#   {"app": "counter", "period": "2026-11-16T05:00:00Z", "host": "tr-oddjob-dal-02",
#    "rows": 82, "upstream": {"adxcheck": 1, "retgtcheck": 1}}
#
# Plain bash, no other process: an app run costs one fork and exec.
set -euo pipefail
payload=$(cat)
: "${COORD_APP:?not an app run}" "${COORD_PERIOD_START:?not an app run}" "${COORD_HOST:?}"
ps=$COORD_PERIOD_START                                   # 2026-11-16T05:00:00Z
result="{\"app\": \"$COORD_APP\", \"period\": \"$ps\", \"host\": \"$COORD_HOST\""

if [[ $payload != *'"upstream": {"'* ]]; then
  day=$((10#${ps:8:2})) hour=$((10#${ps:11:2}))
  echo "$result, \"rows\": $(( (hour * 7 + day * 3) % 50 + ${#COORD_APP} ))}"   # stable per app and hour
  exit 0
fi

# The upstream results, one per '}'-separated piece (they are flat objects
# with "app" and "rows", as this task writes them).
declare -A runs=()
rows=0 re='"app": "([^"]+)".*"rows": ([0-9]+)'
IFS='}' read -r -a pieces <<<"${payload#*'"upstream": '}"
for piece in "${pieces[@]}"; do
  if [[ $piece =~ $re ]]; then
    runs[${BASH_REMATCH[1]}]=$(( ${runs[${BASH_REMATCH[1]}]:-0} + 1 ))
    rows=$(( rows + BASH_REMATCH[2] ))
  fi
done
up=''
for app in "${!runs[@]}"; do up+="${up:+, }\"$app\": ${runs[$app]}"; done
echo "$result, \"rows\": $rows, \"upstream\": {$up}}"
