#!/usr/bin/env bash
# coordctl serve, the web dashboard, in a real browser (Debian's headless
# chromium, driven by test/agent/dashboard.py over the DevTools protocol):
#   - the data: a dead job (its payload, key and error carrying HTML), a
#     job to cancel, a paused key and a paused queue, a schedule, a batch,
#     a late app run (hourly, deadline 1 minute, runs since 3 hours ago), a
#     leader, a weighted partition group (weights 3 and 1), a held and an
#     awaited lock;
#   - three servers: a coord_admin role, a coord_monitor-only role, and the
#     admin with --read-only, each on a free loopback port (--listen
#     127.0.0.1:0);
#   - dashboard.py: every page loads without a console error and shows that
#     data; retry, cancel and resume clicked in the page take effect in the
#     database; the monitor sees no button and its forged POST gets 403
#     (42501); POSTs without the CSRF token, with a wrong one, from another
#     Origin, or to --read-only get 403; a foreign Host 421; every
#     /api/<page>.json is JSON; screenshots in test/results/dashboard/.
set -euo pipefail
export COORD_PGPORT=54370
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/agent_lib.sh"
agent_setup
SHOTS=$COORD_RESULTS/dashboard
rm -rf "$SHOTS"

psql -qX -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE ROLE dash_admin LOGIN IN ROLE coord_admin;
CREATE ROLE dash_mon LOGIN IN ROLE coord_monitor;
-- a dead job: one attempt, failed; payload, key and error meant to break out of HTML
SELECT coord.enqueue('mail', '{"to": "<img src=x onerror=alert(1)>"}', key => '"><script>alert(2)</script>',
                     max_attempts => 1);
SELECT coord.fail(id, token, 'SMTP 550: <b>mailbox</b> unavailable') FROM coord.claim('mail');
SELECT coord.enqueue('mail', '{"to": "b@example.com"}', key => 'cancel-me');
SELECT coord.enqueue('reports', ('{"n": ' || g || '}')::jsonb, run_at => now() + '1 hour'::interval)
  FROM generate_series(1, 3) AS g;
SELECT coord.enqueue('reports', '{"n": 0}', limit_key => 'tenant-7');
SELECT coord.pause('reports', NULL, 'tenant-7');
SELECT coord.enqueue('billing', '{"invoice": 7}');
-- a job waiting for its parent
SELECT coord.enqueue('reports', '{"step": "merge"}',
                     after => ARRAY[(SELECT coord.enqueue('reports', '{"step": "load"}', key => 'parent'))]);
SELECT coord.pause('billing', now() + '2 hours'::interval);
SELECT coord.schedule('nightly', 'reports', cron => '0 3 * * *');
SELECT coord.open_batch('mail', '{"done": true}');
SELECT coord.define_app('hourly_report', starts => 'hourly', deadline => '1 minute',
                        catchup_from => date_trunc('hour', now()) - '3 hours'::interval);
SELECT coord.tick();
SELECT coord.tick();
-- one run done (the others stay late): something for a rerun to run again
SELECT coord.complete(id, token, '{"rows": 42}') FROM coord.claim('apps');
SQL

# sessions that hold things while the pages are looked at: a leader, two
# members (weights 3 and 1), a lock and a session waiting for it
hold() { psql -qXAt "$@" -c "SELECT pg_sleep(600)" >/dev/null 2>&1 & AGENT_PID[hold$!]=$!; }
# (segments move when members ask coord.owned: b gives up what is a's, then a takes it)
hold -c "SELECT coord.join('ingest', 'worker-b', 1)" -c "SELECT pg_sleep(2)" -c "SELECT coord.owned('ingest')"
hold -c "SELECT coord.campaign('primary-db', 'host-a')" -c "SELECT coord.join('ingest', 'worker-a', 3)" \
     -c "SELECT coord.lock('/reports/monthly')" -c "SELECT pg_sleep(4)" -c "SELECT coord.owned('ingest')"
wait_sql "EXISTS (SELECT FROM coord.locks WHERE path = '/reports/monthly')" 20
psql -qXAt -c "SELECT coord.lock('/reports/monthly')" >/dev/null 2>&1 & AGENT_PID[waiter]=$!
wait_sql "(SELECT count(*) FROM coord.locks WHERE path = '/reports/monthly') = 2" 20
wait_sql "(SELECT count(*) FROM coord.members WHERE alive) = 2" 20
wait_sql "(SELECT owned_share > 0.5 FROM coord.members WHERE member = 'worker-a')" 20 ||
  echo "  (worker-a does not own its share yet)"

# start_serve NAME ROLE [ARGS...]: coordctl serve on a free loopback port; sets URL
start_serve() {
  local name=$1 role=$2; shift 2
  "$CTL" -d "dbname=agent_test user=$role" serve --listen 127.0.0.1:0 --refresh 0 "$@" >"$W/$name.log" 2>&1 &
  AGENT_PID[$name]=$!
  wait_log "$name" "listening on http://127.0.0.1:[0-9]*/" 20 || { cat "$W/$name.log"; return 1; }
  URL=$(sed -n 's|.*listening on \(http://127.0.0.1:[0-9]*\)/.*|\1|p' "$W/$name.log" | head -1)
}
start_serve admin dash_admin; ADMIN=$URL
start_serve monitor dash_mon --refresh 1; MONITOR=$URL
start_serve readonly dash_admin --read-only; READONLY=$URL

check "browser checks (dashboard.py)" timeout 300 python3 "$COORD_ROOT/test/agent/dashboard.py" \
  --admin "$ADMIN" --monitor "$MONITOR" --readonly "$READONLY" --out "$SHOTS"
check "a screenshot per page" between "$(find "$SHOTS" -name '*.png' | wc -l)" 12 100
# a limit past int4 is clamped to 1000, not a server error
code=$(python3 -c "import sys, urllib.request as u
try: print(u.urlopen(sys.argv[1] + '/jobs?limit=99999999999', timeout=20).status)
except Exception as e: print(getattr(e, 'code', e))" "$ADMIN")
check "/jobs?limit=99999999999: 200" eq "$code" 200

# stops on SIGTERM, exit 0
kill -TERM "${AGENT_PID[admin]}"
rc=0; wait "${AGENT_PID[admin]}" || rc=$?
check "SIGTERM: coordctl serve exits 0" eq "$rc" 0
unset 'AGENT_PID[admin]'
# usage errors: exit 2
rc=0; "$CTL" serve --listen nonsense >/dev/null 2>&1 || rc=$?
check "--listen nonsense: exit 2" eq "$rc" 2
rc=0; "$CTL" -d "dbname=no_such_db" serve --listen 127.0.0.1:0 >/dev/null 2>&1 || rc=$?
check "no database: exit 1" eq "$rc" 1
finish "dashboard: $CHECKS checks passed"
