# Shared by test/run.sh, the demo and the bench: packages, build, and a
# private throwaway cluster.  Source it; it sets PGHOST, PGPORT, PGUSER.
#
# The cluster lives in a temporary directory, listens on a unix socket there
# only (no TCP), preloads pg_cron, and runs as the `postgres` OS user when we
# are root (the server refuses to run as root).

set -u
COORD_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Debian's python3: psycopg2 comes from its packages, whatever python3 is first on PATH.
export PYTHON=/usr/bin/python3

log() { printf '%s\n' "$*" >&2; }

# The PostgreSQL major to test: COORD_PG_MAJOR, else the one pg_config
# names, else 15 (Debian bookworm's).
coord_pg_major() {
  if [ -n "${COORD_PG_MAJOR:-}" ]; then
    echo "$COORD_PG_MAJOR"
  else
    pg_config --version 2>/dev/null | sed -n 's/^PostgreSQL \([0-9][0-9]*\).*/\1/p' | grep . || echo 15
  fi
}

# The Debian packages `make demo` runs, for major $1: the server and its
# headers (the build), libpq-dev, make and gcc (coord-agent, which the demo
# builds and runs), libmicrohttpd-dev (coordctl serve, built beside it),
# psycopg2 (the Python workers of S1-S5) and nodejs (S4's
# Node runners; coord_deps adds npm when no npm comes with it).  The demo's
# cluster preloads nothing (COORD_PRELOAD=), so no pg_cron.
coord_demo_packages() {
  local m=$1
  echo postgresql-$m postgresql-server-dev-$m libpq-dev make gcc python3-psycopg2 nodejs \
       libmicrohttpd-dev
}

# The Debian packages `make test` needs for major $1 (test/matrix.sh installs
# the same list into its chroots): the demo's, and pg_cron (every test
# cluster preloads it), pgTAP and pg_prove, psycopg 3, the JDK and the JDBC
# driver (test/crash/quickstart.sh's Java worker and JDBC checks), PgBouncer,
# the Python client's (test/clients/python.sh): pytest, and build, wheel,
# setuptools and venv, which build its wheel offline and install it;
# tsc (clients/node's declarations, test/clients/node.sh); mypy (the
# Python client's types); chromium (the dashboard's browser tests,
# test/agent/dashboard.sh); prometheus (promtool checks coordctl metrics
# and the rules; a real scrape of coordctl serve,
# test/agent/dashboard_prometheus.sh) and the PostgreSQL exporter
# (test/crash/metrics_exporter.sh).
coord_packages() {
  local m=$1
  echo "$(coord_demo_packages "$m")" postgresql-$m-cron postgresql-$m-pgtap \
       libtap-parser-sourcehandler-pgtap-perl python3-psycopg default-jdk-headless \
       libpostgresql-jdbc-java pgbouncer python3-pytest python3-mypy python3-build python3-wheel \
       python3-setuptools python3-venv node-typescript \
       chromium \
       prometheus \
       prometheus-postgres-exporter
}

# coord_deps [EXTRA...]: installs what is missing of `make test`'s packages
# (once per machine), and the extra packages named as arguments (make
# test-ha: pg_auto_failover).
coord_deps() {
  local want
  read -ra want <<<"$(coord_packages "$(coord_pg_major)")"
  coord_install "${want[@]}" "$@"
}

# coord_demo_deps: the same for `make demo`'s packages only.
coord_demo_deps() {
  local want
  read -ra want <<<"$(coord_demo_packages "$(coord_pg_major)")"
  coord_install "${want[@]}"
}

# coord_install PACKAGE...: apt-get installs those not installed; with
# nodejs, npm too unless an npm comes with it (NodeSource's nodejs has one,
# Debian's has not).
coord_install() {
  local missing=() p
  for p in "$@"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if printf '%s\n' "$@" | grep -qx nodejs && ! command -v npm >/dev/null 2>&1 &&
     ! dpkg -s npm >/dev/null 2>&1; then
    missing+=(npm)
  fi
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing: ${missing[*]}"
  local SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  coord_pgbin
}

