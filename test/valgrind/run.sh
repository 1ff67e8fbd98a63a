#!/usr/bin/env bash
# make test-valgrind: the regress, isolation and pgTAP suites against a
# server running under valgrind memcheck, then the cron parser harness under
# AddressSanitizer and UBSan.  Slow (tens of minutes), so not part of
# make test.  Fails when valgrind reports any error in any server process
# (or a process dies), whatever the suites' own results, which are printed
# too: under memcheck everything is 20-50x slower, and a suite whose expected
# output depends on timing may differ for that reason alone.
#
#   test/valgrind/run.sh             everything
#   VG_SUITES="regress" test/valgrind/run.sh     some of regress isolation pgtap cron
#   VG_OPTS=--track-origins=yes ...  extra valgrind options (slower)
#
# Builds and installs pg_coord first.  The server runs as in make test
# (test/lib.sh), with jit off.  Every server process logs to its own file
# (valgrind's %p); they are kept in /tmp/pg_coord-valgrind-logs.
# Suppressions: test/valgrind/pg_coord.supp (false positives of the core,
# described there).  The last line is the summary.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
cd "$COORD_ROOT"
SUITES=${VG_SUITES:-regress isolation pgtap cron}
KEEP=/tmp/pg_coord-valgrind-logs
# a server process's exit code when valgrind found errors: the postmaster
# then restarts every process, which the suites notice too
ERRCODE=${VG_EXITCODE:-97}

command -v valgrind >/dev/null || {
  log "installing valgrind"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null
}
coord_deps
coord_build
t0=$(date +%s)
COORD_PGPORT=${VG_PGPORT:-54337} coord_cluster_start
psql -qX -d postgres -c "ALTER SYSTEM SET jit = off" >/dev/null
as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null

VGLOG=$COORD_TMP/valgrind
mkdir -p "$VGLOG"
[ "$(id -u)" -eq 0 ] && chown postgres: "$VGLOG"
cat >"$COORD_TMP/postgres-valgrind" <<SH
#!/bin/sh
exec valgrind --tool=memcheck --trace-children=yes --track-origins=no --leak-check=no \\
  --num-callers=40 --error-limit=no --read-var-info=no --error-exitcode=$ERRCODE \\
  --suppressions=$HERE/pg_coord.supp ${VG_OPTS:-} \\
  --log-file=$VGLOG/%p.log $PGBIN/postgres "\$@"
SH
chmod 755 "$COORD_TMP/postgres-valgrind"
as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -p "$COORD_TMP/postgres-valgrind" -l "$COORD_TMP/server.log" \
      -w -t 900 start >/dev/null || { log "the server did not start under valgrind"; tail -20 "$COORD_TMP/server.log" >&2; exit 1; }
pm_start=$(psql -qXAt -d postgres -c "SELECT pg_postmaster_start_time()")
log "valgrind: server up after $(( $(date +%s) - t0 )) s; suites: $SUITES"

