#!/usr/bin/env bash
# The one entry point behind `make test`, `make demo` and `make bench`:
# installs missing packages (make demo: only those the demo runs,
# test/lib.sh coord_demo_packages), builds and installs pg_coord, starts a
# private cluster, runs the chosen job, stops the cluster.
#
#   test/run.sh test    every suite; ends with "N passed, M failed"
#   test/run.sh demo    the S1-S5 scenarios with real worker processes
#   test/run.sh bench   make bench: figures side by side with raw SQL
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent/run_all.sh"
cd "$COORD_ROOT"
mode=${1:-test}

if [ "$mode" = demo ]; then
  # only what the demo runs: no pgTAP, JDK, PgBouncer, pg_cron or indent tool
  coord_demo_deps
  COORD_PRELOAD=
else
  coord_deps
  # test/static/indent.py checks the layout once the tree has been reindented
  [ "$mode" = test ] && [ -e .indent-enforced ] && coord_indent_tool
fi
# warnings are errors in every build a test run makes (the extension, the agent)
export WERROR=1
coord_build
coord_cluster_start

passed=0
failed=0
failures=()

# count_suite NAME OUTPUTFILE: adds pg_regress's result lines: "test x ... ok" /
# "... FAILED" up to PostgreSQL 15, TAP "ok 1 - x" / "not ok 2 - x" from 16.
count_suite() {
  local name=$1 out=$2 ok bad
  ok=$(grep -cE '\.\.\. ok|^ok [0-9]+ ' "$out")
  bad=$(grep -cE '\.\.\. (FAILED|failed)|^not ok [0-9]+ ' "$out")
  passed=$((passed + ok)); failed=$((failed + bad))
  [ "$bad" -gt 0 ] && failures+=("$name: $( { grep -E '\.\.\. (FAILED|failed)' "$out" | awk '{print $2}'
                                            grep -E '^not ok [0-9]+ ' "$out" | sed -E 's/^not ok [0-9]+ +- +([^ ]+).*/\1/'; } | tr '\n' ' ')")
  # a suite that ran nothing (pg_regress did not start) is a failure too
  if [ "$ok" -eq 0 ] && [ "$bad" -eq 0 ]; then
    failed=$((failed + 1)); failures+=("$name: no test ran"); tail -5 "$out" >&2
  fi
  log "$name: $ok passed, $bad failed"
}