# pg_bsd_indent, for make indent (tools/pgindent.py) and, once the tree is
# reindented (.indent-enforced), for make test: Debian's pg-bsd-indent,
# installed when missing.
coord_indent_tool() {
  command -v pg_bsd_indent >/dev/null 2>&1 && return 0
  log "installing: pg-bsd-indent"
  local SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pg-bsd-indent >/dev/null 2>&1 ||
    { $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null &&
      $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pg-bsd-indent >/dev/null; }
}

# PGBIN: the bin directory of the major under test, first on PATH (psql,
# pg_prove's psql, pg_config).
coord_pgbin() {
  local m=${COORD_PG_MAJOR:-}
  if [ -n "$m" ] && [ -x "/usr/lib/postgresql/$m/bin/pg_config" ]; then
    PGBIN=/usr/lib/postgresql/$m/bin
  else
    PGBIN=$(pg_config --bindir 2>/dev/null || echo "/usr/lib/postgresql/$(coord_pg_major)/bin")
  fi
  case ":$PATH:" in *":$PGBIN:"*) ;; *) PATH=$PGBIN:$PATH ;; esac
  export PATH
}

# Builds and installs the extension.
coord_build() {
  local SUDO=""
  [ "$(id -u)" -ne 0 ] && [ ! -w "$(pg_config --pkglibdir)" ] && SUDO=sudo
  make -C "$COORD_ROOT" -s >/dev/null
  # no PATH link or man page outside PostgreSQL's directories from tests
  $SUDO make -C "$COORD_ROOT" -s install LINKDIR= MAN1DIR= >/dev/null
  coord_old_scripts_install
}

# 0.1.0's install script is not shipped (it granted PUBLIC every function),
# but the upgrade tests start from a 0.1.0 catalog: they put the copy kept
# in test/upgrade/ into the installation for the run, and take it out again
# when the run ends (coord_cluster_stop).
COORD_OLD_SCRIPT=
coord_old_scripts_install() {
  local SUDO="" dest
  dest="$(pg_config --sharedir)/extension/pg_coord--0.1.0.sql"
  [ -e "$dest" ] && return 0
  [ "$(id -u)" -ne 0 ] && [ ! -w "$(dirname "$dest")" ] && SUDO=sudo
  $SUDO install -m 644 "$COORD_ROOT/test/upgrade/pg_coord--0.1.0.sql" "$dest" && COORD_OLD_SCRIPT=$dest
}
coord_old_scripts_remove() {
  [ -n "$COORD_OLD_SCRIPT" ] || return 0
  local SUDO=""
  [ "$(id -u)" -ne 0 ] && [ ! -w "$(dirname "$COORD_OLD_SCRIPT")" ] && SUDO=sudo
  $SUDO rm -f "$COORD_OLD_SCRIPT"
  COORD_OLD_SCRIPT=
}

# coord_free_tcp_port PORT: PORT if nothing listens on 127.0.0.1:PORT, else a
# port the kernel finds free: scripts whose cluster also listens on TCP
# (quickstart.sh, monitor_addr.sh) then run beside another `make test`.
coord_free_tcp_port() {
  /usr/bin/python3 - "$1" <<'PY'
import socket, sys
for port in (int(sys.argv[1]), 0):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        print(s.getsockname()[1])
        break
    except OSError:
        pass
    finally:
        s.close()
PY
}