mkdir -p test/results
notes=()
for s in $SUITES; do
  ts=$(date +%s)
  case "$s" in
    regress)
      make -s installcheck-regress >test/results/vg_regress.out 2>&1
      [ -f regression.diffs ] && mv regression.diffs test/results/vg_regress.diffs
      r="$(grep -cE '\.\.\. ok' test/results/vg_regress.out) ok, $(grep -cE '\.\.\. (FAILED|failed)' test/results/vg_regress.out) failed" ;;
    isolation)
      make -s installcheck-isolation >test/results/vg_isolation.out 2>&1
      [ -f regression.diffs ] && mv regression.diffs test/results/vg_isolation.diffs
      r="$(grep -cE '\.\.\. ok' test/results/vg_isolation.out) ok, $(grep -cE '\.\.\. (FAILED|failed)' test/results/vg_isolation.out) failed" ;;
    pgtap)
      coord_createdb coord_tap pgtap
      pg_prove -d coord_tap test/pgtap/*.sql >test/results/vg_pgtap.out 2>&1
      r=$(grep -E '^Result:' test/results/vg_pgtap.out || echo "no result") ;;
    cron)
      # the standalone harness: plain, then -fsanitize=address,undefined
      if CC=${CC:-gcc} bash test/cron/run.sh >test/results/vg_cron.out 2>&1; then r="ok ($(tail -1 test/results/vg_cron.out))"
      else r="FAILED"; notes+=("cron harness under ASan/UBSan failed (test/results/vg_cron.out)"); fi
      grep -q 'sanitizers unavailable' test/results/vg_cron.out && notes+=("cron: sanitizers unavailable")
      ;;
    *) log "unknown suite $s"; exit 2 ;;
  esac
  log "valgrind: $s: $r ($(( $(date +%s) - ts )) s)"
done

now_start=$(psql -qXAt -d postgres -c "SELECT pg_postmaster_start_time()" 2>/dev/null || echo gone)
[ "$now_start" != "$pm_start" ] && notes+=("the server restarted (a process died or exited with valgrind's error code)")
as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w -t 600 stop >/dev/null

rm -rf "$KEEP"; cp -r "$VGLOG" "$KEEP"
nlogs=$(ls "$VGLOG" | wc -l)
# every process that ends normally prints an ERROR SUMMARY line: count those
# that say anything but 0, and the exit codes the postmaster saw
bad=$(grep -h 'ERROR SUMMARY:' "$VGLOG"/*.log 2>/dev/null | grep -vc 'ERROR SUMMARY: 0 errors')
errors=$(grep -h 'ERROR SUMMARY:' "$VGLOG"/*.log 2>/dev/null | sed -n 's/.*ERROR SUMMARY: \([0-9,]*\) errors.*/\1/p' | tr -d , | awk '{s+=$1} END {print s+0}')
# and the reports themselves, for a process that died before its summary
reports=$(cat "$VGLOG"/*.log 2>/dev/null | grep -cE '^==[0-9]+== (Invalid (read|write|free)|Conditional jump|Syscall param|Use of uninitialised|Mismatched free|Source and destination overlap|Argument .* of function|Jump to the invalid|Process terminating)')
exits=$(grep -c "exited with exit code $ERRCODE" "$COORD_TMP/server.log")
crashes=$(grep -cE 'terminated by signal|TRAP:|PANIC' "$COORD_TMP/server.log")
if [ "$bad" -gt 0 ]; then
  log "valgrind: processes with errors:"
  grep -l 'ERROR SUMMARY: [1-9]' "$VGLOG"/*.log | head -20 >&2
  "$PYTHON" test/fuzz/fuzz.py scan-valgrind "$VGLOG" >&2 || true
  for f in $(grep -l 'ERROR SUMMARY: [1-9]' "$VGLOG"/*.log | head -3); do log "--- $f"; head -80 "$f" >&2; done
fi
[ "$bad" -gt 0 ] && notes+=("$bad server processes with valgrind errors ($errors in all; logs in $KEEP)")
[ "$reports" -gt 0 ] && [ "$bad" -eq 0 ] && notes+=("$reports valgrind error reports in processes without an ERROR SUMMARY (logs in $KEEP)")
[ "$exits" -gt 0 ] && notes+=("$exits processes exited with valgrind's error code")
[ "$crashes" -gt 0 ] && notes+=("$crashes crash lines in the server log")
for n in "${notes[@]}"; do log "FAIL: $n"; done
suppressed=$(grep -h 'ERROR SUMMARY:' "$VGLOG"/*.log 2>/dev/null | sed -n 's/.*suppressed: \([0-9,]*\) from.*/\1/p' | tr -d , | awk '{s+=$1} END {print s+0}')
echo "valgrind: $nlogs server processes, $errors errors ($bad processes with errors, $suppressed suppressed core reports), $(( $(date +%s) - t0 )) s$( [ ${#notes[@]} -gt 0 ] && echo ' — FAILED')"
[ ${#notes[@]} -eq 0 ]