run_tests() {
  mkdir -p test/results
  rm -f test/results/*.diffs

  # slow suites (pg_cron fires on the minute) run beside the others, each on a cluster of its own
  local slow_pids=() slow_names=() t
  for t in test/slow/*.sh; do
    [ -e "$t" ] || continue
    bash "$t" >"test/results/$(basename "$t").out" 2>&1 &
    slow_pids+=("$!"); slow_names+=("$t")
  done

  log "== static checks"
  local c
  for c in test/static/*.py; do
    if python3 "$c" . >"test/results/static_$(basename "$c").out" 2>&1; then
      passed=$((passed + 1)); log "$(basename "$c"): ok ($(tail -1 "test/results/static_$(basename "$c").out"))"
    else
      failed=$((failed + 1)); failures+=("static: $(basename "$c")")
      log "$(basename "$c"): FAILED"; tail -20 "test/results/static_$(basename "$c").out" >&2
    fi
  done

  log "== cron parser (C harness)"
  if bash test/cron/run.sh >test/results/cron_harness.out 2>&1; then
    passed=$((passed + 1)); log "cron harness: ok ($(tail -1 test/results/cron_harness.out))"
  else
    failed=$((failed + 1)); failures+=("cron harness"); tail -20 test/results/cron_harness.out >&2
  fi

  log "== app periods (C harness)"
  if bash test/apps/run.sh >test/results/apps_harness.out 2>&1; then
    passed=$((passed + 1)); log "apps harness: ok ($(tail -1 test/results/apps_harness.out))"
  else
    failed=$((failed + 1)); failures+=("apps harness"); tail -20 test/results/apps_harness.out >&2
  fi

  log "== partition assignment (C harness)"
  if bash test/parts/run.sh >test/results/parts_harness.out 2>&1; then
    passed=$((passed + 1)); log "parts harness: ok ($(tail -1 test/results/parts_harness.out))"
  else
    failed=$((failed + 1)); failures+=("parts harness"); tail -20 test/results/parts_harness.out >&2
  fi

  log "== pg_regress"
  make -s installcheck-regress >test/results/regress.out 2>&1
  [ -f regression.diffs ] && mv regression.diffs test/results/regress.diffs
  count_suite regress test/results/regress.out

  log "== isolation"
  make -s installcheck-isolation >test/results/isolation.out 2>&1
  [ -f regression.diffs ] && mv regression.diffs test/results/isolation.diffs
  count_suite isolation test/results/isolation.out

  log "== pgTAP"
  coord_createdb coord_tap pgtap
  pg_prove -d coord_tap test/pgtap/*.sql >test/results/pgtap.out 2>&1
  local tap_tests tap_failed
  tap_tests=$(sed -n 's/.*Tests=\([0-9]*\),.*/\1/p' test/results/pgtap.out | tail -1)
  tap_failed=$(grep -oE '^Failed [0-9]+/[0-9]+ subtests' test/results/pgtap.out |
               awk '{split($2,a,"/"); s+=a[1]} END {print s+0}')
  if ! grep -q '^Result: PASS' test/results/pgtap.out; then
    # a file that died counts as one failure even when no subtest did
    [ "${tap_failed:-0}" -eq 0 ] && tap_failed=1
    failures+=("pgtap: $(grep -E '^t?e?s?t?/?.*\(Wstat|Failed' test/results/pgtap.out | head -5 | tr '\n' ' ')")
  fi
  tap_tests=${tap_tests:-0}
  passed=$((passed + tap_tests - tap_failed)); failed=$((failed + tap_failed))
  log "pgtap: $((tap_tests - tap_failed)) passed, $tap_failed failed"

  log "== docs: the SQL examples of README.md and docs/, docs/reference.md against the catalog"
  # one TAP line per page (test/docs/run.sh); a run that died without one fails too
  if ! bash test/docs/run.sh >test/results/docs.out 2>&1 && ! grep -qE '^not ok [0-9]+ ' test/results/docs.out; then
    echo "not ok 0 - test/docs/run.sh failed: $(tail -1 test/results/docs.out)" >>test/results/docs.out
  fi
  grep -E '^not ok [0-9]+ |^# ' test/results/docs.out >&2
  count_suite docs test/results/docs.out

  log "== clients: the client libraries against this cluster (clients/scenarios.md)"
  # one TAP line per test of each test/clients/*.sh; a script that failed without one fails too
  : >test/results/clients.out
  for c in test/clients/*.sh; do
    [ -e "$c" ] || continue
    bash "$c" >test/results/clients_one.out 2>&1 ||
      grep -qE '^not ok [0-9]+ ' test/results/clients_one.out ||
      echo "not ok 0 - $c failed: $(tail -1 test/results/clients_one.out)" >>test/results/clients_one.out
    cat test/results/clients_one.out >>test/results/clients.out
  done
  rm -f test/results/clients_one.out
  grep -E '^not ok [0-9]+ |^# ' test/results/clients.out >&2
  count_suite clients test/results/clients.out

  log "== crash and restart scripts"
  coord_run_scripts crash test/crash/*.sh

  log "== upgrade, dump and install safety"
  coord_run_scripts upgrade test/upgrade/*.sh

  log "== fuzz (its own cluster, port 54336; COORD_FUZZ_CALLS calls)"
  if FUZZ_CALLS=${COORD_FUZZ_CALLS:-6000} bash test/fuzz/fuzz.sh >test/results/fuzz.out 2>&1; then
    passed=$((passed + 1)); log "fuzz: ok ($(tail -1 test/results/fuzz.out))"
  else
    failed=$((failed + 1)); failures+=("fuzz"); log "fuzz: FAILED"; tail -20 test/results/fuzz.out >&2
  fi

  log "== coord-agent (each script runs its own cluster, ports 54340-54349)"
  coord_agent_tests

  log "== slow scripts"
  local i
  for i in "${!slow_pids[@]}"; do
    t=${slow_names[$i]}
    if wait "${slow_pids[$i]}"; then
      passed=$((passed + 1)); log "$(basename "$t"): ok ($(tail -1 "test/results/$(basename "$t").out"))"
    else
      failed=$((failed + 1)); failures+=("slow: $(basename "$t")")
      log "$(basename "$t"): FAILED"; tail -20 "test/results/$(basename "$t").out" >&2
    fi
  done

  if [ ${#failures[@]} -gt 0 ]; then
    log ""
    log "Failures:"
    printf '  %s\n' "${failures[@]}" >&2
    for d in test/results/*.diffs; do
      [ -f "$d" ] && { log "--- $d (first 60 lines)"; head -60 "$d" >&2; }
    done
  fi
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
}

case "$mode" in
  test)  run_tests ;;
  demo)  bash examples/demo.sh ;;
  bench) bash bench/run.sh ;;
  *)     log "usage: test/run.sh test|demo|bench"; exit 2 ;;
esac