# coord_cluster_listen_tcp: the running private cluster also listens on
# 127.0.0.1 (restarted).  Another run may take its port between the choice
# and the restart: then it moves to a port the kernel finds free (PGPORT
# follows), up to five times.
coord_cluster_listen_tcp() {
  local try
  echo "listen_addresses = '127.0.0.1'" >>"$PGDATA/postgresql.conf"
  for try in 1 2 3 4 5; do
    as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -l "$COORD_TMP/server.log" -w -t 60 restart >/dev/null 2>&1 && return 0
    PGPORT=$(coord_free_tcp_port 0)
    export PGPORT
    echo "port = $PGPORT" >>"$PGDATA/postgresql.conf"
  done
  echo "FAIL: the cluster could not listen on 127.0.0.1 (tail of $COORD_TMP/server.log:)"
  tail -5 "$COORD_TMP/server.log"
  return 1
}

# Runs a command as the cluster's OS user.
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# Starts a private cluster; sets PGHOST/PGPORT/PGUSER/PGDATA for clients.
coord_cluster_start() {
  COORD_TMP=$(mktemp -d /tmp/pg_coord.XXXXXX)
  chmod 755 "$COORD_TMP"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$COORD_TMP"
  export PGDATA=$COORD_TMP/data PGHOST=$COORD_TMP PGPORT=${COORD_PGPORT:-54329}
  export PGUSER=postgres PGDATABASE=postgres COORD_TMP
  as_pg "$PGBIN/initdb" -D "$PGDATA" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
  # pg_cron unless COORD_PRELOAD says otherwise (make demo: COORD_PRELOAD=)
  local preload="shared_preload_libraries = '${COORD_PRELOAD-pg_cron}'"
  case ",${COORD_PRELOAD-pg_cron}," in
    *,pg_cron,*) preload+=$'\ncron.database_name = \'postgres\'\ncron.use_background_workers = on' ;;
  esac
  cat >>"$PGDATA/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$COORD_TMP'
port = $PGPORT
$preload
max_worker_processes = 16
max_connections = 100
shared_buffers = 256MB
fsync = on
synchronous_commit = on
max_locks_per_transaction = 128
max_prepared_transactions = 10    # two-phase commit specs (iso_jobs_await_prepared)
deadlock_timeout = 100ms
log_min_messages = warning
log_line_prefix = '%m [%p] %a '
CONF
  as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -l "$COORD_TMP/server.log" -w -t 60 start >/dev/null
  trap coord_cluster_stop EXIT
}

# Restarts the server hard (crash tests): immediate stop, then start.
coord_cluster_crash_restart() {
  as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m immediate -w stop >/dev/null
  as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -l "$COORD_TMP/server.log" -w -t 60 start >/dev/null
}

coord_cluster_stop() {
  coord_old_scripts_remove
  if [ -n "${COORD_TMP:-}" ] && [ -d "$COORD_TMP" ]; then
    as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$COORD_TMP"
    COORD_TMP=
  fi
}

# Suites of scripts, each script one test (test/crash, test/upgrade,
# test/agent): coord_run_scripts SUITE SCRIPT... runs each script with bash,
# one after the other, its output in $COORD_RESULTS/SUITE_NAME.out; logs
# "SUITE/NAME: ok TIME (its last line)" or "SUITE/NAME: FAILED TIME" and the
# tail of its output; adds to the caller's counters passed and failed and to
# its array failures ("SUITE: NAME").
COORD_RESULTS=${COORD_RESULTS:-$COORD_ROOT/test/results}
coord_run_scripts() {
  local suite=$1 t name out t0 d; shift
  mkdir -p "$COORD_RESULTS"
  for t in "$@"; do
    [ -e "$t" ] || continue
    name=$(basename "$t")
    out="$COORD_RESULTS/${suite}_$name.out"
    t0=${EPOCHREALTIME/./}
    if bash "$t" >"$out" 2>&1; then
      passed=$((passed + 1))
      d=$(( (${EPOCHREALTIME/./} - t0) / 100000 ))
      log "$suite/$name: ok $((d / 10)).$((d % 10))s ($(tail -1 "$out"))"
    else
      failed=$((failed + 1)); failures+=("$suite: $name")
      d=$(( (${EPOCHREALTIME/./} - t0) / 100000 ))
      log "$suite/$name: FAILED $((d / 10)).$((d % 10))s"; tail -20 "$out" >&2
    fi
  done
}

