#!/bin/bash
# An app run for coord-agent: the period comes in COORD_PERIOD_START and
# COORD_PERIOD_END, the whole job (with "conf" and "upstream") as JSON on
# stdin.  The last line of stdout, if it is JSON, becomes the run's result,
# which downstream apps receive in their "upstream".
set -euo pipefail
payload=$(cat)
echo "report for $COORD_APP, $COORD_PERIOD_START .. $COORD_PERIOD_END (attempt $COORD_ATTEMPT)" >&2
mkdir -p "${REPORT_DIR:-/tmp}"
out="${REPORT_DIR:-/tmp}/$COORD_APP-${COORD_PERIOD_START%%T*}.json"
# fence the write: a run that lost its claim must not overwrite a newer one
printf '%s\n' "$payload" >"$out.$COORD_TOKEN" && mv "$out.$COORD_TOKEN" "$out"
printf '{"file": "%s", "bytes": %d}\n' "$out" "$(wc -c <"$out")"
