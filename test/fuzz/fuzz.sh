#!/usr/bin/env bash
# Fuzz target (issue 8): every coord.* function with random and hostile
# arguments on a private cluster, for a bounded number of calls.  Any backend
# crash, assertion failure, internal (XX) error, hang, server restart or broken
# expectation fails it; so does anything of the hostile coord_worker session's
# (search_path look-alikes, temporary domains named after catalog types) that
# ran as another role (issue 13; see fuzz.py).
#
#   test/fuzz/fuzz.sh                      30,000 calls, a random seed (~1 minute)
#   FUZZ_SEED=123 test/fuzz/fuzz.sh        replay a seed (per-connection argument
#                                          streams repeat; the interleaving may not)
#   FUZZ_CALLS=100000 test/fuzz/fuzz.sh    a longer run
#   FUZZ_VALGRIND=1 test/fuzz/fuzz.sh      the server under valgrind memcheck, 1,500 calls;
#                                          reports whose stack has a pg_coord frame fail it;
#                                          FUZZ_VALGRIND_OPTS=--track-origins=yes adds where
#                                          uninitialised bytes came from (slower)
#
# Uses the installed pg_coord (it does not build or install).  Port 54336.
# Failing statements are written in full to /tmp/pg_coord-fuzz-failures-<seed>.sql.
# The last line is the summary.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"

VALGRIND=${FUZZ_VALGRIND:-0}
if [ "$VALGRIND" = 1 ]; then
  export FUZZ_CALLS=${FUZZ_CALLS:-1500}
  # everything is 20-50x slower under memcheck
  export FUZZ_STATEMENT_TIMEOUT=${FUZZ_STATEMENT_TIMEOUT:-60s}
  export FUZZ_LOCK_TIMEOUT=${FUZZ_LOCK_TIMEOUT:-2s}
  export FUZZ_HANG=${FUZZ_HANG:-300}
else
  export FUZZ_CALLS=${FUZZ_CALLS:-30000}
fi
export FUZZ_SEED=${FUZZ_SEED:-$(( (RANDOM << 15 | RANDOM) + 1 ))}
export FUZZ_DB=fuzzdb FUZZ_ASCII_DB=fuzzdb_ascii
export FUZZ_FAILFILE=${FUZZ_FAILFILE:-/tmp/pg_coord-fuzz-failures-$FUZZ_SEED.sql}
rm -f "$FUZZ_FAILFILE"
log "fuzz: seed $FUZZ_SEED, $FUZZ_CALLS calls$( [ "$VALGRIND" = 1 ] && echo ', server under valgrind')"

t0=$(date +%s)
COORD_PGPORT=54336 coord_cluster_start
# Prepared transactions, so that PREPARE TRANSACTION after pg_coord calls is
# exercised.  The log keeps LOG, FATAL and PANIC lines (crash reports, TRAP
# goes to stderr anyway) but not the ERRORs: those are the fuzzer's business,
# and logging megabyte statements slows everything down.
psql -qX -d postgres -c "ALTER SYSTEM SET max_prepared_transactions = 10" \
     -c "ALTER SYSTEM SET log_min_messages = log" -c "ALTER SYSTEM SET log_min_error_statement = panic" >/dev/null
# JIT under memcheck is slow and only adds LLVM and dynamic loader noise
[ "$VALGRIND" = 1 ] && psql -qX -d postgres -c "ALTER SYSTEM SET jit = off" >/dev/null
as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null

if [ "$VALGRIND" = 1 ]; then
  if ! dpkg -s valgrind >/dev/null 2>&1; then
    log "installing valgrind"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null
  fi
  mkdir -p "$COORD_TMP/valgrind"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$COORD_TMP/valgrind"
  cat >"$COORD_TMP/postgres-valgrind" <<SH
#!/bin/sh
exec valgrind --tool=memcheck --trace-children=yes --track-origins=no --leak-check=no \\
  --num-callers=40 --error-limit=no --read-var-info=no ${FUZZ_VALGRIND_OPTS:-} \\
  --log-file=$COORD_TMP/valgrind/%p.log $PGBIN/postgres "\$@"
SH
  chmod 755 "$COORD_TMP/postgres-valgrind"
  as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -p "$COORD_TMP/postgres-valgrind" -l "$COORD_TMP/server.log" \
        -w -t 600 start >/dev/null || { log "fuzz: the server did not start under valgrind"; tail -20 "$COORD_TMP/server.log" >&2; exit 1; }
