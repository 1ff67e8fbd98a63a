# Shared by the coord-agent test scripts (test/agent/*.sh).  Source it after
# test/lib.sh, with COORD_PGPORT set to the script's own port (54340-54349).
#
#   agent_setup          private cluster + database agent_test + agent build +
#                        a work directory $W + tables t.starts / t.results
#   start_agent NAME CONFIG [ARGS...]
#                        runs coord-agent in the background, its log in
#                        $W/NAME.log, its server session named NAME
#   wait_sql COND SECS   waits until an SQL boolean is true
#   wait_log NAME RE SECS  waits until the agent's log has a matching line
#   pids_alive PID...    how many of these processes still run (not zombies)
#   check DESC TEST...   runs TEST; counts and prints ok/FAIL (eq, between)
#   finish SUMMARY       prints the result; the last line is the summary
#
# The child script $W/child.sh (the task command of most tests) records its
# start in t.starts, then waits in a grandchild (so that killing the process
# group matters): until the file $GATE exists (open_gate), or $SLEEP seconds;
# then records its end in t.results together with whether its claim was
# still valid at that moment, prints a JSON result and exits $EXIT.  GATE,
# SLEEP, EXIT and AGENT come from the task's env lines.  Gated jobs make the
# tests independent of the machine's speed: nothing finishes before the
# test has done what it must do while the jobs run.

AGENT_BIN=${COORD_AGENT_BIN:-$COORD_ROOT/agent/coord-agent}   # COORD_AGENT_BIN: try another build
declare -A AGENT_PID=()
FAILS=0
CHECKS=0

agent_teardown() {
  local p
  for p in "${AGENT_PID[@]}"; do
    kill -9 "$p" 2>/dev/null || true
  done
  coord_cluster_stop
}

agent_setup() {
  coord_cluster_start
  trap agent_teardown EXIT
  coord_createdb agent_test
  export PGDATABASE=agent_test
  make -C "$COORD_ROOT/agent" -s >/dev/null
  W=$COORD_TMP/agent
  mkdir -p "$W"
  psql -qX -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE SCHEMA t;
CREATE TABLE t.starts (job_id bigint, token bigint, attempt int, pid int, sleep_pid int,
                       agent text, task text, at timestamptz DEFAULT clock_timestamp());
CREATE TABLE t.results (job_id bigint, token bigint, agent text, claim_valid boolean,
                        at timestamptz DEFAULT clock_timestamp());
SQL
  cat >"$W/child.sh" <<'EOF'
#!/bin/bash
# A test job: start row, sleep (grandchild), fenced end row, JSON result.
set -u
exec 0</dev/null
q() { psql -qAtX -v ON_ERROR_STOP=1 -v id="$COORD_JOB_ID" -v tok="$COORD_TOKEN" \
        -v att="$COORD_ATTEMPT" -v pid=$$ -v sp="${sp:-0}" -v agent="${AGENT:-}" -v task="$COORD_TASK"; }
sp=0
if [ -n "${GATE:-}" ]; then
  # block until the test opens the gate; give up if this shell has died
  me=$$
  ( while [ ! -e "$GATE" ]; do
      { read -r _ _ st _ <"/proc/$me/stat"; } 2>/dev/null || exit 0
      [ "$st" = Z ] && exit 0
      sleep 0.05
    done ) & sp=$!
elif [ -n "${SLEEP:-}" ]; then
  sleep "$SLEEP" & sp=$!
fi
q <<'SQL'
INSERT INTO t.starts (job_id, token, attempt, pid, sleep_pid, agent, task)
VALUES (:id, :tok, :att, :pid, :sp, :'agent', :'task');
SQL
[ "$sp" != 0 ] && wait "$sp"
q <<'SQL'
INSERT INTO t.results (job_id, token, agent, claim_valid)
SELECT :id, :tok, :'agent',
       EXISTS (SELECT FROM coord.jobs WHERE id = :id AND token = :tok AND state = 'running');
SQL
echo "{\"job\": $COORD_JOB_ID, \"agent\": \"${AGENT:-}\"}"
exit "${EXIT:-0}"
EOF
  chmod +x "$W/child.sh"
}

