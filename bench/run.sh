#!/usr/bin/env bash
# make bench: pg_coord figures side by side with a hand-written SQL baseline
# on the same cluster.
#
# Run by test/run.sh bench after it has built and installed pg_coord and
# started a private cluster (PGHOST, PGPORT, PGUSER set).  Each section is a
# function bench_<name>; BENCH_SECTIONS chooses which run, in order:
#
#   lock      coord.lock/unlock (1- and 3-level), coord.try_lock/unlock against
#             pg_advisory_lock/unlock, distinct keys and one contended key
#   requests  coord.request + mark_queued + mark_done cycles against an INSERT
#             ON CONFLICT + 2 UPDATEs baseline on a plain table
#   jobs      enqueue (single, batched) and claim + complete (single at 4 and
#             8 workers, batched) against a hand-written SKIP LOCKED queue
#   next      one commit per job: a single-job loop on coord.complete_and_claim
#             against today's claim-then-complete loop and the hand-written
#             SKIP LOCKED queue doing each (4 workers; issue 28: at least 1.3x)
#   batch     claim + complete of 100 jobs a call (coord.claim + complete_many)
#             against the hand-written SKIP LOCKED batch, 4 workers: the
#             jobs section's batched rows alone (issue 28: at least 1.0x)
#   oldsnap   claim + complete with and without a session holding an old
#             snapshot, 200,000 jobs queued, coord and raw (OLDSNAP_DURATION s
#             per run, default 40)
#   latency   enqueue-to-claim latency of an idle LISTENing / polling worker
#             (bench/latency.py, LATENCY_JOBS jobs 10 ms apart)
#   lockstmt  (diagnostic, not in the default) the same pairs as one
#             statement per pair, to isolate server-side cost
#   semaphores  coord.acquire_permit/release_permit pairs against
#             coord.lock/unlock pairs (issue 16: at most 1.5x)
#   partitions  coord.owned against a lock-table read, and claim + complete
#             with partition_group against a plain one (issue 16), by
#             pgbench and per call in one session (bench/partitions.sql)
#   limits    claim + complete with a per-key concurrency limit and a
#             per-key rate limit over 100 keys against no limit (issue 17:
#             at least 0.8x)
#   workflows (not in the default; about 5 minutes) issue 27: enqueue with
#             after of one parent against a plain enqueue, claim + complete
#             with 1,000,000 waiting jobs in the queue against none, a parent
#             with 1,000 waiting children finished while workers claim,
#             coord.await's wake-up against LISTEN/NOTIFY (bench/await_notify.py)
#   fence     (not in the default) a write guarded by coord.fence_ok against
#             the same write unchecked, per client's path and on one shared
#             path (issue 24)
#   dashboard (not in the default; about 3 minutes) coordctl serve with
#             DASH_QUEUES x DASH_PER_QUEUE ready jobs (default 1,000 x 1,000):
#             the time of GET /, /api/queues.json and /metrics (median, 95th
#             percentile of DASH_REQUESTS each), EXPLAIN of the queues page's
#             statement, and claim + complete with and without a scrape of
#             /metrics every 5 s (A/B; target: at most 2% slower)
#   clients   (not in the default; about 3 minutes) the client libraries
#             against hand-written loops in the same language sending the
#             same SQL (issue 28): runs bench/clients/python.sh and, where
#             present, bench/clients/node.sh; no pgbench.  Each script, run
#             with PGDATABASE=coord_bench (and PGHOST, PGPORT, PGUSER) and the
#             knobs CLIENTS_ROUNDS, CLIENTS_JOBS, CLIENTS_BATCH_JOBS in its
#             environment, prints to stdout (other lines are ignored):
#               ratio|SIDE|BASELINE|MIN_RATIO|TEXT   first, one per comparison:
#                   SIDE's jobs/s against BASELINE's, a target of MIN_RATIO
#                   (empty: none), TEXT says what is compared
#               SIDE|JOBS_PER_S|CPU_US_PER_JOB[|CLIENT_US|SERVER_US]   one
#                   per side and round (alternate the order of the sides
#                   from round to round); CPU per job = the client process's
#                   CPU time plus its server backends' (/proc/<pid>/stat of
#                   pg_backend_pid()), over the jobs finished or enqueued
#             Sides without ratio lines are compared by name: SIDE X-lib (or
#             any X-*) against X-hand.  The section's block gives medians and
#             per-round ratios of jobs/s and of CPU per job.
#   metrics   (not in the default; about 5 minutes) issue 29: coord.metrics
#             with METRICS_JOBS live jobs (default 1,000,000) in
#             METRICS_QUEUES queues (default 1,000) after a coord.tick took
#             the per-queue counts: the median of METRICS_READS reads
#             (default 9; target under 100 ms), one read counting the live
#             jobs instead, the plans of every statement of a read
#             (auto_explain, nested ones too: no Seq Scan on coord.job); then
#             claim + complete (4 workers; queue q topped up to
#             METRICS_BACKLOG ready jobs, default 100,000, and a tick before
#             each run) without and with a read of the view every
#             METRICS_SCRAPE_EVERY s (default 5), METRICS_DURATION s a run
#             (default 20), METRICS_RUNS rounds (default 4; odd rounds
#             without the reader first, even ones with it first; target: at
#             least 0.98x)
#
# Knobs (environment):
#   BENCH_SECTIONS  sections to run              (default: lock)
#   BENCH_DURATION  seconds per pgbench run      (default: 7)
#   BENCH_RUNS      runs per configuration       (default: 3)
#   BENCH_CLIENTS   pgbench -c                   (default: 4)
#   BENCH_THREADS   pgbench -j                   (default: 2)
#   BENCH_RESULTS   summary file                 (default: bench/RESULTS.md)
#
# Raw per-run figures go to bench/out/ (gitignored); each section's summary
# table replaces that section's block in bench/RESULTS.md (other sections'
# blocks, and text outside the blocks, are kept) and is printed to stdout.
#
# Adding a section (requests, queue, ...): write bench_<name>() after the
# pattern of bench_lock: its own setup, run_section with "config:script"
# pairs, summarize with a spec (baselines and targets), section_block and
# write_block.  Put its pgbench scripts in bench/<name>-*.sql.
set -u
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
. "$BENCH_DIR/../test/lib.sh"

BENCH_SECTIONS=${BENCH_SECTIONS:-lock}
BENCH_DURATION=${BENCH_DURATION:-7}
BENCH_RUNS=${BENCH_RUNS:-3}
BENCH_CLIENTS=${BENCH_CLIENTS:-4}
BENCH_THREADS=${BENCH_THREADS:-2}
BENCH_RESULTS=${BENCH_RESULTS:-$BENCH_DIR/RESULTS.md}
BENCH_DB=coord_bench
SECTION_T0=
OUT=$BENCH_DIR/out
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
# the knobs given to this run, to print with the command in RESULTS.md
BENCH_KNOBS=$(env | grep -E '^BENCH_(DURATION|RUNS|CLIENTS|THREADS)=' | sort | tr '\n' ' ')

if [ -z "${PGHOST:-}" ]; then
  log "bench/run.sh needs a running cluster: use 'make bench' (test/run.sh bench)"
  exit 2
fi
PGBENCH=$PGBIN/pgbench
[ -x "$PGBENCH" ] || PGBENCH=$(command -v pgbench) || { log "pgbench not found"; exit 2; }

mkdir -p "$OUT"
# COUNT_SQL[config]: a query counting the completed units of a configuration
# (e.g. finished request cycles), run before and after each of its runs; the
# difference is stored as xacts_delta and used by summarize for kind "count".
declare -A COUNT_SQL=()
# CONFIG_CLIENTS[config]: pgbench -c for that configuration (default BENCH_CLIENTS).
declare -A CONFIG_CLIENTS=()
# CONFIG_OPTS[config]: more pgbench options for that configuration (e.g. -D).
declare -A CONFIG_OPTS=()

# psql against the maintenance database, so our own reads never count in
# coord_bench's statistics.
q() { psql -qXAt -d postgres -c "$1"; }

# Commits + rollbacks recorded for the bench database.  Backends flush their
# counters as they exit, a little after they leave pg_stat_activity, so wait
# for the clients to go and then for the figure to settle.
xact_count() {
  local i prev="" cur
  for i in $(seq 50); do
    [ "$(q "SELECT count(*) FROM pg_stat_activity WHERE datname = '$BENCH_DB' AND backend_type = 'client backend'")" = 0 ] && break
    sleep 0.1
  done
  for i in $(seq 20); do
    cur=$(q "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = '$BENCH_DB'")
    [ "$cur" = "$prev" ] && break
    prev=$cur
    sleep 0.2
  done
  echo "$cur"
}

# CPU accounting.  Throughput on a small shared machine moves with whatever
# else runs on it; the CPU time a pair costs moves much less, so every run
# also records the CPU seconds of the server's backends (the postmaster's
# reaped children: its cutime + cstime, plus its own time) and of pgbench.
# Background processes (checkpointer, walwriter, ...) are not counted; the
# lock scripts write no WAL, so they have nothing to do.
PM=
pm_init() {
  local dd
  dd=${PGDATA:-$(q 'SHOW data_directory')}
  PM=$(head -1 "$dd/postmaster.pid" 2>/dev/null)
  [ -n "$PM" ] && [ -r "/proc/$PM/stat" ] || { log "cannot find the postmaster's pid"; exit 2; }
}
server_ticks() { sed 's/.*) //' "/proc/$PM/stat" | awk '{print $12 + $13 + $14 + $15}'; }
CLK_TCK=$(getconf CLK_TCK)

# Waits until the bench database's backends have exited and the postmaster
# has reaped them (so that their CPU time is in its cutime/cstime); but
# those in BENCH_KEEP_PIDS (space-separated: a session that stays, such as
# the dashboard section's coordctl serve).
BENCH_KEEP_PIDS=
wait_backends_gone() {
  local i
  for i in $(seq 100); do
    ps --ppid "$PM" -o pid=,stat=,args= |
      awk -v keep=" $BENCH_KEEP_PIDS " -v db="$BENCH_DB" \
        'index(keep, " " $1 " ") == 0 && ($2 ~ /^Z/ || index($0, db))' | grep -q . || return 0
    sleep 0.05
  done
  log "  (backends of $BENCH_DB still present after 5 s; CPU figures of this run may be low)"
}

# source_info: the commit the extension was built from, and whether the
# working tree had changes in what the build uses.
source_info() {
  local root=$BENCH_DIR/.. head dirty
  head=$(git -C "$root" rev-parse --short HEAD 2>/dev/null) || { echo "not a git checkout"; return; }
  dirty=$(git -C "$root" status --porcelain -- src sql Makefile pg_coord.control 2>/dev/null |
          awk '{print $2}' | tr '\n' ' ' | sed 's/ $//')
  echo "commit $head${dirty:+, with uncommitted changes in: $dirty}"
}

# machine_info: one markdown line per item, for RESULTS.md.
machine_info() {
  local cpu mem
  cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
  mem=$(awk '/^MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)
  echo "- machine: $(nproc) CPUs ($cpu), $mem RAM, $(uname -sr)"
  echo "- source: $SOURCE_INFO"
  echo "- server: $(q 'SELECT version()')"
  echo "- client: $("$PGBENCH" --version), over the cluster's unix socket"
  echo "- cluster: the private throwaway cluster of test/lib.sh (fsync on, synchronous_commit on, shared_buffers 256MB)"
}

# run_config SECTION CONFIG ROUND SCRIPT: one pgbench run; appends a row
#   section config round tps transactions xacts_delta server_cpu_s client_cpu_s
# to $OUT/$SECTION.tsv.  xacts_delta is the number of transactions the server
# recorded, for the try scripts only (0 for the others): 1 per script run,
# 2 when the try succeeded, plus about a dozen per run for the clients'
# connections and statement preparation (negligible, not subtracted).
run_config() {
  local section=$1 config=$2 round=$3 script=$4
  local log=$OUT/$STAMP/$section-$config-r$round.log
  local before=0 after=0 tps xacts rc t0 t1 client TIMEFORMAT='%3U %3S'
  local clients=${CONFIG_CLIENTS[$config]:-$BENCH_CLIENTS}
  # a section may prepare each run (refill a backlog, vacuum): prerun_<section> CONFIG
  if declare -F "prerun_$section" >/dev/null; then "prerun_$section" "$config" || exit 1; fi
  wait_backends_gone
  # only the try scripts need the server's count; waiting for it costs ~1 s
  case $script in *try*) before=$(xact_count) ;; esac
  [ -n "${COUNT_SQL[$config]:-}" ] && before=$(psql -qXAt -d "$BENCH_DB" -c "${COUNT_SQL[$config]}")
  t0=$(server_ticks)
  # shellcheck disable=SC2086
  { time "$PGBENCH" -n -M prepared -c "$clients" -j "$BENCH_THREADS" -T "$BENCH_DURATION" \
      ${CONFIG_OPTS[$config]:-} -f "$BENCH_DIR/$script" "$BENCH_DB" >"$log" 2>&1; } 2>"$log.time"
  rc=$?
  wait_backends_gone
  t1=$(server_ticks)
  client=$(awk '{print $1 + $2}' "$log.time")
  if [ $rc -ne 0 ] || grep -qE 'WARNING|ERROR|aborted' "$log"; then
    log "pgbench failed or warned for $section/$config round $round; see $log"
    tail -5 "$log" >&2
    exit 1
  fi
  case $script in *try*) after=$(xact_count) ;; esac
  [ -n "${COUNT_SQL[$config]:-}" ] && after=$(psql -qXAt -d "$BENCH_DB" -c "${COUNT_SQL[$config]}")
  tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$log")
  xacts=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$log")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$section" "$config" "$round" "$tps" "$xacts" \
    $((after - before)) "$(awk -v t=$((t1 - t0)) -v hz="$CLK_TCK" 'BEGIN {printf "%.2f", t / hz}')" \
    "$client" >>"$OUT/$section.tsv"
  log "  $section round $round $config: $(printf '%.0f' "$tps") script runs/s"
}

# run_section SECTION "config script ..." : every configuration BENCH_RUNS
# times, interleaved (round 1 of all, then round 2 of all, ...) so that drift
# and neighbours' noise hit every configuration alike.
run_section() {
  local section=$1; shift
  local -a configs=("$@")
  local round c
  rm -f "$OUT/$section.tsv"
  mkdir -p "$OUT/$STAMP"
  SECTION_T0=$(date -u '+%Y-%m-%d %H:%M')
  for round in $(seq "$BENCH_RUNS"); do
    for c in "${configs[@]}"; do
      run_config "$section" "${c%%:*}" "$round" "${c#*:}"
    done
  done
  cp "$OUT/$section.tsv" "$OUT/$STAMP/$section.tsv"
}

