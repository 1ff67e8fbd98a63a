#!/usr/bin/env bash
# coordctl's read-mostly subcommands against data this test creates:
# schedules, grid (a late app run), rerun, locks (a holder and a waiter),
# leaders (a live leader), members (a weighted group), alerts, metrics
# (Prometheus text: # HELP / # TYPE once per metric; escaped label values,
# NaN/+Inf and fixed names on a stand-in view in another database; and
# `promtool check metrics` when Debian's prometheus package is
# installed).  Each as text and --json (parsed by python3), and the exit
# codes: 3 naming the GRANT for a role without it (rerun as a monitor,
# metrics as a worker), 2 for usage errors.
set -euo pipefail
export COORD_PGPORT=54358
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/agent_lib.sh"
agent_setup

sql "CREATE ROLE watcher LOGIN; GRANT coord_monitor TO watcher;
     CREATE ROLE producer LOGIN; GRANT coord_worker TO producer"

# sessions that hold things while the test looks: killed by the trap
BG=()
bg_session() { psql -qAtX -v ON_ERROR_STOP=1 "$@" -c "SELECT pg_sleep(120)" >/dev/null 2>&1 & BG+=($!); }
trap 'for p in "${BG[@]}"; do kill "$p" 2>/dev/null || true; done; agent_teardown' EXIT

echo "== empty: one line each, [] in JSON"
for c in schedules locks members alerts; do
  ctl "$c"; check "$c with nothing: exit 0, one line" eq "$rc:$(wc -l <<<"$out"):${out:0:4}" "0:1:(no "
  ctl "$c" --json; check "$c --json with nothing: []" eq "$rc:$out" "0:[]"
done

echo "== schedules"
sql "SELECT coord.schedule('nightly-report', 'reports', cron => '0 3 * * *');
     SELECT coord.schedule('heartbeat', 'beats', every => '5 minutes')" >/dev/null
ctl schedules
check "a row per schedule" eq "$rc:$(grep -cE '^(heartbeat|nightly-report) ' <<<"$out")" 0:2
ctl schedules --json
check "--json: name, cron, every, next_run_at" eq "$(json '[(s["name"], s["cron"], s["every"], bool(s["next_run_at"])) for s in j]')" \
  "[('heartbeat', None, '00:05:00', True), ('nightly-report', '0 3 * * *', None, True)]"
as watcher schedules; check "a monitor reads them" eq "$rc" 0
as producer schedules
check "a worker may not: exit 3 naming the GRANT" eq "$rc:$(grep -c 'GRANT coord_monitor TO producer;' <<<"$err")" 3:1

echo "== grid, alerts, rerun"
sql "SELECT coord.define_app('late', starts => 'hourly', deadline => '1 minute', queue => 'late_q',
                             catchup_from => date_trunc('hour', now()) - interval '3 hours');
     SELECT coord.tick(now())" >/dev/null
ctl grid
check "grid: coord.grid's lines" eq "$rc:$(grep -c '^late ' <<<"$out")" 0:1
check "  a late run is marked !" grep -q '^late .*!' <<<"$out"
ctl grid --json
check "grid --json: the runs of the window" eq "$(json 'sorted(set(r["app"] for r in j)), all("period_start" in r and "state" in r for r in j), len(j) >= 3')" "(['late'], True, True)"
ctl grid --from 'yesterday' --to 'not a time'
check "grid with a bad time: exit 1" eq "$rc" 1
ctl alerts
check "alerts: the late runs' deadline alerts" eq "$rc:$(grep -c '^late .* deadline ' <<<"$out")" "0:$(sql "SELECT count(*) FROM coord.alerts WHERE cleared_at IS NULL")"
ctl alerts --json
check "alerts --json: app, kind, period_start" eq "$(json 'sorted(set((a["app"], a["kind"]) for a in j))')" "[('late', 'deadline')]"
ctl alerts --all --json
check "alerts --all" eq "$rc" 0
as watcher rerun late '2000-01-01' '2100-01-01'
check "rerun as a monitor: exit 3 naming coord_admin" eq "$rc:$(grep -c 'GRANT coord_admin TO watcher;' <<<"$err")" 3:1
sql "SELECT coord.complete(id, token) FROM coord.claim('late_q', 10)" >/dev/null
ctl rerun late "$(sql "SELECT date_trunc('hour', now()) - interval '3 hours'")" "$(sql "SELECT date_trunc('hour', now()) - interval '2 hours'")" --json
check "rerun --json: reset 1, the range" eq "$rc:$(json 'j["app"], j["reset"], j["downstream"]')" "0:('late', 1, True)"
ctl rerun late '2000-01-01' '2000-01-02'
check "rerun of no runs: 0 runs reset" eq "$rc:$out" "0:app late: 0 runs reset"
ctl rerun nosuchapp '2000-01-01' '2000-01-02'
check "rerun an unknown app: exit 1" eq "$rc" 1
ctl rerun late '2000-01-02' '2000-01-01'
check "rerun with from after to: exit 1 (the server's 22023)" eq "$rc" 1

