#!/bin/bash
# A queue job for coord-agent.  Exit 0: done.  Exit 75 (EX_TEMPFAIL): try
# again later without using up an attempt; a last stdout line
# "retry_after=<seconds>" sets the delay (else the task's retry_after).
# Any other exit: failed; the end of stderr becomes the job's last_error.
set -uo pipefail
payload=$(cat)
if [ -e /var/spool/coord/throttled ]; then
  echo "relay answered 429 Too Many Requests" >&2
  echo "retry_after=120"
  exit 75
fi
echo "sending job $COORD_JOB_ID: $payload" >&2
echo '{"sent": true}'