# summarize SECTION SPEC: SPEC lines "config|label|keys|baseline-config|kind[|min-ratio]"
# (kind: pair = every script run is one pair; try = pairs are the successful
# tries, counted from the server's transaction count; min-ratio: a target for
# the throughput ratio to the baseline, reported as met or not).  Prints the markdown
# table and writes it to $OUT/$SECTION.md.
summarize() {
  local section=$1 spec=$2 unit=${3:-pair} target_text=${4:-"pair at most 1.3× the raw pair"}
  "$PYTHON" - "$OUT/$section.tsv" "$spec" "$unit" "$target_text" >"$OUT/$section.table.md" <<'PY'
import sys, statistics
unit, target_text = sys.argv[3], sys.argv[4]
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
spec = [(l.split("|") + [""])[:6] for l in sys.argv[2].strip().splitlines()]
runs = {}   # config -> [(round, pairs/s, attempts/s, success fraction, CPU µs/pair)]
for section, config, rnd, tps, xacts, delta, scpu, ccpu in rows:
    tps, xacts, delta, scpu, ccpu = float(tps), int(xacts), int(delta), float(scpu), float(ccpu)
    kind = next(s[4] for s in spec if s[0] == config)
    if kind == "try":
        # each script run commits 1 transaction (failed try) or 2 (try + unlock);
        # the bench database sees nothing else while pgbench runs
        ok = min(max(delta - xacts, 0), xacts) / xacts
    elif kind == "count":
        # delta = completed units counted in the database (COUNT_SQL) before/after
        # the run; ok = units per script run (at most 1 for requests, up to 100
        # for the batched job scripts)
        ok = max(delta, 0) / xacts
    else:
        ok = 1.0
    pairs = max(xacts * ok, 1)
    runs.setdefault(config, []).append((int(rnd), tps * ok, tps, ok,
                                        (scpu + ccpu) / pairs * 1e6))
def fmt(x): return f"{x:,.0f}"
med = {c: statistics.median(r[1] for r in v) for c, v in runs.items()}
cpu = {c: statistics.median(r[4] for r in v) for c, v in runs.items()}
print(f"| configuration | keys | {unit}s/s: median (min–max) | throughput ratio (per round) | CPU µs per {unit}: median (min–max) | cost ratio (per round) | baseline | notes |")
print("|---|---|---|---|---|---|---|---|")
verdicts, spreads, cspreads = [], [], []
for config, label, keys, base, kind, target in spec:
    v = runs.get(config)
    if not v:
        continue
    p = [r[1] for r in v]
    spreads.append(((max(p) - min(p)) / med[config], f"{label}, {keys}"))
    cspreads.append(((max(r[4] for r in v) - min(r[4] for r in v)) / cpu[config], f"{label}, {keys}"))
    cell = f"{fmt(med[config])} ({fmt(min(p))}–{fmt(max(p))})"
    c = [r[4] for r in v]
    cpucell = f"{cpu[config]:.1f} ({min(c):.1f}–{max(c):.1f})"
    if base == "-" or base not in runs:
        ratio, cratio, basecell = "1.00", "1.00", "–"
    else:
        b = {r[0]: r[1] for r in runs[base]}
        bc = {r[0]: r[4] for r in runs[base]}
        per = [r[1] / b[r[0]] for r in v if r[0] in b]
        cper = [r[4] / bc[r[0]] for r in v if r[0] in bc]
        ratio = f"{med[config] / med[base]:.2f} ({min(per):.2f}–{max(per):.2f})"
        cratio = f"{cpu[config] / cpu[base]:.2f} ({min(cper):.2f}–{max(cper):.2f})"
        basecell = next(s[1] for s in spec if s[0] == base)
        if target:
            r = med[config] / med[base]
            cr = cpu[config] / cpu[base]
            cmax = round(1 / float(target), 2)
            verdicts.append(f"{label}, {keys}: throughput ratio {r:.2f} against a minimum of {float(target):.2f}"
                            f" ({'met' if r >= float(target) else 'NOT met'}; rounds {min(per):.2f}–{max(per):.2f});"
                            f" CPU cost ratio {cr:.2f} against a maximum of {cmax:.2f}"
                            f" ({'met' if cr <= cmax else 'NOT met'}; rounds {min(cper):.2f}–{max(cper):.2f})")
    note = ""
    if kind == "try":
        att = statistics.median(r[2] for r in v)
        okf = statistics.median(r[3] for r in v)
        note = f"{fmt(att)} attempts/s, {okf:.0%} succeed"
    elif kind == "count":
        att = statistics.median(r[2] for r in v)
        okf = statistics.median(r[3] for r in v)
        note = f"{fmt(att)} script runs/s, {okf:.3g} {unit}s per script run"
    print(f"| {label} | {keys} | {cell} | {ratio} | {cpucell} | {cratio} | {basecell} | {note} |")
print()
if spreads:
    lo, hi = min(spreads), max(spreads)
    print(f"Noise: the spread of the {len(runs[config])} runs of a configuration, (max − min) / median, "
          f"goes from {lo[0]:.0%} ({lo[1]}) to {hi[0]:.0%} ({hi[1]}) for throughput", end="")
    lo, hi = min(cspreads), max(cspreads)
    print(f", and from {lo[0]:.0%} ({lo[1]}) to {hi[0]:.0%} ({hi[1]}) for CPU per {unit}.")
for v in verdicts:
    print()
    print(f"Target ({target_text}): {v}.")
PY
  cat "$OUT/$section.table.md"
}

# write_block SECTION FILE: replaces the section's block in RESULTS.md
# (between <!-- bench:SECTION begin/end --> markers), appending it if absent.
write_block() {
  local section=$1 block=$2
  [ -f "$BENCH_RESULTS" ] || results_header >"$BENCH_RESULTS"
  "$PYTHON" - "$BENCH_RESULTS" "$section" "$block" <<'PY'
import sys, re
path, section, block = sys.argv[1], sys.argv[2], open(sys.argv[3]).read().rstrip("\n")
text = open(path).read()
begin, end = f"<!-- bench:{section} begin -->", f"<!-- bench:{section} end -->"
new = f"{begin}\n{block}\n{end}"
pat = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
text = pat.sub(lambda m: new, text) if pat.search(text) else text.rstrip("\n") + "\n\n" + new + "\n"
open(path, "w").write(text)
PY
}

results_header() {
  cat <<'EOF'
# pg_coord benchmark results

Written by `make bench` (bench/run.sh): each section's block, between its
`<!-- bench:... -->` markers, is replaced by the next run of that section;
text outside the markers (such as the notes at the end) is kept.

How to reproduce: `make bench` from the repository root (it installs missing
packages, builds and installs the extension, starts a private throwaway
cluster, runs `bench/run.sh`, and stops the cluster).  Choose sections with
`BENCH_SECTIONS` (e.g. `BENCH_SECTIONS="lock lockstmt" make bench`); see the
top of bench/run.sh for the other knobs.  Raw pgbench output of every run is
kept in bench/out/<timestamp>/ (not committed).

All clients and the server share the machine's CPUs, so every figure is
client + server cost.  Quote medians and ratios: the machine is a small shared
VM, and absolute figures move by several percent from run to run.
EOF
}

# ---------------------------------------------------------------- sections

LOCK_SPEC='raw-distinct|raw lock|distinct|-|pair
coord1-distinct|coord.lock 1-level|distinct|raw-distinct|pair|0.77
coord3-distinct|coord.lock 3-level|distinct|raw-distinct|pair
rawtry-distinct|raw try|distinct|-|try
try-distinct|coord.try_lock 1-level|distinct|rawtry-distinct|try
raw-contended|raw lock|contended|-|pair
coord1-contended|coord.lock 1-level|contended|raw-contended|pair|0.77
coord3-contended|coord.lock 3-level|contended|raw-contended|pair
rawtry-contended|raw try|contended|-|try
try-contended|coord.try_lock 1-level|contended|rawtry-contended|try'

# Names are registered in coord.lock_names at a path's first use; do that
# once here, so that no run pays for it, and warm the server up.
lock_prepare() {
  local c
  for c in $(seq 0 $((BENCH_CLIENTS - 1))); do
    psql -qXAt -d "$BENCH_DB" \
      -c "SELECT coord.lock('/bench$c'), coord.unlock('/bench$c')" \
      -c "SELECT coord.lock('/bench/l3/$c'), coord.unlock('/bench/l3/$c')" >/dev/null
  done
  psql -qXAt -d "$BENCH_DB" \
    -c "SELECT coord.lock('/bench-contended'), coord.unlock('/bench-contended')" \
    -c "SELECT coord.lock('/bench/l3/contended'), coord.unlock('/bench/l3/contended')" >/dev/null
  "$PGBENCH" -n -M prepared -c "$BENCH_CLIENTS" -j "$BENCH_THREADS" -T 3 \
    -f "$BENCH_DIR/lock-coord1-distinct.sql" -f "$BENCH_DIR/lock-raw-distinct.sql" \
    "$BENCH_DB" >"$OUT/$STAMP/warmup.log" 2>&1
}

# section_block SECTION TITLE INTRO CMD: the RESULTS.md block of a section.
section_block() {
  local section=$1 title=$2 intro=$3 cmd=$4 load_start=$5
  {
    echo "## $title"
    echo
    echo "$intro"
    echo
    echo "- date: $SECTION_T0 – $(date -u '+%H:%M') UTC"
    machine_info
    echo "- command: \`$cmd\` (this section: $BENCH_RUNS runs of ${BENCH_DURATION} s per configuration, interleaved: round 1 of every configuration, then round 2, ...)"
    echo "- each run: \`pgbench -n -M prepared -c $BENCH_CLIENTS -j $BENCH_THREADS -T $BENCH_DURATION -f bench/<script>.sql coord_bench\`"
    echo "- load average (1 min) at start / end of the section: $load_start / $(cut -d' ' -f1 /proc/loadavg); other busy processes at the end: $(busy_processes)"
    echo
    cat "$OUT/$section.table.md"
  } >"$OUT/$section.md"
}

# Processes using noticeable CPU (%CPU is ps's lifetime average, so a
# neighbour's benchmark, tests or demo on the same machine show up here and
# explain noisy figures).
busy_processes() {
  local b
  b=$(ps -eo pcpu=,comm=,args= --sort=-pcpu |
      awk '$1 >= 10 && $2 != "ps" && $2 != "awk" {printf "%s%s (%s%%)", sep, $2, $1; sep=", "}' | head -c 200)
  echo "${b:-none above 10% CPU}"
}