echo "== locks, leaders, members"
bg_session -c "SELECT coord.lock('/billing/eu')" -c "SELECT coord.campaign('scheduler', 'host-a:8080')" \
  -c "SELECT coord.join('workers', 'big', weight => 3)"
wait_sql "EXISTS (SELECT FROM coord.members WHERE member = 'big')" 10 || true
bg_session -c "SELECT coord.join('workers', 'small', weight => 1)" -c "SELECT coord.lock('/billing/eu')"
wait_sql "EXISTS (SELECT FROM coord.locks WHERE NOT granted) AND (SELECT count(*) FROM coord.members) = 2" 10 || true
ctl locks
check "locks: the holder and the waiter" eq "$rc:$(grep -cE '^/billing/eu +exclusive +held ' <<<"$out"):$(grep -cE '^/billing/eu +exclusive +waiting ' <<<"$out")" 0:1:1
ctl locks --json
check "locks --json" eq "$(json 'sorted(l["state"] for l in j if l["path"] == "/billing/eu")')" "['held', 'waiting']"
ctl leaders scheduler nobody
check "leaders ELECTION...: the live leader, and none" eq "$rc:$(grep -cE '^scheduler +host-a:8080 +[0-9]+ ' <<<"$out"):$(grep -cE '^nobody *$' <<<"$out")" 0:1:1
ctl leaders scheduler --json
check "leaders --json: value, pid, term" eq "$(json 'j[0]["election"], j[0]["value"], type(j[0]["term"]).__name__')" "('scheduler', 'host-a:8080', 'int')"
as producer leaders scheduler
check "a worker may ask who leads" eq "$rc" 0
ctl members
check "members: a row each" eq "$rc:$(grep -cE '^workers +(big|small) ' <<<"$out")" 0:2
ctl members --json
check "members --json: shares against weights" \
  eq "$(json '[(m["member"], m["weight"], float(m["target_share"])) for m in j]')" "[('big', 3, 0.75), ('small', 1, 0.25)]"

echo "== metrics"
sql "SELECT coord.enqueue('mail', '{}') FROM generate_series(1, 4)" >/dev/null
ctl metrics
check "metrics: exit 0" eq "$rc" 0
check "  # HELP and # TYPE once per metric" \
  eq "$(grep -c '^# HELP ' <<<"$out"):$(grep -c '^# TYPE ' <<<"$out"):$(grep -v '^#' <<<"$out" | sed 's/[{ ].*//' | sort -u | wc -l)" \
     "$(sql "SELECT count(DISTINCT metric) FROM coord.metrics"):$(sql "SELECT count(DISTINCT metric) FROM coord.metrics"):$(sql "SELECT count(DISTINCT metric) FROM coord.metrics")"
check "  a sample per row" eq "$(grep -vc '^#' <<<"$out")" "$(sql "SELECT count(*) FROM coord.metrics")"
check "  the queue depth the test made" grep -qE '^coord_queue_ready\{([a-z_]+="[^"]*",)*queue="mail"(,[a-z_]+="[^"]*")*\} 4$' <<<"$out"
check "  the election's term" grep -qE '^coord_election_term\{election="scheduler"\} [0-9]+$' <<<"$out"
ctl leaders
check "leaders without names: those coord.metrics names" eq "$rc:$(grep -cE '^scheduler +host-a:8080 ' <<<"$out")" 0:1

