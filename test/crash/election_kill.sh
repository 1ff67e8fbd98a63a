#!/usr/bin/env bash
# Leader election (issue 16, section 3) on a cluster of its own: the leader
# SIGKILLed -> the next candidate leads (hand-over time printed), with a
# larger term; coord.leader never reports the dead leader after its death;
# a LISTENing observer gets the NOTIFY; and terms survive an immediate
# server restart (the next term is still larger).  Exit 0 = pass.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
COORD_PGPORT=${COORD_ELECTION_PGPORT:-54470} coord_cluster_start
kill_out=$("$PYTHON" "$(dirname "$0")/election_kill.py") || { echo "$kill_out"; exit 1; }
echo "$kill_out"
coord_cluster_crash_restart
restart_out=$("$PYTHON" "$(dirname "$0")/election_kill.py" after-restart) || { echo "$restart_out"; exit 1; }
echo "$restart_out"
echo "election: ${kill_out##*$'\n'}; $restart_out"
