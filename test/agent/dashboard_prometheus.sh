#!/usr/bin/env bash
# A real Prometheus (Debian's prometheus, in a temporary directory, on a
# free loopback port, scraping every second) scrapes GET /metrics of
# coordctl serve, run --read-only as a coord_monitor-only role; its query
# API must return the queue depth this test created (coord_queue_ready of
# queue prom_q: 7), then follow it (10 after three more jobs), with up 1.
# Bounded: each wait 60 s at most.
set -euo pipefail
export COORD_PGPORT=54371
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/agent_lib.sh"
agent_setup
PROMETHEUS=$(command -v prometheus || echo /usr/bin/prometheus)

sql "CREATE ROLE prom_mon LOGIN IN ROLE coord_monitor" >/dev/null
sql "SELECT coord.enqueue('prom_q', pg_catalog.jsonb_build_object('n', g)) FROM generate_series(1, 7) AS g" >/dev/null

"$CTL" -d "dbname=agent_test user=prom_mon" serve --read-only --listen 127.0.0.1:0 >"$W/serve.log" 2>&1 &
AGENT_PID[serve]=$!
wait_log serve "listening on http://127.0.0.1:[0-9]*/" 20 || { cat "$W/serve.log"; exit 1; }
target=$(sed -n 's|.*listening on http://\(127.0.0.1:[0-9]*\)/.*|\1|p' "$W/serve.log" | head -1)
check "GET /metrics answers (200)" eq "$(python3 - "$target" <<'PY'
import sys, urllib.request
print(urllib.request.urlopen(f"http://{sys.argv[1]}/metrics", timeout=10).status)
PY
)" 200

# a free port for Prometheus (a race with another process is unlikely; a
# clash shows as "prometheus did not start" below)
pport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$W/prom"
cat >"$W/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: coord
    static_configs:
      - targets: ['$target']
YML
"$PROMETHEUS" --config.file="$W/prometheus.yml" --storage.tsdb.path="$W/prom" \
  --storage.tsdb.retention.time=1h --web.listen-address="127.0.0.1:$pport" >"$W/prometheus.log" 2>&1 &
AGENT_PID[prometheus]=$!

# query EXPR: the first result's value, or nothing
query() {
  python3 - "$pport" "$1" <<'PY'
import json, sys, urllib.parse, urllib.request
try:
    url = f"http://127.0.0.1:{sys.argv[1]}/api/v1/query?" + urllib.parse.urlencode({"query": sys.argv[2]})
    r = json.load(urllib.request.urlopen(url, timeout=5))
    res = r["data"]["result"]
    print(res[0]["value"][1] if res else "")
except Exception:
    print("")
PY
}
# wait_query EXPR WANT SECONDS
wait_query() {
  local limit=$(( $(now_ms) + $3 * 1000 )) got
  while [ "$(now_ms)" -lt "$limit" ]; do
    got=$(query "$1")
    [ "$got" = "$2" ] && return 0
    sleep 0.5
  done
  echo "       $1: got '$(query "$1")', want '$2'"
  return 1
}

check "Prometheus: up{job=\"coord\"} is 1" wait_query 'up{job="coord"}' 1 60
check "Prometheus: coord_queue_ready{queue=\"prom_q\"} is 7" wait_query 'coord_queue_ready{queue="prom_q"}' 7 60
sql "SELECT coord.enqueue('prom_q', '{}') FROM generate_series(1, 3)" >/dev/null
check "Prometheus follows the queue: 10 after three more jobs" wait_query 'coord_queue_ready{queue="prom_q"}' 10 60
check "Prometheus: the enqueued counter is there" wait_query 'coord_jobs_enqueued_total{queue="prom_q"} >= bool 10' 1 30
if [ "$FAILS" -gt 0 ]; then
  echo "--- prometheus.log (last 20 lines)"; tail -20 "$W/prometheus.log"
fi
finish "dashboard_prometheus: $CHECKS checks passed"