bench_lock() {
  local load_start
  load_start=$(cut -d' ' -f1 /proc/loadavg)
  log "== lock: $((10 * BENCH_RUNS)) runs of ${BENCH_DURATION} s"
  lock_prepare
  run_section lock \
    raw-distinct:lock-raw-distinct.sql \
    coord1-distinct:lock-coord1-distinct.sql \
    coord3-distinct:lock-coord3-distinct.sql \
    rawtry-distinct:lock-rawtry-distinct.sql \
    try-distinct:lock-try-distinct.sql \
    raw-contended:lock-raw-contended.sql \
    coord1-contended:lock-coord1-contended.sql \
    coord3-contended:lock-coord3-contended.sql \
    rawtry-contended:lock-rawtry-contended.sql \
    try-contended:lock-try-contended.sql
  summarize lock "$LOCK_SPEC" >/dev/null
  section_block lock "Locks: lock/unlock pairs, $BENCH_CLIENTS clients" \
"Configurations: *raw lock* = \`pg_advisory_lock(k)\` + \`pg_advisory_unlock(k)\`;
*coord.lock 1-level / 3-level* = \`coord.lock(p)\` + \`coord.unlock(p)\`;
*raw try* = \`pg_try_advisory_lock(k)\` + \`pg_advisory_unlock(k)\`;
*coord.try_lock 1-level* = \`coord.try_lock(p)\` + \`coord.unlock(p)\`.
Every configuration is a pgbench script of the same shape: the lock call and
the unlock call are two separate statements (two round trips, two autocommit
transactions), as a client that takes a lock, works, and releases it would
issue them; the raw baseline does exactly the same with pg_advisory_lock(bigint).
Distinct keys: client *n* locks \`pg_advisory_lock(n)\` / \`'/bench' || n\` /
\`'/bench/l3/' || n\` (the 3-level paths share their ancestors /bench and
/bench/l3, which every client takes in intention mode).  Contended: every
client locks the same key (\`7201\`, \`/bench-contended\`,
\`/bench/l3/contended\`).  The try scripts unlock only when the try succeeded
(\`\\gset\` + \`\\if\`), and count successful pairs only, from the server's
transaction count (a script run is 2 transactions when the try succeeded, 1
when it failed).  Two measures per configuration: throughput (pairs/s) and
CPU cost (CPU µs per pair: CPU time of the server's backends, read from the
postmaster's reaped-children counters, plus pgbench's own, divided by the
pairs; the CPU of failed tries is charged to the successful pairs).  Ratios
compare a row with the baseline named in it.  the performance targets ask for
a 1-level pair to cost at most 1.3× the raw pair: a throughput ratio of at
least 0.77 and a CPU cost ratio of at most 1.30.  On this small shared
machine throughput moves with whatever else runs on it; the CPU per pair
moves much less, so it is the steadier measure of the cost.  The per-round
ranges compare runs of the same round, which ran within a minute of each
other." \
    "${BENCH_KNOBS}make bench" "$load_start"
  write_block lock "$OUT/lock.md"
  cp "$OUT/lock.md" "$OUT/$STAMP/"
  cat "$OUT/lock.table.md"
}

SEMAPHORES_SPEC='lock-distinct|coord.lock + coord.unlock, 1-level|distinct|-|pair
permit-distinct|coord.acquire_permit + coord.release_permit|distinct|lock-distinct|pair|0.667
nosince-distinct|coord.acquire_permit + release_permit, coord.permit_since off|distinct|lock-distinct|pair|0.667
permit-shared|coord.acquire_permit + coord.release_permit|one semaphore, 4 permits|lock-distinct|pair'

# Issue 16: a permit's acquire/release pair costs at most 1.5x a lock/unlock pair.
bench_semaphores() {
  local load_start c
  load_start=$(cut -d' ' -f1 /proc/loadavg)
  log "== semaphores: $((4 * BENCH_RUNS)) runs of ${BENCH_DURATION} s"
  lock_prepare
  for c in $(seq 0 $((BENCH_CLIENTS - 1))); do
    psql -qXAt -d "$BENCH_DB" -c "SELECT coord.acquire_permit('/bsem$c', 3), coord.release_permit('/bsem$c')" >/dev/null
  done
  run_section semaphores \
    lock-distinct:lock-coord1-distinct.sql \
    permit-distinct:sem-permit-distinct.sql \
    nosince-distinct:sem-nosince-distinct.sql \
    permit-shared:sem-permit-shared.sql
  summarize semaphores "$SEMAPHORES_SPEC" pair "issue 16, permit pair at most 1.5× a lock/unlock pair" >/dev/null
  section_block semaphores "Semaphores: acquire_permit/release_permit pairs against lock/unlock pairs, $BENCH_CLIENTS clients" \
"Configurations: *coord.lock* = \`coord.lock('/bench' || n)\` + \`coord.unlock(...)\`
(the baseline); *acquire_permit* = \`coord.acquire_permit('/bsem' || n, 3)\` +
\`coord.release_permit(...)\`, one semaphore of 3 permits per client (so never
full), with the default \`coord.permit_since = on\` (each acquisition writes its
permit's label, a row of the unlogged coord.permit_holders, for the view's
since) and with it off (set by \`set_config\` in the acquiring statement; a
label is then written once per session and permit); *one semaphore* = every
client on \`/bsem-shared\` with 4 permits.  Two statements per pair, as in the
lock section.  Measures as there: pairs/s and CPU µs per pair (server
backends plus pgbench)." \
    "${BENCH_KNOBS}BENCH_SECTIONS=semaphores make bench" "$load_start"
  write_block semaphores "$OUT/semaphores.md"
  cp "$OUT/semaphores.md" "$OUT/$STAMP/"
  cat "$OUT/semaphores.table.md"
}

LOCKSTMT_SPEC='raw-distinct|raw lock, 1 statement|distinct|-|pair
coord1-distinct|coord.lock 1-level, 1 statement|distinct|raw-distinct|pair|0.77
coord3-distinct|coord.lock 3-level, 1 statement|distinct|raw-distinct|pair'

bench_lockstmt() {
  local load_start
  load_start=$(cut -d' ' -f1 /proc/loadavg)
  log "== lockstmt: $((3 * BENCH_RUNS)) runs of ${BENCH_DURATION} s"
  lock_prepare
  run_section lockstmt \
    raw-distinct:lockstmt-raw-distinct.sql \
    coord1-distinct:lockstmt-coord1-distinct.sql \
    coord3-distinct:lockstmt-coord3-distinct.sql
  summarize lockstmt "$LOCKSTMT_SPEC" >/dev/null
  section_block lockstmt "Locks, diagnostic: lock and unlock in one statement, $BENCH_CLIENTS clients" \
"Not part of the default run (\`BENCH_SECTIONS=lockstmt\`).  Lock and unlock
are called in one SELECT, so one round trip and one transaction carry the
pair: the per-pair client, protocol and transaction cost is halved and the
functions' own server-side cost weighs more than in the lock section." \
    "${BENCH_KNOBS}BENCH_SECTIONS=lockstmt make bench" "$load_start"
  write_block lockstmt "$OUT/lockstmt.md"
  cp "$OUT/lockstmt.md" "$OUT/$STAMP/"
  cat "$OUT/lockstmt.table.md"
}

REQUESTS_SPEC='raw|raw INSERT ON CONFLICT + 2 UPDATEs|random|-|count
coord|coord.request + mark_queued + mark_done|random|raw|count|0.8'

bench_requests() {
  local load_start
  load_start=$(cut -d' ' -f1 /proc/loadavg)
  log "== requests: $((2 * BENCH_RUNS)) runs of ${BENCH_DURATION} s"
  psql -qX -d "$BENCH_DB" -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS bench_requests" \
    -c "CREATE TABLE bench_requests (key text PRIMARY KEY, state text NOT NULL)" >/dev/null || return 1
  COUNT_SQL[raw]="SELECT count(*) FROM bench_requests WHERE state = 'done'"
  COUNT_SQL[coord]="SELECT count(*) FROM coord.request_keys WHERE state = 'done'"
  "$PGBENCH" -n -M prepared -c "$BENCH_CLIENTS" -j "$BENCH_THREADS" -T 3 \
    -f "$BENCH_DIR/requests-coord.sql" -f "$BENCH_DIR/requests-raw.sql" \
    "$BENCH_DB" >"$OUT/$STAMP/requests-warmup.log" 2>&1
  run_section requests raw:requests-raw.sql coord:requests-coord.sql
  summarize requests "$REQUESTS_SPEC" cycle "issue: coord at least 0.8× the hand-written baseline" >/dev/null
  section_block requests "Requests: request → mark_queued → mark_done cycles, $BENCH_CLIENTS clients" \
"Configurations: *coord* = \`coord.request('k' || k, wait => false)\`, then,
when it returned true, \`coord.mark_queued('k' || k)\` and
\`coord.mark_done('k' || k)\`; *raw* = \`WITH i AS (INSERT INTO bench_requests
(key, state) VALUES (...) ON CONFLICT DO NOTHING RETURNING 1) SELECT count(*)
FROM i\`, then, when it inserted, \`UPDATE ... SET state = 'queued'\` and
\`UPDATE ... SET state = 'done'\` on a plain table (key text PRIMARY KEY,
state text NOT NULL).  Each step is its own statement and autocommit
transaction on both sides, so a cycle is three round trips and three commits.
Keys are \`random(1, 1000000000)\` per cycle (bench/requests-*.sql), so
collisions are rare; only completed cycles count, from the number of done
keys in the table before and after each run (\`COUNT_SQL\`).  CPU µs per
cycle: server backends plus pgbench, divided by the completed cycles.  Both
tables grow by every run (neither is vacuumed or emptied between runs).
Target (issue): coord at least 0.8× the baseline's cycles/s." \
    "${BENCH_KNOBS}BENCH_SECTIONS=requests make bench" "$load_start"
  write_block requests "$OUT/requests.md"
  cp "$OUT/requests.md" "$OUT/$STAMP/"
  cat "$OUT/requests.table.md"
}

JOBS_SPEC='enq-raw|raw INSERT|1 job/xact, 4 clients|-|count
enq-coord|coord.enqueue|1 job/xact, 4 clients|enq-raw|count
enqb-raw|raw INSERT ... SELECT|100 jobs/xact, 4 clients|-|count
enqb-coord|coord.enqueue_many|100 jobs/xact, 4 clients|enqb-raw|count
claim4-raw|raw SKIP LOCKED claim + DELETE|1 job/claim, 4 workers|-|count
claim4-coord|coord.claim + complete|1 job/claim, 4 workers|claim4-raw|count|1.0
claim8-raw|raw SKIP LOCKED claim + DELETE|1 job/claim, 8 workers|-|count
claim8-coord|coord.claim + complete|1 job/claim, 8 workers|claim8-raw|count|1.0
claimb-raw|raw SKIP LOCKED claim + DELETE|100 jobs/claim, 4 workers|-|count
claimb-coord|coord.claim + complete|100 jobs/claim, 4 workers|claimb-raw|count|1.0'

JOBS_BACKLOG=${JOBS_BACKLOG:-50000}
JOBS_BACKLOG_BATCH=${JOBS_BACKLOG_BATCH:-700000}

jobs_raw_table() {
  psql -qX -d "$BENCH_DB" -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS bench_jobs" \
    -c "CREATE TABLE bench_jobs (id bigserial PRIMARY KEY, queue text NOT NULL,
          payload jsonb NOT NULL, run_at timestamptz NOT NULL DEFAULT now(),
          priority int NOT NULL DEFAULT 0, state text NOT NULL DEFAULT 'ready',
          attempts int NOT NULL DEFAULT 0, locked_until timestamptz)" \
    -c "CREATE INDEX bench_jobs_ready ON bench_jobs (queue, priority DESC, run_at, id) WHERE state = 'ready'" \
    >/dev/null
}

# jobs_fill QUEUE N: tops both queues up to N ready jobs (coord through
# enqueue_many in a DO loop, 1,000 per call; raw through INSERT ... SELECT),
# then VACUUM ANALYZE both tables and CHECKPOINT.
jobs_fill() {
  local queue=$1 n=$2
  psql -qX -v ON_ERROR_STOP=1 -d "$BENCH_DB" <<SQL >/dev/null || return 1
DO \$\$
DECLARE have bigint; i int;
BEGIN
  SELECT count(*) INTO have FROM coord.job WHERE queue = '$queue';
  FOR i IN 1 .. ceil(greatest($n - have, 0) / 1000.0)::int LOOP
    PERFORM count(*) FROM coord.enqueue_many('$queue', array_fill(jsonb_build_object('i', i), ARRAY[1000]));
  END LOOP;
  SELECT count(*) INTO have FROM bench_jobs WHERE queue = '$queue' AND state = 'ready';
  INSERT INTO bench_jobs (queue, payload)
    SELECT '$queue', jsonb_build_object('g', g) FROM generate_series(1, greatest($n - have, 0)) g;
END
\$\$;
SQL
  psql -qX -d "$BENCH_DB" -c "VACUUM ANALYZE coord.job" -c "VACUUM ANALYZE coord.job_history" \
    -c "VACUUM ANALYZE bench_jobs" -c "CHECKPOINT" >/dev/null
}

# The enqueue rows' jobs (queue 'e') are deleted before every run: a claim's
# cost grows with the jobs of other queues (see the notes in RESULTS.md), and
# the tables would grow by ~10^5 jobs per batched run.
jobs_drop_e() {
  psql -qX -d "$BENCH_DB" -c "DELETE FROM coord.job WHERE queue = 'e'" \
    -c "DELETE FROM bench_jobs WHERE queue = 'e'" -c "VACUUM ANALYZE coord.job" \
    -c "VACUUM ANALYZE bench_jobs" -c "CHECKPOINT" >/dev/null
}

prerun_jobs() {
  case $1 in
    enq*)    jobs_drop_e ;;
    claimb*) jobs_drop_e && jobs_fill q "$JOBS_BACKLOG_BATCH" ;;
    claim*)  jobs_drop_e && jobs_fill q "$JOBS_BACKLOG" ;;
  esac
}

bench_jobs() {
  local load_start
  load_start=$(cut -d' ' -f1 /proc/loadavg)
  log "== jobs: $((10 * BENCH_RUNS)) runs of ${BENCH_DURATION} s"
  jobs_raw_table
  COUNT_SQL[enq-raw]="SELECT count(*) FROM bench_jobs WHERE queue = 'e'"
  COUNT_SQL[enqb-raw]=${COUNT_SQL[enq-raw]}
  COUNT_SQL[enq-coord]="SELECT count(*) FROM coord.job WHERE queue = 'e'"
  COUNT_SQL[enqb-coord]=${COUNT_SQL[enq-coord]}
  local c
  for c in claim4 claim8 claimb; do
    COUNT_SQL[$c-raw]="SELECT -count(*) FROM bench_jobs WHERE queue = 'q'"
    COUNT_SQL[$c-coord]="SELECT count(*) FROM coord.job_history WHERE queue = 'q' AND state = 'done'"
  done
  CONFIG_CLIENTS[claim8-raw]=8
  CONFIG_CLIENTS[claim8-coord]=8
  run_section jobs \
    enq-raw:jobs-enq-raw.sql enq-coord:jobs-enq-coord.sql \
    enqb-raw:jobs-enqb-raw.sql enqb-coord:jobs-enqb-coord.sql \
    claim4-raw:jobs-claim-raw.sql claim4-coord:jobs-claim-coord.sql \
    claim8-raw:jobs-claim-raw.sql claim8-coord:jobs-claim-coord.sql \
    claimb-raw:jobs-claimb-raw.sql claimb-coord:jobs-claimb-coord.sql
  summarize jobs "$JOBS_SPEC" job "claim + complete at least matches a hand-written SKIP LOCKED queue" >/dev/null
  section_block jobs "Jobs: enqueue and claim + complete against a hand-written SKIP LOCKED queue" \
"Baseline: a plain table \`bench_jobs (id bigserial PRIMARY KEY, queue, payload
jsonb, run_at, priority, state, attempts, locked_until)\` with a partial index
\`(queue, priority DESC, run_at, id) WHERE state = 'ready'\`; claim = \`UPDATE
... SET state = 'running' ... WHERE id IN (SELECT id ... ORDER BY priority
DESC, run_at, id LIMIT n FOR UPDATE SKIP LOCKED) RETURNING id\`, complete =
\`DELETE\` (bench/jobs-*-raw.sql).  pg_coord: \`coord.enqueue('e',
'{\"x\":1}')\`, \`coord.enqueue_many('e', array_fill(..., ARRAY[100]))\`,
\`coord.claim('q' [, 100])\` then \`coord.complete(id, token)\` /
\`coord.complete_many(ids, tokens)\` (bench/jobs-*-coord.sql).  Claim and
complete are separate transactions on both sides (two commits per claim).
Enqueue rows: no worker waits on queue 'e', so coord.enqueue sends no NOTIFY
(it notifies only when an idle claimer waits), and the raw INSERT has none
either: this is the ~8,000 jobs/s case of not the NOTIFY one.
Before each run the 'e' jobs of both sides are deleted and both
tables vacuumed (coord.claim slows down with jobs in other queues, see the
notes below); before each claim run both 'q' backlogs are topped up to
$JOBS_BACKLOG ready jobs ($JOBS_BACKLOG_BATCH for the batched rows), then
VACUUM ANALYZE and CHECKPOINT.  Jobs are counted in the database before and
after each run (raw: rows left; coord: done rows in coord.job_history), so
a batched claim that got fewer than 100 counts what it got.  The 8-worker
rows run \`pgbench -c 8\`.  CPU µs per job: server backends plus pgbench.
Target: claim + complete, single and batched, at least matches
the hand-written queue (ratio ≥ 1.00; the machine's noise is several percent)." \
    "${BENCH_KNOBS}BENCH_SECTIONS=jobs make bench" "$load_start"
  write_block jobs "$OUT/jobs.md"
  cp "$OUT/jobs.md" "$OUT/$STAMP/"
  cat "$OUT/jobs.table.md"
}

NEXT_SPEC='claim-raw|raw SKIP LOCKED claim, then DELETE|1 job/claim, 4 workers, 2 commits/job|-|count
claim-coord|coord.claim, then coord.complete|1 job/claim, 4 workers, 2 commits/job|claim-raw|count
next-raw|raw DELETE + SKIP LOCKED claim in one statement|1 job/claim, 4 workers, 1 commit/job|claim-raw|count
next-coord|coord.complete_and_claim|1 job/claim, 4 workers, 1 commit/job|claim-coord|count|1.3
next-coord-vs-raw|coord.complete_and_claim (against the raw one-statement loop)|1 job/claim, 4 workers, 1 commit/job|next-raw|count|1.0'

prerun_next() {
  case $1 in
    next-coord-vs-raw) return 0 ;;
    *) jobs_drop_e && jobs_fill q "$JOBS_BACKLOG" ;;
  esac
}

# One commit per job (issue 28): the single-job loop of a worker, today's
# (claim, then complete: two transactions) and on coord.complete_and_claim
# (one), each beside the hand-written SKIP LOCKED queue doing the same.
bench_next() {
  local load_start c
  load_start=$(cut -d' ' -f1 /proc/loadavg)
  log "== next: $((4 * BENCH_RUNS)) runs of ${BENCH_DURATION} s"
  jobs_raw_table
  for c in claim next; do
    COUNT_SQL[$c-raw]="SELECT -count(*) FROM bench_jobs WHERE queue = 'q'"
    COUNT_SQL[$c-coord]="SELECT count(*) FROM coord.job_history WHERE queue = 'q' AND state = 'done'"
    CONFIG_OPTS[$c-raw]="-D id=0"
    CONFIG_OPTS[$c-coord]="-D id=0"
  done
  run_section next \
    claim-raw:jobs-claim-raw.sql claim-coord:jobs-claim-coord.sql \
    next-raw:jobs-next-raw.sql next-coord:jobs-next-coord.sql
  # the coord one-commit loop against the raw one, from the same runs
  awk -F'\t' -v OFS='\t' '$2 == "next-coord" {$2 = "next-coord-vs-raw"; print}' "$OUT/next.tsv" >>"$OUT/next.tsv"
  summarize next "$NEXT_SPEC" job "issue 28: the one-commit loop at least 1.3× today's claim-then-complete loop" >/dev/null
  section_block next "One commit per job: a single-job worker loop, $BENCH_CLIENTS workers" \
"Configurations (bench/jobs-claim-*.sql, bench/jobs-next-*.sql): *coord.claim,
then coord.complete* = today's single-job loop, \`coord.claim('q')\` and
\`coord.complete(id, token)\` as two statements and two transactions per
job; *coord.complete_and_claim* = \`coord.complete_and_claim(id, token)\`
finishing the job in hand and claiming the next in one statement and one
commit (a client's first run claims only: \`pgbench -D id=0\` and \`\\if\`);
the raw rows are the hand-written SKIP LOCKED queue of the jobs section
doing each: \`UPDATE ... SKIP LOCKED ... RETURNING id\` then \`DELETE\`, and
\`WITH done AS (DELETE ... WHERE id = :id) UPDATE ... SKIP LOCKED ...
RETURNING id\` in one statement.  Both backlogs are topped up to
$JOBS_BACKLOG ready jobs before each run (VACUUM ANALYZE, CHECKPOINT); jobs
are counted in the database (coord: done rows in coord.job_history; raw:
rows deleted).  The last row compares the coord one-commit loop with the
raw one-commit loop (the same runs)." \
    "${BENCH_KNOBS}BENCH_SECTIONS=next make bench" "$load_start"
  write_block next "$OUT/next.md"
  cp "$OUT/next.md" "$OUT/$STAMP/"
  cat "$OUT/next.table.md"
}

BATCH_SPEC='claimb-raw|raw SKIP LOCKED claim + DELETE|100 jobs/claim, 4 workers|-|count
claimb-coord|coord.claim + complete_many|100 jobs/claim, 4 workers|claimb-raw|count|1.0'

prerun_batch() { jobs_drop_e && jobs_fill q "$JOBS_BACKLOG_BATCH"; }

# The jobs section's batched rows alone (issue 28: the batch claim +
# complete had fallen to 0.93x the hand-written batch).
bench_batch() {
  local load_start
  load_start=$(cut -d' ' -f1 /proc/loadavg)
  log "== batch: $((2 * BENCH_RUNS)) runs of ${BENCH_DURATION} s"
  jobs_raw_table
  COUNT_SQL[claimb-raw]="SELECT -count(*) FROM bench_jobs WHERE queue = 'q'"
  COUNT_SQL[claimb-coord]="SELECT count(*) FROM coord.job_history WHERE queue = 'q' AND state = 'done'"
  run_section batch claimb-raw:jobs-claimb-raw.sql claimb-coord:jobs-claimb-coord.sql
  summarize batch "$BATCH_SPEC" job "batch claim + complete at least matches the hand-written SKIP LOCKED batch" >/dev/null
  section_block batch "Batch claim + complete, 100 jobs a call, $BENCH_CLIENTS workers" \
"The batched rows of the jobs section alone (bench/jobs-claimb-*.sql):
\`coord.claim('q', 100)\` then \`coord.complete_many(ids, tokens)\`, two
transactions per 100 jobs, against the hand-written SKIP LOCKED queue's
\`UPDATE ... LIMIT 100 FOR UPDATE SKIP LOCKED ... RETURNING id\` then
\`DELETE ... WHERE id = ANY (...)\`.  Both backlogs are topped up to
$JOBS_BACKLOG_BATCH ready jobs before each run (VACUUM ANALYZE,
CHECKPOINT); jobs counted in the database." \
    "${BENCH_KNOBS}BENCH_SECTIONS=batch make bench" "$load_start"
  write_block batch "$OUT/batch.md"
  cp "$OUT/batch.md" "$OUT/$STAMP/"
  cat "$OUT/batch.table.md"
}

OLDSNAP_DURATION=${OLDSNAP_DURATION:-40}
OLDSNAP_JOBS=${OLDSNAP_JOBS:-200000}
# jobs queued: those finished behind the snapshot, plus enough for the measured run
OLDSNAP_BACKLOG=${OLDSNAP_BACKLOG:-320000}

# oldsnap_holder_start / _stop: a session in the bench database holding a
# REPEATABLE READ snapshot open (idle in transaction), fed through a fifo so
# that closing the fifo ends it cleanly.
oldsnap_holder_start() {
  local i
  rm -f "$OUT/$STAMP/holder.fifo"
  mkfifo "$OUT/$STAMP/holder.fifo"
  psql -qXAt -d "$BENCH_DB" <"$OUT/$STAMP/holder.fifo" >"$OUT/$STAMP/holder.log" 2>&1 &
  HOLDER_PID=$!
  exec 9>"$OUT/$STAMP/holder.fifo"
  echo "SET application_name = 'bench_holder'; BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM pg_class;" >&9
  for i in $(seq 50); do
    [ "$(q "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'bench_holder' AND state = 'idle in transaction' AND backend_xmin IS NOT NULL")" = 1 ] && return 0
    sleep 0.1
  done
  log "the snapshot holder did not start"; return 1
}
oldsnap_holder_stop() {
  exec 9>&-
  wait "$HOLDER_PID" 2>/dev/null
  rm -f "$OUT/$STAMP/holder.fifo"
}

# oldsnap_run SYSTEM HOLDER: fills queue q to OLDSNAP_JOBS ready jobs on both
# sides (VACUUM ANALYZE + CHECKPOINT), checks the count, runs 4 workers of
# single claim + complete for OLDSNAP_DURATION s with pgbench -P 10, and
# appends "system holder jobs_done tps tps_first10 tps_last10 dead_job dead_hist" to oldsnap.tsv.
oldsnap_run() {
  local sys=$1 holder=$2 log=$OUT/$STAMP/oldsnap-$1-$2.log have before after dead script count_sql pre
  jobs_drop_e || return 1
  jobs_fill q "$OLDSNAP_BACKLOG" || return 1
  if [ "$sys" = coord ]; then
    have=$(psql -qXAt -d "$BENCH_DB" -c "SELECT count(*) FROM coord.job WHERE queue = 'q'")
    count_sql="SELECT count(*) FROM coord.job_history WHERE queue = 'q' AND state = 'done'"
    script=jobs-claim-coord.sql
    pre=jobs-claimb-coord.sql
  else
    have=$(psql -qXAt -d "$BENCH_DB" -c "SELECT count(*) FROM bench_jobs WHERE queue = 'q' AND state = 'ready'")
    count_sql="SELECT -count(*) FROM bench_jobs WHERE queue = 'q'"
    script=jobs-claim-raw.sql
    pre=jobs-claimb-raw.sql
  fi
  [ "$have" -ge "$OLDSNAP_BACKLOG" ] || { log "prefill failed: $have ready jobs in $sys"; return 1; }
  [ "$holder" = holder ] && { oldsnap_holder_start || return 1; }
  # first finish OLDSNAP_JOBS jobs (batches of 100, 4 clients) behind the
  # snapshot, in both the holder and the no-holder run; then measure
  "$PGBENCH" -n -M prepared -c 4 -j "$BENCH_THREADS" -t $((OLDSNAP_JOBS / 400)) \
    -f "$BENCH_DIR/$pre" "$BENCH_DB" >"$log.pre" 2>&1 || { log "oldsnap pre-phase failed; see $log.pre"; return 1; }
  before=$(psql -qXAt -d "$BENCH_DB" -c "$count_sql")
  "$PGBENCH" -n -M prepared -c 4 -j "$BENCH_THREADS" -T "$OLDSNAP_DURATION" -P 10 \
    -f "$BENCH_DIR/$script" "$BENCH_DB" >"$log" 2>&1
  local rc=$?
  sleep 1   # let the exiting clients' statistics arrive
  if [ "$sys" = coord ]; then
    dead=$(psql -qXAt -d "$BENCH_DB" -c "SELECT (SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = 'coord.job'::regclass) || ' ' || (SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = 'coord.job_history'::regclass)")
  else
    dead=$(psql -qXAt -d "$BENCH_DB" -c "SELECT n_dead_tup || ' -' FROM pg_stat_user_tables WHERE relid = 'bench_jobs'::regclass")
  fi
  [ "$holder" = holder ] && oldsnap_holder_stop
  if [ $rc -ne 0 ] || grep -qE 'ERROR|aborted' "$log"; then
    log "pgbench failed for oldsnap $sys $holder; see $log"; tail -5 "$log" >&2; return 1
  fi
  after=$(psql -qXAt -d "$BENCH_DB" -c "$count_sql")
  local tps first last
  tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$log")
  first=$(sed -n 's/^progress: [0-9.]* s, \([0-9.]*\) tps.*/\1/p' "$log" | head -1)
  last=$(sed -n 's/^progress: [0-9.]* s, \([0-9.]*\) tps.*/\1/p' "$log" | tail -1)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$sys" "$holder" $((after - before)) "$tps" "$first" "$last" $dead >>"$OUT/oldsnap.tsv"
  log "  oldsnap $sys $holder: $(printf '%.0f' "$tps") jobs/s (first 10 s $first, last 10 s $last), dead tuples $dead"
}

bench_oldsnap() {
  local load_start t0
  load_start=$(cut -d' ' -f1 /proc/loadavg)
  log "== oldsnap: 4 runs of ${OLDSNAP_DURATION} s after $OLDSNAP_JOBS jobs finished"
  psql -qXAt -d "$BENCH_DB" -c "SELECT 1 FROM pg_class WHERE oid = 'bench_jobs'::regclass" >/dev/null 2>&1 || jobs_raw_table
  rm -f "$OUT/oldsnap.tsv"
  t0=$(date -u '+%Y-%m-%d %H:%M')
  oldsnap_run raw none && oldsnap_run coord none && oldsnap_run raw holder && oldsnap_run coord holder || return 1
  cp "$OUT/oldsnap.tsv" "$OUT/$STAMP/"
  "$PYTHON" - "$OUT/oldsnap.tsv" "$OLDSNAP_DURATION" >"$OUT/oldsnap.table.md" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
d = {(r[0], r[1]): r for r in rows}
label = {"raw": "raw SKIP LOCKED claim + DELETE", "coord": "coord.claim + complete"}
print("| system | old snapshot held | jobs done | jobs/s overall | jobs/s first 10 s | jobs/s last 10 s | dead tuples after (job table / coord.job_history) | holder / no-holder, overall | holder / no-holder, last 10 s |")
print("|---|---|---|---|---|---|---|---|---|")
ratios = {}
for sys_ in ("raw", "coord"):
    for h in ("none", "holder"):
        r = d[(sys_, h)]
        done, tps, first, last, dj, dh = int(r[2]), float(r[3]), float(r[4]), float(r[5]), r[6], r[7]
        if h == "holder":
            n = d[(sys_, "none")]
            ro, rl = tps / float(n[3]), last / float(n[5])
            ratios[sys_] = (ro, rl)
            rc, lc = f"{ro:.2f}", f"{rl:.2f}"
        else:
            rc = lc = "–"
        print(f"| {label[sys_]} | {'yes' if h == 'holder' else 'no'} | {done:,} | {tps:,.0f} | {first:,.0f} | {last:,.0f} | {int(dj):,} / {dh if dh == '-' else f'{int(dh):,}'} | {rc} | {lc} |")
print()
ro, rl = ratios["coord"]
print(f"Target (claim throughput with an old snapshot held stays within 20% of the run without): "
      f"coord ratio {ro:.2f} overall, {rl:.2f} in the last 10 s, against a minimum of 0.80: "
      f"{'met' if min(ro, rl) >= 0.8 else 'NOT met'}.  Raw SKIP LOCKED queue: {ratios['raw'][0]:.2f} overall, {ratios['raw'][1]:.2f} in the last 10 s.")
PY
  SECTION_T0=$t0
  {
    echo "## Jobs with an old snapshot held: claim + complete, 4 workers, after $OLDSNAP_JOBS jobs finished behind it"
    echo
    echo "Target: with a session holding an old snapshot open (so VACUUM can
remove nothing), claim throughput stays within 20% of the same run without it.
Before each run queue q of both systems is topped up to $OLDSNAP_BACKLOG ready jobs
(enqueue_many / INSERT ... SELECT, count checked), VACUUM ANALYZE, CHECKPOINT.
In the *holder* runs a psql session in the bench database then runs \`BEGIN
ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM pg_class;\` and stays
idle in that transaction until the run ends.  Then, in every run, 4 pgbench
clients finish $OLDSNAP_JOBS jobs in claims of 100 (bench/jobs-claimb-*.sql,
\`-t $((OLDSNAP_JOBS / 400))\`), so that in the holder runs that many finished
jobs lie behind the snapshot; then 4 pgbench workers run single claim +
complete (bench/jobs-claim-*.sql, two transactions per job) for
${OLDSNAP_DURATION} s with \`-P 10\`, which is what the table measures.  Dead tuples are
\`pg_stat_user_tables.n_dead_tup\` right after the run, before the holder ends.
One run per configuration (raw, coord, raw + holder, coord + holder, in that
order)."
    echo
    echo "- date: $t0 – $(date -u '+%H:%M') UTC"
    machine_info
    echo "- command: \`OLDSNAP_DURATION=$OLDSNAP_DURATION BENCH_SECTIONS=oldsnap make bench\`"
    echo "- each run: \`pgbench -n -M prepared -c 4 -j $BENCH_THREADS -T $OLDSNAP_DURATION -P 10 -f bench/jobs-claim-{raw,coord}.sql coord_bench\`"
    echo "- load average (1 min) at start / end of the section: $load_start / $(cut -d' ' -f1 /proc/loadavg); other busy processes at the end: $(busy_processes)"
    echo
    cat "$OUT/oldsnap.table.md"
  } >"$OUT/oldsnap.md"
  write_block oldsnap "$OUT/oldsnap.md"
  cp "$OUT/oldsnap.md" "$OUT/$STAMP/"
  cat "$OUT/oldsnap.table.md"
}

LATENCY_JOBS=${LATENCY_JOBS:-1000}

bench_latency() {
  local load_start t0 m
  load_start=$(cut -d' ' -f1 /proc/loadavg)
  t0=$(date -u '+%Y-%m-%d %H:%M')
  log "== latency: $LATENCY_JOBS jobs 10 ms apart, LISTEN worker then 10 ms polling worker"
  for m in listen poll; do
    psql -qX -d "$BENCH_DB" -c "DELETE FROM coord.job WHERE queue = 'lat'" >/dev/null
    PGDATABASE=$BENCH_DB "$PYTHON" "$BENCH_DIR/latency.py" "$m" "$LATENCY_JOBS" 10 lat \
      >"$OUT/$STAMP/latency-$m.txt" || { log "latency.py $m failed"; return 1; }
    log "  latency $m: $(wc -l <"$OUT/$STAMP/latency-$m.txt") jobs"
  done
  "$PYTHON" - "$OUT/$STAMP/latency-listen.txt" "$OUT/$STAMP/latency-poll.txt" "$LATENCY_JOBS" >"$OUT/latency.table.md" <<'PY'
import sys, statistics
def pct(v, p):
    v = sorted(v); k = (len(v) - 1) * p / 100; f = int(k)
    return v[f] + (v[min(f + 1, len(v) - 1)] - v[f]) * (k - f)
print("| worker | jobs claimed | p50 ms | p90 ms | p99 ms | max ms |")
print("|---|---|---|---|---|---|")
res = {}
for name, path in (("LISTEN \"coord:lat\", select() on the socket (50 ms cap)", sys.argv[1]), ("poll every 10 ms, no LISTEN", sys.argv[2])):
    v = [float(l) for l in open(path) if l.strip()]
    res[name] = v
    print(f"| {name} | {len(v):,} of {int(sys.argv[3]):,} | {pct(v, 50):.2f} | {pct(v, 90):.2f} | {pct(v, 99):.2f} | {max(v):.2f} |")
v = next(iter(res.values()))
print()
print(f"Target (enqueue-to-claim latency of an idle LISTENing worker: p99 under 10 ms, aim 2.6 ms): "
      f"p99 {pct(v, 99):.2f} ms, {'met' if pct(v, 99) < 10 else 'NOT met'}.")
PY
  SECTION_T0=$t0
  {
    echo "## Enqueue-to-claim latency of an idle worker"
    echo
    echo "bench/latency.py (psycopg2): one worker connection claims from queue
\`lat\` in a loop (\`coord.claim('lat')\`, then \`coord.complete\`); when a claim
returns nothing the LISTEN worker waits on its socket with \`select\` (50 ms
cap) after \`LISTEN \"coord:lat\"\`, the polling worker sleeps 10 ms.  A
producer connection enqueues $LATENCY_JOBS jobs 10 ms apart, one per
transaction, each with payload \`{\"t\": clock_timestamp() at enqueue}\`;
latency = \`clock_timestamp()\` in the claim's statement − t (both read on
the server's clock).  coord.enqueue NOTIFYs at commit only when a claimer is
idle (its last claim returned nothing), which is the case for every job here."
    echo
    echo "- date: $t0 – $(date -u '+%H:%M') UTC"
    machine_info
    echo "- command: \`BENCH_SECTIONS=latency make bench\`"
    echo "- load average (1 min) at start / end of the section: $load_start / $(cut -d' ' -f1 /proc/loadavg); other busy processes at the end: $(busy_processes)"
    echo
    cat "$OUT/latency.table.md"
  } >"$OUT/latency.md"
  write_block latency "$OUT/latency.md"
  cp "$OUT/latency.md" "$OUT/$STAMP/"
  cat "$OUT/latency.table.md"
}

PARTITIONS_SPEC='lockread|lock-table read: pg_try_advisory_lock + pg_advisory_unlock, 1 statement|distinct|-|call
owned1|coord.owned, 1 member per group|own group|lockread|call|1.0
owned1c|cardinality(coord.owned), 1 member per group|own group|lockread|call|1.0
owned4|coord.owned, 4 members in one group|one group|lockread|call|1.0
claim|coord.claim + coord.complete|one queue|-|call
gclaim|coord.claim(partition_group) + coord.complete|one queue, own group|claim|call|0.909'

# Issue 16: coord.owned with no membership change costs no more than a
# lock-table read; a group claim at most 1.1x a plain claim.
prerun_partitions() {
  case $1 in
    claim | gclaim) parts_fill ;;
  esac
}
parts_fill() {
  psql -qX -v ON_ERROR_STOP=1 -d "$BENCH_DB" >/dev/null <<'SQL' || return 1
DO $$
DECLARE have bigint; i int;
BEGIN
  SELECT count(*) INTO have FROM coord.job WHERE queue = 'bq';
  FOR i IN 1 .. ceil(greatest(60000 - have, 0) / 1000.0)::int LOOP
    PERFORM count(*) FROM coord.enqueue_many('bq', array_fill(jsonb_build_object('i', i), ARRAY[1000]));
  END LOOP;
END
$$;
SQL
  psql -qX -d "$BENCH_DB" -c "DELETE FROM coord.job_history" -c "VACUUM ANALYZE coord.job" \
    -c "VACUUM ANALYZE coord.job_history" -c "CHECKPOINT" >/dev/null
}

bench_partitions() {
  local load_start c pids=()
  load_start=$(cut -d' ' -f1 /proc/loadavg)
  log "== partitions: $((6 * BENCH_RUNS)) runs of ${BENCH_DURATION} s"
  for c in owned1 owned1c owned4 gclaim; do CONFIG_OPTS[$c]="-D joined=0"; done
  run_section partitions \
    lockread:parts-lockread.sql \
    owned1:parts-owned1.sql \
    owned1c:parts-owned1c.sql \
    owned4:parts-owned4.sql \
    claim:parts-claim.sql \
    gclaim:parts-gclaim.sql
  summarize partitions "$PARTITIONS_SPEC" call "issue 16: coord.owned at most a lock-table read, a group claim at most 1.1× a plain claim" >/dev/null
  # per call in one session, the server's work only: two more members of
  # group bp3 live in background sessions for the 3-member figure
  for c in 1 2; do
    psql -qXAt -d "$BENCH_DB" -c "SELECT coord.join('bp3', 'other$c')" \
      -c "DO \$\$ BEGIN FOR i IN 1 .. 60000 LOOP PERFORM coord.owned('bp3'); COMMIT; PERFORM pg_sleep(0.01); END LOOP; END \$\$" >/dev/null 2>&1 &
    pids+=($!)
  done
  sleep 1
  psql -qXA -F ' | ' -v ON_ERROR_STOP=1 -d "$BENCH_DB" -f "$BENCH_DIR/partitions.sql" >"$OUT/partitions.session.txt" 2>&1 || {
    log "bench/partitions.sql failed"; cat "$OUT/partitions.session.txt" >&2; }
  psql -qXAt -d "$BENCH_DB" -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'DO \$\$ BEGIN FOR i IN 1 .. 60000 LOOP%' AND datname = '$BENCH_DB'" >/dev/null
  for c in "${pids[@]}"; do wait "$c" 2>/dev/null; done
  {
    echo
    echo 'Per call in one session (`psql -f bench/partitions.sql` in the same run: PL/pgSQL loops, median of 5 rounds of 2000 calls; the server'"'"'s work only, no round trip or output):'
    echo
    echo '```'
    sed -n '/^what/,/rows)/p' "$OUT/partitions.session.txt"
    echo '```'
  } >>"$OUT/partitions.table.md"
  section_block partitions "Partition groups: coord.owned and group claims, $BENCH_CLIENTS clients" \
