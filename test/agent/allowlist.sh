#!/usr/bin/env bash
# Only allow-listed tasks run; nothing from the database becomes a command.
#   - {"task": "evil", "command": "touch <marker>"}, an app run of an app not
#     in the config, a job with no task in a queue with no task of that name,
#     and {"task": "../../bin/sh"}: each fails with a clear error
#     (max_attempts 1: dead), no child is started, the marker never appears;
#   - SIGHUP with a config that adds the app's task: a new run of it is done;
#   - SIGHUP with a broken config: the agent says so and keeps the old one;
#   - "coord-agent check" refuses a relative command path and unknown keys.
set -euo pipefail
export COORD_PGPORT=54347
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/agent_lib.sh"
agent_setup

marker=$W/marker
write_conf() {
  cat >"$W/agent.conf" <<EOF
# the test tasks reach the database with the agent's PG* variables
pass_env = PG*
queues = work, unlisted, apps
concurrency = 2
poll = 200ms

[task ok]
command = $W/child.sh
EOF
  if [ "${1:-}" = with_nightly ]; then
    printf '\n[task nightly]\ncommand = %s/child.sh\n' "$W" >>"$W/agent.conf"
  fi
}
write_conf

evil=$(sql "SELECT coord.enqueue('work', jsonb_build_object('task', 'evil', 'command', 'touch $marker'), max_attempts => 1)")
app=$(sql "SELECT coord.enqueue('apps', '{\"app\": \"nightly\", \"period_start\": \"2026-11-28\", \"period_end\": \"2026-11-29\"}', max_attempts => 1)")
noname=$(sql "SELECT coord.enqueue('unlisted', '{\"command\": \"touch $marker\"}', max_attempts => 1)")
path=$(sql "SELECT coord.enqueue('work', '{\"task\": \"../../bin/sh\"}', max_attempts => 1)")
ok=$(sql "SELECT coord.enqueue('work', '{\"task\": \"ok\"}')")
start_agent L "$W/agent.conf"
wait_sql "(SELECT count(*) FROM coord.jobs WHERE state IN ('done', 'dead')) = 5" 30 || true

echo "== tasks not in the allow-list"
check "the 4 jobs naming unknown tasks are dead, the allowed one done" \
  eq "$(sql "SELECT string_agg(state, ' ' ORDER BY id) FROM coord.jobs WHERE id IN ($evil, $app, $noname, $path, $ok)")" "dead dead dead dead done"
check "each error names the task and the allow-list" \
  eq "$(sql "SELECT string_agg(substring(last_error from '^task \"([^\"]*)\" is not in the allow-list of coord-agent on host .* nothing was run$'), ' ' ORDER BY id)
             FROM coord.jobs WHERE id IN ($evil, $app, $noname, $path)")" "evil nightly unlisted ../../bin/sh"
check "nothing ran for them: one child in all (the allowed job)" eq "$(sql "SELECT count(*) FROM t.starts")/$(grep -c ' start task=' "$W/L.log")" "1/1"
check "the payload's command was never executed" test ! -e "$marker"
check "4 rejected lines in the log" eq "$(grep -c ' rejected task=.* outcome=rejected state=dead' "$W/L.log")" 4

echo "== SIGHUP"
write_conf with_nightly
kill -HUP "${AGENT_PID[L]}"
wait_log L 'SIGHUP: reloaded' 5 || true
app2=$(sql "SELECT coord.enqueue('apps', '{\"app\": \"nightly\", \"period_start\": \"2026-11-29\", \"period_end\": \"2026-11-30\"}', max_attempts => 1)")
wait_sql "coord.job_state($app2) IN ('done', 'dead')" 30 || true
check "after SIGHUP with the task added, the app run is done" eq "$(sql "SELECT coord.job_state($app2)")" done
check "the log says the config was reloaded with 2 tasks" grep -q 'SIGHUP: reloaded .*: 2 task(s)' "$W/L.log"
printf '[task broken\n' >>"$W/agent.conf"
kill -HUP "${AGENT_PID[L]}"
wait_log L 'SIGHUP: keeping the old' 5 || true
app3=$(sql "SELECT coord.enqueue('apps', '{\"app\": \"nightly\", \"period_start\": \"2026-11-30\", \"period_end\": \"2026-12-01\"}', max_attempts => 1)")
wait_sql "coord.job_state($app3) IN ('done', 'dead')" 30 || true
check "after SIGHUP with a broken file, the error is logged with its line" \
  grep -q "SIGHUP: keeping the old configuration: .*agent.conf:12: a section header must end with ']'" "$W/L.log"
check "... and the old allow-list still runs the app" eq "$(sql "SELECT coord.job_state($app3)")" done

echo "== coord-agent check"
printf '[task rel]\ncommand = bin/job.sh\n' >"$W/rel.conf"
printf 'concurency = 3\n' >"$W/typo.conf"
chmod go-w "$W/rel.conf" "$W/typo.conf"
rel_out=$("$AGENT_BIN" -f "$W/rel.conf" check 2>&1) && rel_rc=0 || rel_rc=$?
typo_out=$("$AGENT_BIN" -f "$W/typo.conf" check 2>&1) && typo_rc=0 || typo_rc=$?
check "a relative command path is refused" eq "$rel_rc: $rel_out" \
  "1: coord-agent: $W/rel.conf:2: command must start with an absolute path, not \"bin/job.sh\" (no PATH search is done)"
check "an unknown key is refused" eq "$typo_rc: $typo_out" "1: coord-agent: $W/typo.conf:1: unknown key \"concurency\""
write_conf with_nightly
good_check() { "$AGENT_BIN" -f "$W/agent.conf" check | grep -q '^task nightly:'; }
check "a good config checks out and lists its tasks" good_check

finish "allowlist: 4 jobs naming tasks outside the allow-list (payload command, unknown app, queue-name fallback, a path) failed with a clear error and started nothing; SIGHUP added a task, a broken file was refused and the old allow-list kept; bad configs refused by check; $CHECKS checks passed"