# start_agent NAME CONFIG [ARGS...]
start_agent() {
  local name=$1 conf=$2; shift 2
  # the agent refuses a config file others may write (whatever the umask)
  [ -O "$conf" ] && chmod go-w "$conf"
  "$AGENT_BIN" -f "$conf" -d "dbname=agent_test application_name=$name" "$@" >>"$W/$name.log" 2>&1 &
  AGENT_PID[$name]=$!
}

sql() { psql -qAtX -v ON_ERROR_STOP=1 -c "$1"; }

# Lets every gated job (env GATE=$W/gate) go on to its end.
open_gate() { touch "$W/gate"; }

# Milliseconds since the epoch, without forking date (this machine forks slowly).
now_ms() { local t=${EPOCHREALTIME/./}; echo $(( t / 1000 )); }

# wait_sql CONDITION SECONDS: true once the SQL boolean is true.
wait_sql() {
  local cond=$1 limit=$(( $(now_ms) + ${2%.*} * 1000 ))
  while [ "$(now_ms)" -lt "$limit" ]; do
    [ "$(sql "SELECT ($cond)::boolean")" = t ] && return 0
    sleep 0.02
  done
  return 1
}

# wait_log NAME PATTERN SECONDS: true once the agent's log has a matching line.
wait_log() {
  local limit=$(( $(now_ms) + ${3%.*} * 1000 ))
  while [ "$(now_ms)" -lt "$limit" ]; do
    grep -q -- "$2" "$W/$1.log" 2>/dev/null && return 0
    sleep 0.02
  done
  return 1
}

# pids_alive PID...: how many of them still exist (zombies do not count).
pids_alive() {
  local n=0 p st
  for p in "$@"; do
    [ "$p" -gt 0 ] 2>/dev/null || continue
    { read -r _ _ st _ <"/proc/$p/stat"; } 2>/dev/null || continue
    [ "$st" != Z ] && n=$((n + 1))
  done
  echo "$n"
}

check() {
  local desc=$1; shift
  CHECKS=$((CHECKS + 1))
  if "$@"; then
    echo "  ok   $desc"
  else
    echo "  FAIL $desc"
    FAILS=$((FAILS + 1))
  fi
}

# eq GOT WANT: for check.
eq() { [ "$1" = "$2" ] || { echo "       got '$1', want '$2'"; return 1; }; }

# between VALUE LOW HIGH (numbers, may be decimal): for check.
between() {
  awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }' ||
    { echo "       got $1, want between $2 and $3"; return 1; }
}

# The duration= field of a job's end line in an agent log, in seconds.
end_duration() {
  sed -n "s/.*job $2 end .*duration=\([0-9.]*\)s.*/\1/p" "$W/$1.log" | tail -1
}

# coordctl, for the scripts that test it (COORD_CTL_BIN: another binary)
CTL=${COORD_CTL_BIN:-$COORD_ROOT/agent/coordctl}
# ctl [ARGS...]: runs coordctl; sets out, err, rc
ctl() {
  rc=0
  "$CTL" "$@" >"$W/out" 2>"$W/err" || rc=$?
  out=$(cat "$W/out"); err=$(cat "$W/err")
}
# json FIELD-EXPRESSION: evaluates a Python expression on the parsed stdout (j)
json() { python3 -c "import json,sys; j=json.load(open('$W/out')); print(($1))" 2>/dev/null || echo "(stdout is not JSON: $(head -c 200 "$W/out"))"; }
# as ROLE ARGS...: ctl as that role, in agent_setup's database
as() { local u=$1; shift; ctl -d "dbname=agent_test user='$u'" "$@"; }

finish() {
  local name
  if [ "$FAILS" -eq 0 ]; then
    echo "$1"
    exit 0
  fi
  for name in "${!AGENT_PID[@]}"; do
    echo "--- $W/$name.log (last 40 lines)"
    tail -40 "$W/$name.log" 2>/dev/null || true
  done
  echo "$(basename "$0" .sh): FAILED $FAILS of $CHECKS checks ($1)"
  exit 1
}