"Configurations: *lock-table read* = \`SELECT pg_try_advisory_lock(k) AND
pg_advisory_unlock(k)\` (one statement, one round trip, one lock-manager lookup
of a key: the baseline the issue names for \`coord.owned\`); *coord.owned, 1
member* = \`SELECT coord.owned(g)\`, each client the only member of its own
group of 1024 segments (so each answer is an array of 1024 integers, about
5 kB of text); *cardinality(coord.owned)* = the same call with only the
count sent back (the server's work of coord.owned without shipping its
answer); *4 members* = every client a member of one group (each
call also probes the 3 other members' locks); *claim* = \`coord.claim('bq')\`
then \`coord.complete\` (two statements); *group claim* = the same with
\`partition_group\`, each client the only member of its own group (it owns
every segment: the same jobs, plus the group's sync).  Jobs: 60,000 queued
before each claim run.  Measures as in the lock section: calls/s (script runs;
a claim + complete is one) and CPU µs per call (server backends plus pgbench)." \
    "${BENCH_KNOBS}BENCH_SECTIONS=partitions make bench" "$load_start"
  write_block partitions "$OUT/partitions.md"
  cp "$OUT/partitions.md" "$OUT/$STAMP/"
  cat "$OUT/partitions.table.md"
}

# Flow control (issue 17): claim + complete in a queue with no limit
# against queues with a per-key concurrency limit (2 per key, 100 keys, the
# keys' jobs interleaved) and a per-key rate limit (100 keys, 1,000,000 per
# second each: the bucket is read and written, never empty).  Target: the
# per-key concurrency limit at least 0.8x the unlimited claim.
LIMITS_SPEC='unl|coord.claim + complete, no limit|1 job/claim, 4 workers|-|count
key|coord.claim + complete, per-key concurrency 2 over 100 keys|1 job/claim, 4 workers|unl|count|0.8
rate|coord.claim + complete, per-key rate limit over 100 keys|1 job/claim, 4 workers|unl|count'
LIMITS_BACKLOG=${LIMITS_BACKLOG:-30000}

# limits_fill QUEUE N KEYED: tops QUEUE up to N ready jobs, with limit_key
# k0 .. k99 round robin when KEYED.
limits_fill() {
  local queue=$1 n=$2 keyed=$3
  psql -qX -v ON_ERROR_STOP=1 -d "$BENCH_DB" <<SQL >/dev/null || return 1
DO \$\$
DECLARE have bigint;
BEGIN
  SELECT count(*) INTO have FROM coord.job WHERE queue = '$queue';
  PERFORM coord.enqueue('$queue', jsonb_build_object('i', g),
                        limit_key => CASE WHEN $keyed THEN 'k' || (g % 100) END)
     FROM generate_series(1, greatest($n - have, 0)) g;
END \$\$;
VACUUM ANALYZE coord.job;
CHECKPOINT;
SQL
}

prerun_limits() {
  case $1 in
    unl)  limits_fill lu "$LIMITS_BACKLOG" false ;;
    key)  limits_fill lk "$LIMITS_BACKLOG" true ;;
    rate) limits_fill lr "$LIMITS_BACKLOG" true ;;
  esac
}

bench_limits() {
  local load_start
  load_start=$(cut -d' ' -f1 /proc/loadavg)
  log "== limits: $((3 * BENCH_RUNS)) runs of ${BENCH_DURATION} s"
  psql -qX -v ON_ERROR_STOP=1 -d "$BENCH_DB" \
    -c "SELECT coord.set_limit('lk', concurrency => 2, per_key => true)" \
    -c "SELECT coord.set_limit('lr', rate => 1000000, per_key => true)" >/dev/null || return 1
  COUNT_SQL[unl]="SELECT count(*) FROM coord.job_history WHERE queue = 'lu' AND state = 'done'"
  COUNT_SQL[key]="SELECT count(*) FROM coord.job_history WHERE queue = 'lk' AND state = 'done'"
  COUNT_SQL[rate]="SELECT count(*) FROM coord.job_history WHERE queue = 'lr' AND state = 'done'"
  run_section limits unl:limits-claim-unl.sql key:limits-claim-key.sql rate:limits-claim-rate.sql
  summarize limits "$LIMITS_SPEC" job "per-key concurrency limit at least 0.8× the unlimited claim" >/dev/null
  section_block limits "Flow control: claim + complete with and without per-key limits" \
"Three queues of $LIMITS_BACKLOG ready jobs each (topped up before every run, then
VACUUM ANALYZE and CHECKPOINT): *lu* without a limit; *lk* with
\`coord.set_limit('lk', concurrency => 2, per_key => true)\` and jobs of 100
limit_keys k0 .. k99, round robin; *lr* with \`coord.set_limit('lr', rate =>
1000000, per_key => true)\` (every claim reads and writes its key's bucket,
which never runs dry) and the same keys.  Each worker claims one job and
completes it, two transactions (bench/limits-claim-*.sql).  A limited claim
takes its key's transaction lock, reads the key's slots (lk: two index
lookups per slot) or refills its bucket (lr), and overwrites the slot it
takes (a HOT update); the completion writes nothing for it.  Target (issue
17): lk at least 0.8× lu." \
    "${BENCH_KNOBS}BENCH_SECTIONS=limits make bench" "$load_start"
  write_block limits "$OUT/limits.md"
  cp "$OUT/limits.md" "$OUT/$STAMP/"
  cat "$OUT/limits.table.md"
}

FENCE_SPEC='raw|INSERT, unchecked|per client|-|pair
ok-distinct|INSERT ... WHERE coord.fence_ok|a path per client|raw|pair
ok-shared|INSERT ... WHERE coord.fence_ok|one path, 4 writers|raw|pair'

# fence_wal CONFIG: "- CONFIG: N bytes, M MultiXacts" for 4,000 writes per client
fence_wal() {
  local l0 l1 m0 m1 n=4000
  psql -qXAt -d "$BENCH_DB" -c "CHECKPOINT" >/dev/null
  read -r l0 m0 < <(psql -qXAt -F' ' -d "$BENCH_DB" \
    -c "SELECT pg_current_wal_insert_lsn(), (SELECT next_multixact_id FROM pg_control_checkpoint())")
  "$PGBENCH" -n -M prepared -c "$BENCH_CLIENTS" -j "$BENCH_THREADS" -t $n \
    -f "$BENCH_DIR/fence-$1.sql" "$BENCH_DB" >"$OUT/$STAMP/fence-wal-$1.log" 2>&1 || return 1
  psql -qXAt -d "$BENCH_DB" -c "CHECKPOINT" >/dev/null
  read -r l1 m1 < <(psql -qXAt -F' ' -d "$BENCH_DB" \
    -c "SELECT pg_current_wal_insert_lsn(), (SELECT next_multixact_id FROM pg_control_checkpoint())")
  echo "- $1: $(psql -qXAt -d "$BENCH_DB" -c "SELECT round(pg_wal_lsn_diff('$l1', '$l0') / ($n * $BENCH_CLIENTS))") bytes, $((m1 - m0)) MultiXacts"
}

bench_fence() {
  local load_start c
  load_start=$(cut -d' ' -f1 /proc/loadavg)
  log "== fence: $((3 * BENCH_RUNS)) runs of ${BENCH_DURATION} s"
  psql -qX -v ON_ERROR_STOP=1 -d "$BENCH_DB" \
    -c "CREATE TABLE bench_fence_tok (k integer PRIMARY KEY, path text, token bigint)" \
    -c "CREATE TABLE bench_fence_log (id bigserial PRIMARY KEY, k integer, at timestamptz DEFAULT now())
          WITH (autovacuum_enabled = off)" \
    -c "SELECT coord.lock('/bfence-shared')" \
    -c "INSERT INTO bench_fence_tok SELECT -1, '/bfence-shared', coord.fence('/bfence-shared')" >/dev/null || return 1
  for c in $(seq 0 $((BENCH_CLIENTS - 1))); do
    psql -qX -v ON_ERROR_STOP=1 -d "$BENCH_DB" -c "SELECT coord.lock('/bfence$c')" \
      -c "INSERT INTO bench_fence_tok SELECT $c, '/bfence$c', coord.fence('/bfence$c')" >/dev/null || return 1
  done
  run_section fence raw:fence-raw.sql ok-distinct:fence-ok-distinct.sql ok-shared:fence-ok-shared.sql
  summarize fence "$FENCE_SPEC" write "-" >/dev/null
  # WAL and MultiXacts per write: a fixed number of writes between two checkpoints
  {
    echo
    echo "WAL bytes per write (4,000 writes per client between two CHECKPOINTs, so full-page images are a few bytes of it; MultiXacts created):"
    for c in raw ok-distinct ok-shared; do
      fence_wal "$c" || return 1
    done
  } >>"$OUT/fence.table.md"
  section_block fence "Fencing: a write guarded by coord.fence_ok, $BENCH_CLIENTS clients" \
"Each script run is one autocommit INSERT of a row into bench_fence_log
(bigserial key) selected from bench_fence_tok, the table of the clients'
paths and tokens (bench/fence-*.sql).  *unchecked* = the row of this
client, as is; *a path per client* = the same plus \`coord.fence_ok(path,
token)\` of the client's own path (/bfence0 ...), whose token was issued by
\`coord.fence\` once, before the runs; *one path, 4 writers* = every client
writes under the token of /bfence-shared (one holder's connection pool).
Since issue 24 a true \`fence_ok\` locks the path's row of coord.fences FOR
SHARE until the writer commits (a WAL record and a dirtied page per write;
overlapping writers of one path share the lock through a MultiXact), so
that \`coord.fence\` waits for the guarded writes; before, it was a plain
read.  Measures as in the lock section: writes/s and CPU µs per write." \
    "${BENCH_KNOBS}BENCH_SECTIONS=fence make bench" "$load_start"
  write_block fence "$OUT/fence.md"
  cp "$OUT/fence.md" "$OUT/$STAMP/"
  cat "$OUT/fence.table.md"
}

# Workflows (issue 27): enqueue with after of one parent against a plain
# enqueue (at most 1.2x: throughput ratio at least 0.83); claim + complete
# with 1,000,000 waiting jobs (coord.job_wait) in the claimed queue against
# none (within 5%); a parent with 1,000 waiting children finished while 4
# workers claim other jobs; coord.await's wake-up against LISTEN/NOTIFY's.
WORKFLOWS_SPEC='enq|coord.enqueue|1 job/xact, 4 clients|-|pair
enq-after|coord.enqueue, after => one live parent|a parent per client|enq|pair|0.833
enq-done|coord.enqueue, after => one finished parent|one parent, all clients|enq|pair
claim-none|coord.claim + complete, no waiting jobs|1 job/claim, 4 workers|-|count
claim-wait|coord.claim + complete, WF_BACKLOG waiting jobs in the same queue|1 job/claim, 4 workers|claim-none|count|0.95'
WF_BACKLOG=${WF_BACKLOG:-1000000}
WF_CHILDREN=${WF_CHILDREN:-1000}
WF_AWAIT_RUNS=${WF_AWAIT_RUNS:-200}

prerun_workflows() {
  case $1 in
    enq*)
      psql -qX -v ON_ERROR_STOP=1 -d "$BENCH_DB" >/dev/null <<'SQL' || return 1
DELETE FROM coord.job_dep AS d USING coord.job_wait AS w WHERE w.id = d.child AND w.queue = 'we';
DELETE FROM coord.job_dep AS d USING coord.job AS j WHERE j.id = d.child AND j.queue = 'we';
DELETE FROM coord.job_wait WHERE queue = 'we';
DELETE FROM coord.job WHERE queue = 'we';
VACUUM ANALYZE coord.job;
VACUUM ANALYZE coord.job_wait;
VACUUM ANALYZE coord.job_dep;
CHECKPOINT;
SQL
      ;;
    claim*)
      psql -qX -v ON_ERROR_STOP=1 -d "$BENCH_DB" >/dev/null <<'SQL' || return 1
SELECT count(*) FROM generate_series(1, ceil(greatest(50000 - (SELECT count(*) FROM coord.job WHERE queue = 'q'), 0) / 1000.0)::int) AS i,
  LATERAL coord.enqueue_many('q', array_fill(jsonb_build_object('i', i), ARRAY[1000])) AS e;
VACUUM ANALYZE coord.job;
VACUUM ANALYZE coord.job_history;
CHECKPOINT;
SQL
      ;;
  esac
}

# wf_release ROUND: a parent with WF_CHILDREN waiting children is finished
# while 4 pgbench workers claim + complete jobs of queue q; appends "round
# ms ready_after q_jobs_finished_meanwhile pgbench_tps" to workflows-release.tsv.
wf_release() {
  local r=$1 log=$OUT/$STAMP/workflows-release-$1 pid out
  psql -qXAt -v ON_ERROR_STOP=1 -d "$BENCH_DB" >/dev/null <<SQL || return 1
SELECT coord.enqueue('wrp', '{}');
SELECT count(*) FROM coord.enqueue_many('wrc$r', array_fill('{}'::jsonb, ARRAY[$WF_CHILDREN]),
  after => ARRAY[(SELECT max(id) FROM coord.job WHERE queue = 'wrp')]);
VACUUM ANALYZE coord.job_wait;
SQL
  "$PGBENCH" -n -M prepared -c 4 -j "$BENCH_THREADS" -T 6 -f "$BENCH_DIR/jobs-claim-coord.sql" "$BENCH_DB" >"$log.pgbench" 2>&1 &
  pid=$!
  sleep 3
  out=$(psql -qXAt -F ' ' -v ON_ERROR_STOP=1 -d "$BENCH_DB" <<SQL | tail -1
SELECT id AS pid, token AS ptoken FROM coord.claim('wrp', 1, '1 hour') \gset
SELECT clock_timestamp() AS t0 \gset
SELECT coord.complete(:pid, :ptoken) \gset
SELECT clock_timestamp() AS t1 \gset
SELECT round(extract(epoch FROM (:'t1'::timestamptz - :'t0'::timestamptz)) * 1000, 1),
       (SELECT count(*) FROM coord.job WHERE queue = 'wrc$r'),
       (SELECT count(*) FROM coord.job_wait WHERE queue = 'wrc$r');
SQL
) || { wait "$pid"; return 1; }
  wait "$pid" || { log "pgbench failed during the release; see $log.pgbench"; return 1; }
  set -- $out
  [ "$2" = "$WF_CHILDREN" ] && [ "$3" = 0 ] || { log "release round $r: $2 children ready, $3 still waiting"; return 1; }
  # jobs of q other workers finished while the completing statement ran
  out="$1 $2 $(psql -qXAt -d "$BENCH_DB" -c "SELECT count(*) FROM coord.job_history WHERE queue = 'q' AND state = 'done'
      AND finished_at BETWEEN (SELECT finished_at FROM coord.job_history WHERE queue = 'wrp' ORDER BY id DESC LIMIT 1)
                          AND (SELECT finished_at FROM coord.job_history WHERE queue = 'wrp' ORDER BY id DESC LIMIT 1) + interval '1 millisecond' * $1") $(sed -n 's/^tps = \([0-9.]*\) (without.*/\1/p' "$log.pgbench")"
  printf '%s %s\n' "$r" "$out" >>"$OUT/workflows-release.tsv"
  log "  release round $r: $WF_CHILDREN children ready in $1 ms; q jobs finished meanwhile: $(echo "$out" | cut -d' ' -f3)"
}

bench_workflows() {
  local load_start pbase n pdone r t0
  load_start=$(cut -d' ' -f1 /proc/loadavg)
  log "== workflows: $((5 * BENCH_RUNS)) runs of ${BENCH_DURATION} s, a backlog of $WF_BACKLOG waiting jobs, $BENCH_RUNS releases, $WF_AWAIT_RUNS await wake-ups"
  # parents: one live job per client (each already with a child, so marked as
  # a parent, as in steady use) and one finished job
  psql -qXAt -v ON_ERROR_STOP=1 -d "$BENCH_DB" >/dev/null <<SQL || return 1
SELECT count(*) FROM coord.enqueue_many('wp', array_fill('{}'::jsonb, ARRAY[$BENCH_CLIENTS]));
SELECT count(coord.enqueue('wc', '{}', after => ARRAY[id])) FROM coord.job WHERE queue = 'wp';
SELECT coord.enqueue('wpd', '{}');
SELECT count(coord.complete(id, token)) FROM coord.claim('wpd');
SQL
  read -r pbase n pdone < <(psql -qXAt -F ' ' -v ON_ERROR_STOP=1 -d "$BENCH_DB" -c "
SELECT min(id), max(id) - min(id) + 1, (SELECT id FROM coord.job_history WHERE queue = 'wpd')
  FROM coord.job WHERE queue = 'wp'")
  [ "$n" = "$BENCH_CLIENTS" ] || { log "workflows: parents $pbase.. not consecutive ($n)"; return 1; }
  CONFIG_OPTS[enq-after]="-D pbase=$pbase"
  CONFIG_OPTS[enq-done]="-D pdone=$pdone"
  COUNT_SQL[claim-none]="SELECT count(*) FROM coord.job_history WHERE queue = 'q' AND state = 'done'"
  COUNT_SQL[claim-wait]=${COUNT_SQL[claim-none]}
  # warm-up: both kinds of runs once (the first claim run after the fill ran
  # at a third of the later ones' rate)
  prerun_workflows claim-none || return 1
  "$PGBENCH" -n -M prepared -c "$BENCH_CLIENTS" -j "$BENCH_THREADS" -T 3 -D pbase="$pbase" -D pdone="$pdone" \
    -f "$BENCH_DIR/workflows-enq.sql" -f "$BENCH_DIR/workflows-enqafter.sql" -f "$BENCH_DIR/workflows-enqdone.sql" \
    -f "$BENCH_DIR/jobs-claim-coord.sql" "$BENCH_DB" >"$OUT/$STAMP/workflows-warmup.log" 2>&1
  run_section workflows enq:workflows-enq.sql enq-after:workflows-enqafter.sql enq-done:workflows-enqdone.sql \
    claim-none:jobs-claim-coord.sql
  cp "$OUT/workflows.tsv" "$OUT/workflows-a.tsv"
  # the waiting backlog: WF_BACKLOG jobs of queue q after a live parent that
  # never ends, by enqueue_many (10,000 a call, one transaction)
  t0=$(date +%s.%N)
  psql -qX -v ON_ERROR_STOP=1 -d "$BENCH_DB" >/dev/null <<SQL || return 1
SELECT coord.enqueue('wbp', '{}');
SELECT count(*) FROM generate_series(1, $((WF_BACKLOG / 10000))) AS i,
  LATERAL coord.enqueue_many('q', array_fill(jsonb_build_object('i', i), ARRAY[10000]),
                             after => ARRAY[(SELECT id FROM coord.job WHERE queue = 'wbp')]) AS e;
VACUUM ANALYZE coord.job_wait;
VACUUM ANALYZE coord.job_dep;
SQL
  WF_BACKLOG_S=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.0f", b - a}')
  log "  backlog: $(psql -qXAt -d "$BENCH_DB" -c "SELECT count(*) FROM coord.job_wait WHERE queue = 'q'") waiting jobs in ${WF_BACKLOG_S} s"
  run_section workflows claim-wait:jobs-claim-coord.sql
  cat "$OUT/workflows-a.tsv" "$OUT/workflows.tsv" >"$OUT/workflows-b.tsv" && mv "$OUT/workflows-b.tsv" "$OUT/workflows.tsv"
  cp "$OUT/workflows.tsv" "$OUT/$STAMP/workflows.tsv"
  summarize workflows "${WORKFLOWS_SPEC//WF_BACKLOG/$(printf "%'d" "$WF_BACKLOG")}" job \
    "issue 27: enqueue with after at most 1.2× a plain enqueue (throughput ratio ≥ 0.83); claims with the waiting backlog within 5% of none (≥ 0.95)" >/dev/null
  rm -f "$OUT/workflows-release.tsv"
  for r in $(seq "$BENCH_RUNS"); do wf_release "$r" || return 1; done
  PGDATABASE=$BENCH_DB "$PYTHON" "$BENCH_DIR/await_notify.py" "$WF_AWAIT_RUNS" aw >"$OUT/$STAMP/workflows-await.txt" ||
    { log "await_notify.py failed"; return 1; }
  "$PYTHON" - "$OUT/workflows-release.tsv" "$OUT/$STAMP/workflows-await.txt" "$WF_CHILDREN" >>"$OUT/workflows.table.md" <<'PY'
import sys, statistics
rel = [l.split() for l in open(sys.argv[1]) if l.strip()]
ms = [float(r[1]) for r in rel]
print()
print(f"Release of {int(sys.argv[3]):,} waiting children: one `coord.complete` of their parent, while 4 pgbench workers claim + complete jobs of queue q:")
print()
print("| round | completing statement, ms | children ready after it | q jobs other workers finished during it | workers' claims + completes/s over their 6 s run |")
print("|---|---|---|---|---|")
for r in rel:
    print(f"| {r[0]} | {float(r[1]):.1f} | {int(r[2]):,} | {int(r[3]):,} | {float(r[4]):,.0f} |")
print()
print(f"Median {statistics.median(ms):.1f} ms; every round made all children ready in that one statement, "
      f"and other workers' claims went on meanwhile in {sum(1 for r in rel if int(r[3]) > 0)} of {len(rel)} rounds.")
def pct(v, p):
    v = sorted(v); k = (len(v) - 1) * p / 100; f = int(k)
    return v[f] + (v[min(f + 1, len(v) - 1)] - v[f]) * (k - f)
lat = {}
for l in open(sys.argv[2]):
    k, v = l.split()
    lat.setdefault(k, []).append(float(v))
print()
print("Wake-up latency (bench/await_notify.py; ms from the finisher's COMMIT sent to the waiter's wake-up, client clock; finisher with synchronous_commit off; the two kinds alternate):")
print()
print("| waiter | runs | p50 ms | p90 ms | p99 ms | max ms |")
print("|---|---|---|---|---|---|")
names = {"await": "coord.await(id, '10 seconds')", "notify": "LISTEN + select(), NOTIFY in the finishing transaction"}
for k in ("await", "notify"):
    v = lat[k]
    print(f"| {names[k]} | {len(v)} | {pct(v, 50):.2f} | {pct(v, 90):.2f} | {pct(v, 99):.2f} | {max(v):.2f} |")
a, n = lat["await"], lat["notify"]
print()
print(f"Target (coord.await wakes within 10 ms of the finishing commit): p99 {pct(a, 99):.2f} ms, "
      f"{'met' if pct(a, 99) <= 10 else 'NOT met'}; LISTEN/NOTIFY on the same machine and run: p99 {pct(n, 99):.2f} ms.")
PY
  section_block workflows "Workflows (issue 27): enqueue with after, a waiting backlog, a release of $(printf "%'d" "$WF_CHILDREN") children, await wake-ups" \
"Configurations: *coord.enqueue* = \`coord.enqueue('we', '{\"x\":1}')\`; *after
=> one live parent* = the same with \`after => ARRAY[p]\`, p a job queued in
another queue, one per client (each already has a child, so it is marked as
a parent: the steady case; the enqueue locks it FOR KEY SHARE and writes the
job into coord.job_wait and an edge into coord.job_dep); *after => one
finished parent* = p a job completed before the runs (the child goes straight
into coord.job, with an edge marked ended).  Before each enqueue run the 'we'
jobs and their edges are deleted, then VACUUM ANALYZE and CHECKPOINT.
*claim + complete* = bench/jobs-claim-coord.sql on queue q (topped up to
50,000 ready jobs before each run); *with waiting jobs* = the same after
$(printf "%'d" "$WF_BACKLOG") jobs of queue q were enqueued with after of a parent that
never ends (\`enqueue_many\`, 10,000 per call, one statement: ${WF_BACKLOG_S:-?} s, then
VACUUM ANALYZE).  The claim runs without the backlog ran interleaved with the
enqueue runs, before the backlog was made; the runs with it after, so their
per-round ratios compare runs a few minutes apart.  Measures: jobs/s and CPU
µs per job (server backends plus pgbench).  Instructions per enqueue, which
do not move with the machine's load, are in the notes below
(bench/callgrind.sh)." \
    "${BENCH_KNOBS}BENCH_SECTIONS=workflows make bench" "$load_start"
  write_block workflows "$OUT/workflows.md"
  cp "$OUT/workflows.md" "$OUT/$STAMP/"
  cat "$OUT/workflows.table.md"
}

# Issue 28: the client libraries against hand-written loops (the header
# says the scripts' output convention).
bench_clients() {
  local load_start t0 lang script ran=()
  load_start=$(cut -d' ' -f1 /proc/loadavg)
  t0=$(date -u '+%Y-%m-%d %H:%M')
  for lang in python node; do
    script=$BENCH_DIR/clients/$lang.sh
    [ -f "$script" ] || { log "== clients: no bench/clients/$lang.sh, skipped"; continue; }
    log "== clients: bench/clients/$lang.sh (${CLIENTS_ROUNDS:-5} rounds)"
    if ! PGDATABASE=$BENCH_DB CLIENTS_ROUNDS=${CLIENTS_ROUNDS:-5} bash "$script" \
        >"$OUT/$STAMP/clients-$lang.txt" 2>"$OUT/$STAMP/clients-$lang.err"; then
      log "bench/clients/$lang.sh failed; see $OUT/$STAMP/clients-$lang.err"
      tail -5 "$OUT/$STAMP/clients-$lang.err" >&2
      return 1
    fi
    ran+=("$lang")
  done
  [ ${#ran[@]} -gt 0 ] || { log "clients: no script ran"; return 1; }
  "$PYTHON" - "$OUT/$STAMP" "${ran[@]}" >"$OUT/clients.table.md" <<'PY'
import re, statistics, sys
out, langs = sys.argv[1], sys.argv[2:]
num = re.compile(r"^-?[0-9]+(\.[0-9]+)?$")
for lang in langs:
    ratios, runs, order = [], {}, []
    for line in open(f"{out}/clients-{lang}.txt"):
        f = line.rstrip("\n").split("|")
        if f[0] == "ratio" and len(f) >= 5:
            ratios.append((f[1], f[2], f[3], "|".join(f[4:])))
        elif len(f) >= 3 and num.match(f[1]) and num.match(f[2]):
            if f[0] not in runs:
                order.append(f[0])
            extra = [float(x) for x in f[3:5] if num.match(x)]
            runs.setdefault(f[0], []).append((float(f[1]), float(f[2]), extra))
    if not ratios:   # by name: X-anything against X-hand
        for s in order:
            base = s.rsplit("-", 1)[0] + "-hand"
            if s != base and base in runs:
                ratios.append((s, base, "", f"{s} against {base}"))
    med = lambda v: statistics.median(v)
    print(f"### {lang}")
    print()
    print("| side | rounds | jobs/s: median (min–max) | CPU µs per job: median (min–max) | of which client / server (medians) |")
    print("|---|---|---|---|---|")
    for s in order:
        v = runs[s]
        t, c = [r[0] for r in v], [r[1] for r in v]
        split = "–"
        if all(len(r[2]) == 2 for r in v):
            split = f"{med([r[2][0] for r in v]):.0f} / {med([r[2][1] for r in v]):.0f}"
        print(f"| {s} | {len(v)} | {med(t):,.0f} ({min(t):,.0f}–{max(t):,.0f}) | {med(c):.0f} ({min(c):.0f}–{max(c):.0f}) | {split} |")
    print()
    print("| comparison | side / baseline | jobs/s ratio: median of the rounds' (min–max); of the medians | CPU per job ratio: median of the rounds' (min–max); of the medians | target (jobs/s ratio, median of the rounds') |")
    print("|---|---|---|---|---|")
    verdicts = []
    for s, b, target, text in ratios:
        if s not in runs or b not in runs:
            continue
        vs, vb = runs[s], runs[b]
        per = [x[0] / y[0] for x, y in zip(vs, vb)]
        cper = [x[1] / y[1] for x, y in zip(vs, vb)]
        # a side and its baseline run next to each other in every round, so
        # the median of the rounds' ratios is the steadier estimate
        r, cr = med(per), med(cper)
        rm = med([x[0] for x in vs]) / med([y[0] for y in vb])
        crm = med([x[1] for x in vs]) / med([y[1] for y in vb])
        verdict = "–"
        if target:
            ok = r >= float(target)
            verdict = f"≥ {float(target):.2f}: {'met' if ok else 'NOT met'}"
            verdicts.append(f"{text}: {r:.2f} against at least {float(target):.2f}, {'met' if ok else 'NOT met'} "
                            f"(rounds {min(per):.2f}–{max(per):.2f}, of the medians {rm:.2f}; CPU per job {cr:.2f}×)")
        print(f"| {text} | {s} / {b} | {r:.2f} ({min(per):.2f}–{max(per):.2f}); {rm:.2f} "
              f"| {cr:.2f} ({min(cper):.2f}–{max(cper):.2f}); {crm:.2f} | {verdict} |")
    print()
    for v in verdicts:
        print(f"Target ({lang}): {v}.")
        print()
PY
  SECTION_T0=$t0
  {
    echo "## Client libraries against hand-written loops (issue 28)"
    echo
    echo "Each library's worker and enqueue beside a hand-written loop in the same
language sending the same SQL, on the bench cluster, one process at a time
(bench/clients/<language>.sh; what each side sends is in the header of
bench/clients/python.py and of the Node script).  Sides alternate from round
to round; a side's round is one process finishing a fresh backlog (or
enqueueing) of a fixed number of jobs.  Throughput of one synchronous-commit
client is mostly commit latency on this machine, so CPU per job (client
process + its server backend, from /proc) is the steadier figure."
    echo
    echo "- date: $t0 – $(date -u '+%H:%M') UTC"
    machine_info | grep -v '^- client:'
    echo "- clients: $("$PYTHON" --version 2>&1), psycopg $("$PYTHON" -c 'import psycopg; print(psycopg.__version__, psycopg.pq.__impl__)' 2>/dev/null) (Debian's); node $(node --version 2>/dev/null || echo absent); over the cluster's unix socket"
    echo "- command: \`${CLIENTS_ROUNDS:+CLIENTS_ROUNDS=$CLIENTS_ROUNDS }BENCH_SECTIONS=clients make bench\` (${CLIENTS_ROUNDS:-5} rounds; raw lines in bench/out/<stamp>/clients-<language>.txt)"
    echo "- load average (1 min) at start / end of the section: $load_start / $(cut -d' ' -f1 /proc/loadavg); other busy processes at the end: $(busy_processes)"
    echo
    cat "$OUT/clients.table.md"
  } >"$OUT/clients.md"
  write_block clients "$OUT/clients.md"
  cp "$OUT/clients.md" "$OUT/$STAMP/"
  cat "$OUT/clients.table.md"
}

# Metrics (issue 29): coord.metrics with a million live jobs in 1,000 queues
# answers in under 100 ms without a scan of coord.job, and a read every 5 s
# lowers claim + complete throughput by at most 2%.
METRICS_SPEC='claim|coord.claim + coord.complete, no reader|1 job/claim, 4 workers|-|count
claim-scrape|coord.claim + coord.complete, coord.metrics read every METRICS_SCRAPE_EVERY s|1 job/claim, 4 workers|claim|count|0.98'
METRICS_JOBS=${METRICS_JOBS:-1000000}
METRICS_QUEUES=${METRICS_QUEUES:-1000}
METRICS_READS=${METRICS_READS:-9}
METRICS_BACKLOG=${METRICS_BACKLOG:-100000}
METRICS_SCRAPE_EVERY=${METRICS_SCRAPE_EVERY:-5}
METRICS_DURATION=${METRICS_DURATION:-20}
METRICS_RUNS=${METRICS_RUNS:-4}
METRICS_SCRAPER=
METRICS_READ_SQL='SELECT metric, labels, value, kind, help FROM coord.metrics'

# metrics_read_ms N: N reads of the whole view in one session (every row
# fetched, as a scrape does), one line of milliseconds each, as psql times them.
metrics_read_ms() {
  local i
  { echo '\timing on'; echo '\o /dev/null'
    for i in $(seq "$1"); do echo "$METRICS_READ_SQL;"; done; } |
    psql -qX -v ON_ERROR_STOP=1 -d "$BENCH_DB" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p'
}

# The reader of a claim-scrape run: a read every METRICS_SCRAPE_EVERY s for
# the run's BENCH_DURATION s, the first a second in; each read's ms appended
# to metrics-scrapes.txt.
metrics_scraper() {
  local end=$((SECONDS + BENCH_DURATION))
  sleep 1
  while [ $SECONDS -lt $end ]; do
    metrics_read_ms 1 >>"$OUT/$STAMP/metrics-scrapes.txt"
    sleep "$METRICS_SCRAPE_EVERY"
  done
}

prerun_metrics() {
  [ -n "$METRICS_SCRAPER" ] && { wait "$METRICS_SCRAPER"; METRICS_SCRAPER=; }
  psql -qX -v ON_ERROR_STOP=1 -d "$BENCH_DB" >/dev/null <<SQL || return 1
SELECT count(*) FROM generate_series(1, ceil(greatest($METRICS_BACKLOG - (SELECT count(*) FROM coord.job WHERE queue = 'q'), 0) / 1000.0)::int) AS i,
  LATERAL coord.enqueue_many('q', array_fill(jsonb_build_object('i', i), ARRAY[1000])) AS e;
SELECT coord.tick();
VACUUM ANALYZE coord.job;
VACUUM ANALYZE coord.job_history;
CHECKPOINT;
SQL
  case $1 in
    claim-scrape) metrics_scraper & METRICS_SCRAPER=$! ;;
  esac
}

bench_metrics() {
  local load_start t0 fill_s tick_ms reads live_ms plans seqjob jobscans nested extra series
  local BENCH_DURATION=$METRICS_DURATION BENCH_RUNS=$METRICS_RUNS
  load_start=$(cut -d' ' -f1 /proc/loadavg)
  log "== metrics: $METRICS_JOBS jobs in $METRICS_QUEUES queues, $METRICS_READS reads, $((2 * BENCH_RUNS)) runs of ${BENCH_DURATION} s"
  # the jobs: enqueue_many per queue, every tenth queue's an hour ahead
  t0=${EPOCHREALTIME/./}
  psql -qX -v ON_ERROR_STOP=1 -d "$BENCH_DB" >/dev/null <<SQL || return 1
SELECT count(*) FROM generate_series(0, $METRICS_QUEUES - 1) AS i,
  LATERAL coord.enqueue_many('mq' || i, array_fill('{}'::jsonb, ARRAY[$((METRICS_JOBS / METRICS_QUEUES))]),
                             run_at => CASE WHEN i % 10 = 9 THEN now() + interval '1 hour' END) AS e;
VACUUM ANALYZE coord.job;
CHECKPOINT;
SQL
  fill_s=$(( (${EPOCHREALTIME/./} - t0) / 1000000 ))
  log "  $METRICS_JOBS jobs enqueued in $fill_s s"
  prerun_metrics fill || return 1
  # the tick takes the per-queue counts (the one in prerun did; this one,
  # timed, again) and the view reads them
  tick_ms=$(psql -qXAt -d "$BENCH_DB" -c "UPDATE coord.metrics_state SET counted_at = NULL" \
    -c '\timing on' -c "SELECT coord.tick()" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1)
  [ "$(psql -qXAt -d "$BENCH_DB" -c "SELECT large FROM coord.metrics_state")" = t ] ||
    { log "metrics: the tick did not switch coord.metrics to its counts"; return 1; }
  series=$(psql -qXAt -d "$BENCH_DB" -c "SELECT count(*) FROM coord.metrics")
  metrics_read_ms 2 >/dev/null   # warm-up
  reads=$(metrics_read_ms "$METRICS_READS" | tr '\n' ' ')
  log "  $series series; reads (ms): $reads"
  # the plans of every statement of a read, the nested ones (those the
  # per-queue function runs) included
  plans=$OUT/$STAMP/metrics-plans.txt
  psql -qX -v ON_ERROR_STOP=1 -d "$BENCH_DB" >"$plans" 2>&1 <<SQL || { log "metrics: auto_explain failed, see $plans"; return 1; }
LOAD 'auto_explain';
SET auto_explain.log_min_duration = 0;
SET auto_explain.log_nested_statements = on;
SET auto_explain.log_analyze = on;
SET auto_explain.log_timing = off;
SET auto_explain.log_level = notice;
SET client_min_messages = notice;
SELECT count(*) FROM coord.metrics;
SQL
  nested=$(grep -c 'Query Text:' "$plans")
  seqjob=$(grep -E 'Seq Scan on job( |$)' "$plans" | sed 's/^[ >-]*//' | sort | uniq -c | sed 's/^ *//' | paste -sd ';' -)
  jobscans=$(grep -E ' on job [a-z_0-9]+ ' "$plans" | sed -e 's/^[ >-]*//' -e 's/  (cost=[^)]*)//' | sort | uniq | paste -sd ';' -)
  # one read counting the live jobs instead (as below 50,000 of them)
  live_ms=$(psql -qXAt -d "$BENCH_DB" -c "UPDATE coord.metrics_state SET large = false" -c '\timing on' \
    -c '\o /dev/null' -c "$METRICS_READ_SQL" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1)
  psql -qXAt -d "$BENCH_DB" -c "UPDATE coord.metrics_state SET large = true" >/dev/null
  log "  plans: $nested statements, Seq Scan on coord.job: ${seqjob:-none}; a read counting the live jobs: $live_ms ms"

  COUNT_SQL[claim]="SELECT count(*) FROM coord.job_history WHERE queue = 'q' AND state = 'done'"
  COUNT_SQL[claim-scrape]=${COUNT_SQL[claim]}
  rm -f "$OUT/$STAMP/metrics-scrapes.txt"
  # a warm-up run (the first claim run after the fill is the fastest), then
  # the rounds in A B, B A order: the runs slow down as the history grows,
  # and neither side should always come second
  prerun_metrics warmup || return 1
  "$PGBENCH" -n -M prepared -c "$BENCH_CLIENTS" -j "$BENCH_THREADS" -T 5 -f "$BENCH_DIR/jobs-claim-coord.sql" \
    "$BENCH_DB" >"$OUT/$STAMP/metrics-warmup.log" 2>&1
  local round
  rm -f "$OUT/metrics.tsv"
  SECTION_T0=$(date -u '+%Y-%m-%d %H:%M')
  for round in $(seq "$BENCH_RUNS"); do
    if [ $((round % 2)) = 1 ]; then
      run_config metrics claim "$round" jobs-claim-coord.sql
      run_config metrics claim-scrape "$round" jobs-claim-coord.sql
    else
      run_config metrics claim-scrape "$round" jobs-claim-coord.sql
      run_config metrics claim "$round" jobs-claim-coord.sql
    fi
  done
  cp "$OUT/metrics.tsv" "$OUT/$STAMP/metrics.tsv"
  [ -n "$METRICS_SCRAPER" ] && { wait "$METRICS_SCRAPER"; METRICS_SCRAPER=; }
  summarize metrics "${METRICS_SPEC//METRICS_SCRAPE_EVERY/$METRICS_SCRAPE_EVERY}" job \
    "issue 29, a read of coord.metrics every ${METRICS_SCRAPE_EVERY} s lowers claim throughput by at most 2%" >/dev/null
  extra=$("$PYTHON" - "$reads" "$(tr '\n' ' ' <"$OUT/$STAMP/metrics-scrapes.txt" 2>/dev/null)" \
          "$live_ms" "$tick_ms" "$fill_s" "$nested" "${seqjob:-}" "$series" "${jobscans:-}" <<'EOF'
import statistics, sys
reads = [float(x) for x in sys.argv[1].split()]
scrapes = [float(x) for x in sys.argv[2].split()]
live, tick, fill, nested, seqjob, series, jobscans = sys.argv[3:10]
med = statistics.median(reads)
print(f"Reads of coord.metrics ({series} series, every row fetched by psql over the unix socket) after a tick took "
      f"the per-queue counts: median of {len(reads)} reads **{med:.1f} ms** (min {min(reads):.1f}, max {max(reads):.1f}); "
      f"target under 100 ms: {'met' if med < 100 else 'NOT met'}.")
print()
if scrapes:
    print(f"The reads during the claim-scrape runs (beside 4 pgbench workers): {len(scrapes)} reads, median "
          f"{statistics.median(scrapes):.1f} ms (min {min(scrapes):.1f}, max {max(scrapes):.1f}).")
    print()
print(f"For comparison: one read counting the live jobs instead of reading the tick's counts "
      f"(coord.metrics_state.large off, as below 50,000 live jobs): {float(live or 'nan'):.0f} ms; the tick that took "
      f"the counts: {float(tick or 'nan'):.0f} ms; enqueueing the jobs (enqueue_many): {fill} s.")
print()
scans = seqjob.replace(";", "; ") if seqjob else "none"
print(f"Plans (auto_explain with ANALYZE, nested statements included: {nested} statements, the view's and those "
      f"coord.metrics_queues runs): Seq Scan on coord.job: {scans}; target none: {'met' if not seqjob else 'NOT met'}. "
      f"Every node reading coord.job: {jobscans.replace(';', '; ') or 'none'} "
      f"(the plans: bench/out/<stamp>/metrics-plans.txt).")
EOF
)
  printf '\n%s\n' "$extra" >>"$OUT/metrics.table.md"
  section_block metrics "Metrics: coord.metrics with $METRICS_JOBS live jobs in $METRICS_QUEUES queues, and claims while it is read" \
"Setup: $METRICS_JOBS jobs enqueued by \`coord.enqueue_many\` into $METRICS_QUEUES queues
mq0..mq$((METRICS_QUEUES - 1)) ($((METRICS_JOBS / METRICS_QUEUES)) each; every tenth queue's an hour
ahead), \`VACUUM ANALYZE\`, then \`coord.tick()\`: with 50,000 live jobs or more it takes the
per-queue counts into \`coord.queue_counts\` (at most every 10 s), which \`coord.metrics\` then
reads (docs/operations/metrics.md).  Reads: \`$METRICS_READ_SQL\` in one psql session, every row
fetched, timed by psql (\`\\timing\`), after two warm-up reads.  A/B: claim + complete
(\`bench/jobs-claim-coord.sql\`, 4 pgbench workers on queue q, beside the $METRICS_JOBS jobs) without
and with a psql reading the whole view every $METRICS_SCRAPE_EVERY s (a Prometheus scrape interval;
its server CPU counts in the CPU per job); before each run q is topped up to $METRICS_BACKLOG ready
jobs, \`coord.tick()\` runs (fold, counts), VACUUM ANALYZE, CHECKPOINT.  Knobs: METRICS_JOBS,
METRICS_QUEUES, METRICS_READS, METRICS_BACKLOG, METRICS_SCRAPE_EVERY, METRICS_DURATION (the
seconds of each pgbench run in this section), METRICS_RUNS (rounds; after a 5 s warm-up run, odd
rounds run the side without the reader first, even rounds the other first: the runs slow down as
the history grows)." \
    "${BENCH_KNOBS}BENCH_SECTIONS=metrics make bench" "$load_start"
  write_block metrics "$OUT/metrics.md"
  cp "$OUT/metrics.md" "$OUT/$STAMP/"
  cat "$OUT/metrics.md"
}

# ---------------------------------------------------------------- dashboard

DASH_QUEUES=${DASH_QUEUES:-1000}
DASH_PER_QUEUE=${DASH_PER_QUEUE:-1000}
DASH_REQUESTS=${DASH_REQUESTS:-20}
DASH_SPEC='noscrape|coord.claim, then coord.complete|1 job/claim, 4 workers, no scrape|-|count
scrape5s|the same while GET /metrics every 5 s|1 job/claim, 4 workers|noscrape|count|0.98'
DASH_URL=
DASH_PID=
DASH_SCRAPER=

dash_scraper_stop() {
  [ -n "$DASH_SCRAPER" ] && kill "$DASH_SCRAPER" 2>/dev/null && wait "$DASH_SCRAPER" 2>/dev/null
  DASH_SCRAPER=
}

# before each run: the 'q' backlog topped up; the scraper for scrape5s only
prerun_dashboard() {
  dash_scraper_stop
  jobs_fill q "$JOBS_BACKLOG" || return 1
  if [ "$1" = scrape5s ]; then
    "$PYTHON" -c '
import sys, time, urllib.request
while True:
    urllib.request.urlopen(sys.argv[1] + "/metrics", timeout=30).read()
    time.sleep(5)' "$DASH_URL" >/dev/null 2>&1 &
    DASH_SCRAPER=$!
  fi
}

bench_dashboard() {
  local load_start ctl=$BENCH_DIR/../agent/coordctl
  load_start=$(cut -d' ' -f1 /proc/loadavg)
  log "== dashboard: $DASH_QUEUES queues x $DASH_PER_QUEUE jobs, then $((2 * BENCH_RUNS)) runs of ${BENCH_DURATION} s"
  make -C "$BENCH_DIR/../agent" -s >/dev/null || return 1
  jobs_raw_table
  psql -qX -v ON_ERROR_STOP=1 -d "$BENCH_DB" >/dev/null <<SQL || return 1
SET client_min_messages = warning;
DO \$\$
BEGIN
  FOR q IN 1 .. $DASH_QUEUES LOOP
    PERFORM count(*) FROM coord.enqueue_many('d' || q, array_fill('{}'::jsonb, ARRAY[$DASH_PER_QUEUE]));
  END LOOP;
END
\$\$;
VACUUM ANALYZE coord.job;
SELECT coord.tick();
SQL
  "$ctl" -d "dbname=$BENCH_DB" serve --read-only --refresh 0 --listen 127.0.0.1:0 >"$OUT/$STAMP/serve.log" 2>&1 &
  DASH_PID=$!
  local i
  for i in $(seq 100); do
    DASH_URL=$(sed -n 's|.*listening on \(http://127.0.0.1:[0-9]*\)/.*|\1|p' "$OUT/$STAMP/serve.log")
    [ -n "$DASH_URL" ] && break
    sleep 0.1
  done
  [ -n "$DASH_URL" ] || { log "coordctl serve did not start"; cat "$OUT/$STAMP/serve.log"; return 1; }
  BENCH_KEEP_PIDS=$(psql -qXAt -d "$BENCH_DB" -c "SELECT string_agg(pid::text, ' ') FROM pg_stat_activity
                                                  WHERE application_name = 'coordctl serve'")
  # the pages' times (a first request of each, not counted, warms the caches)
  "$PYTHON" - "$DASH_URL" "$DASH_REQUESTS" >"$OUT/dashboard.times.md" <<'PY'
import statistics, sys, time, urllib.request
base, n = sys.argv[1], int(sys.argv[2])
print("| request | median ms | 95th percentile ms | max ms | bytes |")
print("|---|---:|---:|---:|---:|")
for path in ("/", "/api/queues.json", "/metrics"):
    urllib.request.urlopen(base + path, timeout=60).read()
    t = []
    for _ in range(n):
        t0 = time.perf_counter()
        body = urllib.request.urlopen(base + path, timeout=60).read()
        t.append((time.perf_counter() - t0) * 1000)
    t.sort()
    print(f"| GET {path} | {statistics.median(t):.1f} | {t[max(0, int(len(t) * 0.95) - 1)]:.1f} | {t[-1]:.1f} | {len(body):,} |")
PY
  # the queues page's statement (serve_pages.c) as the plan shows it
  psql -qXAt -d "$BENCH_DB" -c "SET search_path = pg_catalog, pg_temp" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON)
SELECT COALESCE(q.queue, f.queue) AS queue, q.ready, q.scheduled, q.running, q.waiting, q.dead,
       q.oldest_ready_age, q.completed, q.failed, f.paused_until, f.paused_keys
  FROM coord.metrics_queues() AS q FULL JOIN (
    SELECT l.queue, max(l.paused_until) FILTER (WHERE l.limit_key IS NULL) AS paused_until,
           count(*) FILTER (WHERE l.limit_key IS NOT NULL AND l.paused_until IS NOT NULL) AS paused_keys
      FROM coord.limits AS l GROUP BY l.queue) AS f ON f.queue = q.queue ORDER BY 1" >"$OUT/dashboard.plan" 2>&1
  COUNT_SQL[noscrape]="SELECT count(*) FROM coord.job_history WHERE queue = 'q' AND state = 'done'"
  COUNT_SQL[scrape5s]=${COUNT_SQL[noscrape]}
  run_section dashboard noscrape:jobs-claim-coord.sql scrape5s:jobs-claim-coord.sql
  dash_scraper_stop
  kill "$DASH_PID" 2>/dev/null; wait "$DASH_PID" 2>/dev/null
  BENCH_KEEP_PIDS=
  summarize dashboard "$DASH_SPEC" job "claim + complete at most 2% slower while /metrics is scraped every 5 s" >/dev/null
  {
    echo "Pages, with $DASH_QUEUES queues of $DASH_PER_QUEUE ready jobs (coordctl serve, one connection, on this machine; $DASH_REQUESTS requests each):"
    echo
    cat "$OUT/dashboard.times.md"
    echo
    echo "The queues page's statement (\`EXPLAIN ANALYZE\`): no sequential scan of coord.job$(grep -qE 'Seq Scan on job( |$)' "$OUT/dashboard.plan" && echo ': FAILED, there is one'):"
    echo
    echo '```'
    cat "$OUT/dashboard.plan"
    echo '```'
    echo
    echo "Claim + complete with and without a scrape of GET /metrics every 5 s (the same $DASH_QUEUES queues in the table, 'q' topped up to $JOBS_BACKLOG jobs before each run):"
    echo
    cat "$OUT/dashboard.table.md"
  } >"$OUT/dashboard.table2.md"
  mv "$OUT/dashboard.table2.md" "$OUT/dashboard.table.md"
  section_block dashboard "Dashboard: coordctl serve's pages and a Prometheus scrape's cost" \
