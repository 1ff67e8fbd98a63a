#!/usr/bin/env bash
# Failover under load with pg_auto_failover (issue 24): a monitor and two
# PostgreSQL nodes with pg_coord, on loopback TCP ports, run as the
# `postgres` OS user, each under its own `pg_autoctl run`; then
# test/ha/failover.py drives workers, coord-agents, lock holders and
# election candidates through one planned failover and one crash of the
# primary, and checks what survived.
#
# The monitor runs on the PostgreSQL whose lib directory has Debian's
# pgautofailover library (/usr/lib/postgresql/M/bin); the nodes run on the
# PostgreSQL pg_coord was installed into (pg_config, $PGBIN).  Everything
# lives in one temporary directory: data directories, pg_autoctl's
# configuration, state and pid files (XDG_* variables), logs.  Every process
# this script starts is in a process group of its own (setsid) and is killed
# on exit, pass or fail.
#
# Settings (environment): COORD_HA_PORT (first of three ports, default
# 55471), and those failover.py reads (HA_*).  Exit 0 = pass; the last line
# is a one-line summary.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../lib.sh"
set -euo pipefail

M=$(coord_pg_major)
MON_BIN=/usr/lib/postgresql/$M/bin
BASE=${COORD_HA_PORT:-55471}
MON_PORT=$BASE N1_PORT=$((BASE + 1)) N2_PORT=$((BASE + 2))
AUTOCTL=$(command -v pg_autoctl || echo /usr/bin/pg_autoctl)
[ -x "$AUTOCTL" ] || { echo "FAIL: pg_autoctl not found (Debian: pg-auto-failover-cli)"; exit 1; }
[ -e "$(dirname "$MON_BIN")/lib/pgautofailover.so" ] ||
  { echo "FAIL: no pgautofailover library for PostgreSQL $M (Debian: postgresql-$M-auto-failover)"; exit 1; }