# Creates a database with pg_coord (and pgTAP when asked) installed.
coord_createdb() {
  local db=$1; shift
  psql -qX -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
  local ext
  for ext in pg_coord "$@"; do
    psql -qX -d "$db" -c "CREATE EXTENSION $ext" >/dev/null
  done
}

coord_pgbin

# coord_pgbouncer_run DB PORT SCRIPT.py: a real PgBouncer (Debian's pgbouncer)
# in pool_mode = transaction with one server connection, in front of the
# running cluster (PG* environment), on a unix socket in a temporary
# directory only, pooling a fresh database DB with pg_coord; runs SCRIPT.py
# with PGB_HOST/PGB_PORT set, then stops PgBouncer and drops DB (on exit).
coord_pgbouncer_run() {
  local db=$1 port=$2 script=$3 pgb
  pgb=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)
  [ -x "$pgb" ] || { echo "FAIL: pgbouncer not found (Debian: pgbouncer)"; return 1; }
  # PgBouncer 1.21 and later can track prepared statements in transaction
  # mode (max_prepared_statements); older ones (bookworm's 1.18) cannot
  local ver track=""
  ver=$("$pgb" --version 2>/dev/null | sed -n 's/^PgBouncer \([0-9][0-9.]*\).*/\1/p' | head -1)
  [ "$(printf '%s\n1.21\n' "${ver:-0}" | sort -V | head -1)" = 1.21 ] && track="max_prepared_statements = 100"
  COORD_PGB_DIR=$(mktemp -d /tmp/pg_coord_pgb.XXXXXX)
  COORD_PGB_DB=$db
  chmod 755 "$COORD_PGB_DIR"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$COORD_PGB_DIR"
  trap coord_pgbouncer_stop EXIT
  psql -qX -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" \
       -c "CREATE DATABASE $db" >/dev/null
  psql -qX -d "$db" -c "CREATE EXTENSION pg_coord" >/dev/null
  cat >"$COORD_PGB_DIR/pgbouncer.ini" <<INI
[databases]
$db = host=$PGHOST port=$PGPORT dbname=$db user=${PGUSER:-postgres}
[pgbouncer]
listen_addr =
listen_port = $port
unix_socket_dir = $COORD_PGB_DIR
auth_type = any
pool_mode = transaction
default_pool_size = 1
max_client_conn = 50
logfile = $COORD_PGB_DIR/pgbouncer.log
pidfile = $COORD_PGB_DIR/pgbouncer.pid
$track
INI
  [ "$(id -u)" -eq 0 ] && chown postgres: "$COORD_PGB_DIR/pgbouncer.ini"
  as_pg "$pgb" -d -q "$COORD_PGB_DIR/pgbouncer.ini"
  for _ in $(seq 1 50); do [ -S "$COORD_PGB_DIR/.s.PGSQL.$port" ] && break; sleep 0.1; done
  [ -S "$COORD_PGB_DIR/.s.PGSQL.$port" ] || {
    cat "$COORD_PGB_DIR/pgbouncer.log"; echo "FAIL: pgbouncer did not start"; return 1; }
  PGB_HOST=$COORD_PGB_DIR PGB_PORT=$port PGB_VERSION=${ver:-0} PGB_TRACKS_PREPARED=${track:+1} \
    "${PYTHON:-/usr/bin/python3}" "$script"
}

coord_pgbouncer_stop() {
  [ -f "$COORD_PGB_DIR/pgbouncer.pid" ] && kill "$(cat "$COORD_PGB_DIR/pgbouncer.pid")" 2>/dev/null || true
  sleep 0.2
  psql -qX -d postgres -c "DROP DATABASE IF EXISTS $COORD_PGB_DB WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$COORD_PGB_DIR"
}