else
  as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -l "$COORD_TMP/server.log" -w -t 60 start >/dev/null
fi

coord_createdb fuzzdb
# text that is not UTF-8 reaches the functions only in a SQL_ASCII database
psql -qX -d postgres -c "CREATE DATABASE fuzzdb_ascii ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0" >/dev/null
psql -qX -d fuzzdb_ascii -c "CREATE EXTENSION pg_coord" >/dev/null

pm_pid=$(head -1 "$PGDATA/postmaster.pid")
pm_start=$(psql -qXAt -d postgres -c "SELECT pg_postmaster_start_time()")
t1=$(date +%s)

out=$COORD_TMP/fuzz.out
"$PYTHON" "$HERE/fuzz.py" 2>&1 | tee "$out"
py_rc=${PIPESTATUS[0]}
t2=$(date +%s)

problems=()
[ "$py_rc" -ne 0 ] && problems+=("fuzz.py exited with $py_rc")

# the same postmaster, never restarted after a crash
now_pid=$(head -1 "$PGDATA/postmaster.pid" 2>/dev/null || echo gone)
now_start=$(psql -qXAt -d postgres -c "SELECT pg_postmaster_start_time()" 2>/dev/null || echo gone)
[ "$now_pid" != "$pm_pid" ] && problems+=("postmaster pid changed: $pm_pid -> $now_pid")
[ "$now_start" != "$pm_start" ] && problems+=("pg_postmaster_start_time changed: $pm_start -> $now_start")

crash_re='terminated by signal|TRAP:|server process .* was terminated|PANIC|all server processes terminated|was terminated by exception'
crashes=$(grep -cE "$crash_re" "$COORD_TMP/server.log")
if [ "$crashes" -gt 0 ]; then
  problems+=("$crashes crash lines in the server log")
  log "fuzz: server log:"
  grep -E -A3 "$crash_re" "$COORD_TMP/server.log" | head -60 >&2
  grep -E -B2 -A3 "$crash_re" "$COORD_TMP/server.log" >"/tmp/pg_coord-fuzz-serverlog-$FUZZ_SEED.txt"
fi

# the hostile role's traps warn when they run as anyone else (fuzz.py checks the table too)
traps=$(grep -c 'FUZZ-TRAP ran as' "$COORD_TMP/server.log")
[ "$traps" -gt 0 ] && problems+=("$traps warnings in the server log of a trap that ran as another role")

vg_found=0
if [ "$VALGRIND" = 1 ]; then
  as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w -t 300 stop >/dev/null
  vg_out=/tmp/pg_coord-fuzz-valgrind-$FUZZ_SEED
  rm -rf "$vg_out.logs"; cp -r "$COORD_TMP/valgrind" "$vg_out.logs"
  "$PYTHON" "$HERE/fuzz.py" scan-valgrind "$COORD_TMP/valgrind" | tee "$vg_out.txt"
  vg_found=$(sed -n 's/.* with a pg_coord frame (\([0-9]*\) distinct).*/\1/p' "$vg_out.txt")
  vg_found=${vg_found:-0}
  [ "$vg_found" -ne 0 ] && problems+=("valgrind reports with pg_coord frames ($vg_out.txt; all logs in $vg_out.logs)")
fi

res=$(grep '^FUZZ-RESULT' "$out" | tail -1)
get() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $res"; }
calls=$(get calls); funcs=$(get functions); states=$(get sqlstates); ncrash=$(get crashes)
# a crash is a backend that died by a signal, an assertion (TRAP) or a PANIC; the
# lost connections fuzz.py counts are its consequences (every backend goes down)
events=$(grep -cE 'terminated by signal|TRAP:|PANIC|was terminated by exception' "$COORD_TMP/server.log")
[ "$events" -gt 0 ] && ncrash=$events || ncrash=${ncrash:-0}
log "fuzz: setup $((t1 - t0)) s, calls $((t2 - t1)) s"
for p in "${problems[@]}"; do log "FAIL: $p"; done
echo "fuzz: ${calls:-0} calls to ${funcs:-0} functions, ${states:-0} distinct SQLSTATEs, $ncrash crashes, seed $FUZZ_SEED$( [ "$VALGRIND" = 1 ] && echo ", valgrind: $vg_found distinct reports in pg_coord")$( [ ${#problems[@]} -gt 0 ] && echo " — FAILED")"
[ ${#problems[@]} -eq 0 ]