# DIR: stops everything a run in DIR started: the driver's process group
# (it stops its workers and agents itself, but not when it is killed by a
# time limit), each node's, then any postmaster still running (one the
# keeper started through pg_ctl has a session of its own)
stop_all() {
  local dir=$1 f pid n bin
  local -     # set +e for this function only
  set +e
  if [ -f "$dir/driver.pgid" ] && kill -0 "$(cat "$dir/driver.pgid")" 2>/dev/null; then
    kill -TERM -- "-$(cat "$dir/driver.pgid")" 2>/dev/null; sleep 1
  fi
  for f in "$dir"/*.pgid; do
    [ -f "$f" ] && kill -KILL -- "-$(cat "$f")" 2>/dev/null
  done
  sleep 0.3
  for n in monitor n1 n2; do
    [ -f "$dir/$n/postmaster.pid" ] || continue
    pid=$(head -1 "$dir/$n/postmaster.pid")
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || continue
    bin=$PGBIN; [ "$n" = monitor ] && bin=$MON_BIN
    as_pg "$bin/pg_ctl" -D "$dir/$n" -m immediate -w stop >/dev/null 2>&1 || kill -KILL "$pid" 2>/dev/null
  done
  return 0
}

# --sweep DIR: stops and removes what a run killed by a time limit left
# (test/ha/run.sh)
if [ "${1:-}" = --sweep ]; then
  case ${2:-} in /tmp/pg_coord_ha.*) [ -d "$2" ] && { stop_all "$2"; rm -rf "$2"; } ;; esac
  exit 0
fi

HA_TMP=$(mktemp -d /tmp/pg_coord_ha.XXXXXX)
# COORD_HA_STATE: a file that names the directory while the run lasts
[ -n "${COORD_HA_STATE:-}" ] && echo "$HA_TMP" >"$COORD_HA_STATE"
chmod 755 "$HA_TMP"
mkdir -p "$HA_TMP/xdg/config" "$HA_TMP/xdg/data" "$HA_TMP/xdg/run" "$HA_TMP/work"
chmod 700 "$HA_TMP/xdg/run"
[ "$(id -u)" -eq 0 ] && chown -R postgres: "$HA_TMP"
MONITOR_URI="postgres://autoctl_node@127.0.0.1:$MON_PORT/pg_auto_failover?sslmode=disable"
declare -A PGID=()

# pg_autoctl as the cluster's OS user, its files under $HA_TMP
AS_PG=()
[ "$(id -u)" -eq 0 ] && AS_PG=(runuser -u postgres --)
XDG_ENV=(env XDG_CONFIG_HOME="$HA_TMP/xdg/config" XDG_DATA_HOME="$HA_TMP/xdg/data"
         XDG_RUNTIME_DIR="$HA_TMP/xdg/run" TMPDIR="$HA_TMP/xdg/run")
autoctl() { "${AS_PG[@]}" "${XDG_ENV[@]}" "$AUTOCTL" "$@"; }

# NAME: `pg_autoctl run` for $HA_TMP/NAME in a new session, so a process
# group of its own: the keeper, its services, the postmaster and its
# backends (the driver kills a primary's group to crash it).  A background
# job of a non-interactive shell leads no group, so setsid does not fork:
# $! is the group's id.
start_node() {
  local name=$1
  setsid "${AS_PG[@]}" "${XDG_ENV[@]}" "$AUTOCTL" run --pgdata "$HA_TMP/$name" \
    >>"$HA_TMP/$name.keeper.log" 2>&1 </dev/null &
  PGID[$name]=$!
  disown "$!"
  echo "${PGID[$name]}" >"$HA_TMP/$name.pgid"
  sleep 0.2
  [ "$(ps -o pgid= -p "${PGID[$name]}" | tr -d ' ')" = "${PGID[$name]}" ] ||
    { echo "FAIL: pg_autoctl run for $name is not a process group leader"; exit 1; }
}

cleanup() {
  local rc=$? n f
  set +e
  trap '' INT TERM
  stop_all "$HA_TMP"
  if [ "$rc" -ne 0 ]; then
    for n in monitor n1 n2; do
      [ -f "$HA_TMP/$n.keeper.log" ] && { log "--- last lines of $n's pg_autoctl log"; tail -8 "$HA_TMP/$n.keeper.log" >&2; }
      f=$(ls -t "$HA_TMP/$n"/log/*.log 2>/dev/null | head -1)
      [ -n "$f" ] && { log "--- last lines of $n's server log"; tail -8 "$f" >&2; }
    done
    [ -n "${COORD_HA_KEEP:-}" ] && { log "(kept $HA_TMP)"; exit "$rc"; }
  fi
  rm -rf "$HA_TMP"
  [ -n "${COORD_HA_STATE:-}" ] && rm -f "$COORD_HA_STATE"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

t0=${EPOCHREALTIME/./}
ms_since() { echo $(( (${EPOCHREALTIME/./} - $1) / 1000 )); }

# Settings for a test machine: small memory (pg_auto_failover sizes
# shared_buffers from the host's RAM), fsync off (no OS crash here: a
# SIGKILLed server loses nothing the kernel has), and commit timestamps,
# which failover.py uses to order commits.  Appended after the include of
# postgresql-auto-failover.conf (the first line), so they win; no port here.
node_overrides() {
  cat <<'CONF'
# test/ha/failover.sh
shared_buffers = 64MB
effective_cache_size = 512MB
maintenance_work_mem = 32MB
work_mem = 4MB
wal_keep_size = 256MB
max_connections = 60
fsync = off
track_commit_timestamp = on
log_min_messages = warning
log_line_prefix = '%m [%p] %a '
CONF
}

# The monitor: health checks every second, a node unhealthy after 4 s
# without a report, a primary that does not answer given 6 s to step down
# (the keepers' network_partition_timeout, 4 s, is shorter: a primary cut
# off demotes itself first).  The defaults are 5 s, 20 s and 30 s.
autoctl create monitor --pgctl "$MON_BIN/pg_ctl" --pgdata "$HA_TMP/monitor" --pgport "$MON_PORT" \
  --listen 127.0.0.1 --hostname 127.0.0.1 --auth trust --no-ssl >"$HA_TMP/monitor.create.log" 2>&1 ||
  { tail -20 "$HA_TMP/monitor.create.log"; echo "FAIL: pg_autoctl create monitor"; exit 1; }
{ node_overrides; cat <<'CONF'
pgautofailover.health_check_period = 1000
pgautofailover.health_check_timeout = 2000
pgautofailover.health_check_max_retries = 1
pgautofailover.health_check_retry_delay = 500
pgautofailover.node_considered_unhealthy_timeout = 4000
pgautofailover.primary_demote_timeout = 6000
CONF
} | as_pg tee -a "$HA_TMP/monitor/postgresql.conf" >/dev/null
start_node monitor
mon_sql() { psql -qXAt -h 127.0.0.1 -p "$MON_PORT" -U autoctl_node -d pg_auto_failover -c "$1" 2>/dev/null; }
for _ in $(seq 1 300); do [ "$(mon_sql 'SELECT 1')" = 1 ] && break; sleep 0.1; done
[ "$(mon_sql 'SELECT 1')" = 1 ] || { echo "FAIL: the monitor did not start"; exit 1; }
t_mon=$(ms_since "$t0")

# NAME PORT: registers a node with the monitor (the first initdb's, the
# second takes a base backup of the primary), then runs its keeper.
create_node() {
  local name=$1 port=$2
  autoctl create postgres --pgctl "$PGBIN/pg_ctl" --pgdata "$HA_TMP/$name" --pgport "$port" \
    --listen 127.0.0.1 --hostname 127.0.0.1 --name "$name" --auth trust --no-ssl \
    --monitor "$MONITOR_URI" >"$HA_TMP/$name.create.log" 2>&1 ||
    { tail -20 "$HA_TMP/$name.create.log"; echo "FAIL: pg_autoctl create postgres $name"; exit 1; }
  autoctl config set --pgdata "$HA_TMP/$name" timeout.network_partition_timeout 4 >/dev/null
}
# STATE...: waits (60 s) until the nodes report these states, in node order
wait_states() {
  local want="$*" got=
  for _ in $(seq 1 600); do
    got=$(mon_sql "SELECT string_agg(reportedstate::text, ' ' ORDER BY nodeid) FROM pgautofailover.node
                   WHERE reportedstate = goalstate HAVING count(*) = (SELECT count(*) FROM pgautofailover.node)")
    [ "$got" = "$want" ] && return 0
    sleep 0.1
  done
  echo "FAIL: the nodes did not reach '$want' (now: $(mon_sql "SELECT string_agg(nodename || ' ' || reportedstate || '->' || goalstate, ', ' ORDER BY nodeid) FROM pgautofailover.node"))"
  exit 1
}

# PORT: waits (60 s) until the node there accepts connections
wait_pg() {
  for _ in $(seq 1 600); do
    psql -qXAt -h 127.0.0.1 -p "$1" -U postgres -d postgres -c 'SELECT 1' >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "FAIL: nothing accepts connections on port $1"
  exit 1
}

create_node n1 "$N1_PORT"
node_overrides | as_pg tee -a "$HA_TMP/n1/postgresql.conf" >/dev/null
start_node n1
wait_states single
wait_pg "$N1_PORT"
# the database, before the standby copies the primary
# (and a checkpoint: the base backup's own is spread over minutes when
# CREATE DATABASE has left many buffers dirty)
psql -qX -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$N1_PORT" -U postgres -d postgres \
  -c "CREATE DATABASE coord_ha" -c "CHECKPOINT" >/dev/null
t_n1=$(ms_since "$t0")
create_node n2 "$N2_PORT"
start_node n2
wait_states primary secondary
t_n2=$(ms_since "$t0")
sync=$(psql -qXAt -h 127.0.0.1 -p "$N1_PORT" -U postgres -d postgres \
  -c "SELECT current_setting('synchronous_standby_names') || ' / ' || string_agg(sync_state, ',') FROM pg_stat_replication")
log "pg_auto_failover: monitor :$MON_PORT (${t_mon} ms), primary n1 :$N1_PORT (${t_n1} ms), secondary n2 :$N2_PORT (${t_n2} ms); synchronous_standby_names / sync_state: $sync"

export HA_MONITOR_PORT=$MON_PORT HA_N1_PORT=$N1_PORT HA_N2_PORT=$N2_PORT HA_TMP PGBIN MONITOR_URI AUTOCTL
export HA_AGENT_BIN=${COORD_AGENT_BIN:-$COORD_ROOT/agent/coord-agent}
# in a process group of its own with its workers and agents (see cleanup)
setsid "$PYTHON" "$HERE/failover.py" &
DRIVER_PID=$!
echo "$DRIVER_PID" >"$HA_TMP/driver.pgid"
wait "$DRIVER_PID"