echo "== the renderer on odd rows: a database with a stand-in coord.metrics"
# (no pg_coord there: the renderer reads only the view, its labels as jsonb
# prints them: keys by length, values with JSON's escapes)
psql -qX -d postgres -c "CREATE DATABASE stub" >/dev/null
psql -qAtX -v ON_ERROR_STOP=1 -d stub >/dev/null <<'SQL'
CREATE SCHEMA coord;
CREATE VIEW coord.metrics (metric, labels, value, kind, help) AS
  SELECT * FROM (SELECT 'coord_jobs_enqueued_total', jsonb_build_object('queue', 'q"uo\te', 'note', E'two\nlines', 'bad-key', 'x'), 7::float8, 'counter', E'Jobs enqueued \\ ever\nsince'
  UNION ALL SELECT 'coord_odd_value', '{}', 'NaN', 'gauge', 'Odd values'
  UNION ALL SELECT 'coord_odd_value', '{"x": "1"}', 'Infinity', 'gauge', 'Odd values'
  UNION ALL SELECT 'coord_odd_value', '{"x": "2"}', '-Infinity', 'gauge', 'Odd values'
  UNION ALL SELECT 'coord_odd_value', '{"x": 3}', NULL, 'gauge', 'Odd values'
  UNION ALL SELECT '9bad name', '{}', 1.5, 'weird', 'A name to fix') AS u (metric, labels, value, kind, help)
  -- ordered as the real view is: the renderer keeps the view's order
  ORDER BY metric COLLATE "C", labels::text COLLATE "C";
SQL
ctl -d dbname=stub metrics
check "exit 0" eq "$rc" 0
check "label values escaped (\\ \" \\n), names fixed, labels sorted" \
  grep -qxF 'coord_jobs_enqueued_total{bad_key="x",note="two\nlines",queue="q\"uo\\te"} 7' <<<"$out"
check "HELP escaped" grep -qxF '# HELP coord_jobs_enqueued_total Jobs enqueued \\ ever\nsince' <<<"$out"
check "TYPE counter" grep -qxF '# TYPE coord_jobs_enqueued_total counter' <<<"$out"
check "NaN, +Inf, -Inf, NULL as NaN" \
  eq "$(grep '^coord_odd_value' <<<"$out" | tr '\n' '|')" 'coord_odd_value{x="1"} +Inf|coord_odd_value{x="2"} -Inf|coord_odd_value{x="3"} NaN|coord_odd_value NaN|'
check "one HELP and TYPE for a metric of four samples" eq "$(grep -c '^# [A-Z]* coord_odd_value ' <<<"$out")" 2
check "an invalid name made valid, an unknown kind untyped" \
  eq "$(grep -c '^# TYPE _9bad_name untyped$' <<<"$out"):$(grep -c '^_9bad_name 1.5$' <<<"$out")" 1:1
if command -v promtool >/dev/null; then
  prc=0; promtool check metrics <"$W/out" >"$W/promtool.out" 2>&1 || prc=$?
  check "promtool reads it: no format error" eq "$(grep -ci 'error' "$W/promtool.out" || true):$([ "$prc" -ne 1 ] && echo ok)" "0:ok"
fi
if command -v promtool >/dev/null; then
  "$CTL" metrics >"$W/metrics.prom"
  prc=0; promtool check metrics <"$W/metrics.prom" >"$W/promtool.out" 2>&1 || prc=$?
  # promtool exits 3 for lint warnings only (a counter's name, ...): those
  # are the view's; 1 is a format error, which would be the renderer's
  check "promtool check metrics: no format error" eq "$(grep -ci 'error' "$W/promtool.out" || true):$([ "$prc" -ne 1 ] && echo ok)" "0:ok"
  [ "$prc" -eq 0 ] || cat "$W/promtool.out"
fi
ctl metrics --json
check "metrics --json: the view's rows" eq "$(json 'len(j), sorted(j[0].keys())')" "($(sql "SELECT count(*) FROM coord.metrics"), ['help', 'kind', 'labels', 'metric', 'value'])"
as watcher metrics; check "a monitor reads metrics" eq "$rc" 0
as producer metrics
check "a worker may not: exit 3 naming coord_monitor" eq "$rc:$(grep -c 'GRANT coord_monitor TO producer;' <<<"$err")" 3:1
ctl metrics extra; check "metrics with an argument: exit 2" eq "$rc" 2

finish "coordctl_views: $CHECKS checks passed"