"coordctl serve (read-only, as the bench's superuser) in front of $((DASH_QUEUES * DASH_PER_QUEUE)) ready jobs in $DASH_QUEUES queues (\`coord.enqueue_many\`, then \`coord.tick()\`, which takes the per-queue counts coord.metrics_queues() reads above 50,000 live jobs).  Target (issue 29): the queues page and GET /metrics under 100 ms; scraping every 5 s lowers claim throughput by at most 2%." \
    "${BENCH_KNOBS}BENCH_SECTIONS=dashboard make bench" "$load_start"
  write_block dashboard "$OUT/dashboard.md"
  cp "$OUT/dashboard.md" "$OUT/$STAMP/"
  cat "$OUT/dashboard.md"
}

# ---------------------------------------------------------------- main

log "== bench database $BENCH_DB"
psql -qX -d postgres -c "SET client_min_messages = warning" \
  -c "DROP DATABASE IF EXISTS $BENCH_DB" -c "CREATE DATABASE $BENCH_DB" >/dev/null || exit 1
psql -qX -d "$BENCH_DB" -c "CREATE EXTENSION pg_coord" >/dev/null || exit 1
mkdir -p "$OUT/$STAMP"
pm_init
SOURCE_INFO=$(source_info)   # now: the harness has just built and installed this tree

status=0
for s in $BENCH_SECTIONS; do
  if ! declare -F "bench_$s" >/dev/null; then
    log "unknown bench section: $s (known: $(declare -F | sed -n 's/^declare -f bench_//p' | tr '\n' ' '))"
    status=2
    continue
  fi
  "bench_$s" || status=1
done
log "raw figures: $OUT/$STAMP/; summary: $BENCH_RESULTS"
exit $status
