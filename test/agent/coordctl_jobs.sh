#!/usr/bin/env bash
# coordctl's job and queue subcommands, as the roles people run them with:
#   enqueue (payload, --key, --priority, --run-at, --after, "-" for stdin),
#   jobs (--queue, --state, --limit), job, retry, cancel, await, pause,
#   resume, stats: their output, --json parsed by python3, and exit codes:
#   0 done, 1 refused or failed, 2 usage, 3 a missing privilege naming the
#   GRANT (a coord_monitor-only role retrying, a role without grants);
#   -d CONNINFO with a password never prints it; tables fit $COLUMNS.
set -euo pipefail
export COORD_PGPORT=54357
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/agent_lib.sh"
agent_setup

sql "CREATE ROLE watcher LOGIN; GRANT coord_monitor TO watcher;
     CREATE ROLE producer LOGIN; GRANT coord_worker TO producer;
     CREATE ROLE \"Nobody Special\" LOGIN;
     CREATE ROLE boss LOGIN; GRANT coord_admin TO boss"

echo "== usage errors: exit 2"
ctl; check "no subcommand" eq "$rc" 2
ctl frobnicate; check "unknown subcommand" eq "$rc" 2
check "  says so" grep -q 'unknown subcommand "frobnicate"' <<<"$err"
ctl enqueue; check "enqueue without a queue" eq "$rc" 2
ctl enqueue mail '{bad json'; check "enqueue with a payload that is not JSON" eq "$rc" 2
ctl enqueue mail --priority high; check "--priority not a number" eq "$rc" 2
ctl enqueue mail --after 1,x; check "--after not ids" eq "$rc" 2
ctl job abc; check "job with an id that is not a number" eq "$rc" 2
ctl job 1 2; check "job with two ids" eq "$rc" 2
ctl jobs --state bogus; check "jobs --state unknown" eq "$rc" 2
ctl jobs --limit 0; check "jobs --limit 0" eq "$rc" 2
ctl jobs --frob; check "unknown option" eq "$rc" 2
ctl await 1 --timeout soon; check "await --timeout not a duration" eq "$rc" 2
ctl retry; check "retry without id" eq "$rc" 2
ctl rerun app; check "rerun with too few arguments" eq "$rc" 2
ctl stats extra; check "stats with an argument" eq "$rc" 2
ctl jobs --help; check "--help: exit 0" eq "$rc" 0
check "  and the usage line" grep -q '^Usage: coordctl jobs \[--queue Q\]' <<<"$out"
ctl --help; check "coordctl --help: exit 0, every subcommand listed" \
  eq "$rc:$(grep -cE '^  (enqueue|jobs|job|retry|cancel|await|pause|resume|stats|schedules|grid|rerun|locks|leaders|members|alerts|metrics|serve)( |$)' <<<"$out")" 0:18

echo "== enqueue"
ctl enqueue mail '{"to": "a@example.com"}'
check "exit 0, prints the id" eq "$rc:$(grep -cE '^[0-9]+$' <<<"$out")" 0:1
id1=$out
ctl --json enqueue mail '{"to": "b"}' --priority 5 --key k1
check "--json: {\"id\": N}" eq "$rc:$(json 'type(j["id"]).__name__')" 0:int
id2=$(json 'j["id"]')
ctl enqueue mail --key k1 --json
check "the same key while live: the same id" eq "$(json 'j["id"]')" "$id2"
check "  priority and key stored" eq "$(sql "SELECT priority || ':' || key FROM coord.jobs WHERE id = $id2")" "5:k1"
echo '{"from": "stdin"}' | "$CTL" enqueue mail - >"$W/out"
id3=$(cat "$W/out")
check "payload - reads stdin" eq "$(sql "SELECT payload->>'from' FROM coord.jobs WHERE id = $id3")" stdin
ctl enqueue later --run-at '2099-01-01 00:00+00'
check "--run-at: scheduled" eq "$(sql "SELECT state FROM coord.jobs WHERE id = $out")" scheduled
ctl enqueue child --after "$id1,$id2"
check "--after: waiting" eq "$(sql "SELECT state FROM coord.jobs WHERE id = $out")" waiting
idw=$out
ctl enqueue 'bad queue!'
check "an invalid queue name: the server's error, exit 1" eq "$rc" 1
check "  the message is the server's" grep -q 'coordctl enqueue: ' <<<"$err"
as watcher enqueue mail
check "a monitor-only role may not enqueue: exit 3" eq "$rc" 3
check "  the GRANT is named" grep -qF 'GRANT coord_worker TO watcher;' <<<"$err"
as producer enqueue mail '{"mine": true}'
check "a coord_worker role enqueues: exit 0" eq "$rc" 0
idp=$out

echo "== jobs"
ctl jobs
check "exit 0, a header and 7 jobs" eq "$rc:$(head -1 <<<"$out" | awk '{print $1, $2, $3}'):$(($(wc -l <<<"$out") - 1))" "0:ID QUEUE STATE:6"
ctl jobs --queue mail --json
check "--json: a list of the queue's jobs" eq "$(json 'len(j), sorted(set(x["queue"] for x in j))')" "(4, ['mail'])"
check "  with their columns" eq "$(json 'sorted(j[0].keys())')" "['attempt', 'enqueued_at', 'finished_at', 'id', 'key', 'last_error', 'max_attempts', 'priority', 'queue', 'run_at', 'state']"
ctl jobs --state waiting --json
check "--state waiting" eq "$(json '[x["id"] for x in j]')" "[$idw]"
ctl jobs --limit 2 --json
check "--limit 2: the newest two" eq "$(json 'len(j), j[0]["id"] > j[1]["id"]')" "(2, True)"
ctl jobs --queue nothing-here
check "no job: one line" eq "$rc:$out" "0:(no jobs)"
ctl jobs --queue nothing-here --json
check "no job, --json: []" eq "$out" "[]"
as watcher jobs --json
check "a monitor lists the jobs, without last_error" eq "$rc:$(json '"last_error" in j[0]')" "0:False"
as producer jobs --json
check "a worker without coord_monitor: its own jobs (coord.my_jobs)" eq "$rc:$(json '[x["id"] for x in j]')" "0:[$idp]"
as "Nobody Special" jobs
check "a role without any grant: exit 3" eq "$rc" 3
check "  the GRANT, its name quoted" grep -qF 'GRANT coord_monitor TO "Nobody Special";' <<<"$err"

echo "== tables fit the terminal"
sql "SELECT coord.enqueue('a-rather-long-queue-name-that-goes-on-and-on', '{}', key => repeat('k', 200))" >/dev/null
# widest line in characters (UTF-8), and lines ending in a blank
widest() { python3 -c "import sys; print(max(len(l) for l in open('$W/out', encoding='utf-8').read().splitlines()))"; }
COLUMNS=80 ctl jobs
check "COLUMNS=80: no line over 80" eq "$(widest)" 80
check "  a cut cell ends in …" grep -q '…' <<<"$out"
check "  no line ends in a blank" eq "$(grep -c ' $' <<<"$out" || true)" 0
COLUMNS=230 ctl jobs
check "COLUMNS=230: the widest column (the key) took the cut, the queue name is whole" \
  eq "$(widest):$(grep 'kk…' <<<"$out" | grep -c 'a-rather-long-queue-name-that-goes-on-and-on ')" 230:1
COLUMNS=400 ctl jobs
check "COLUMNS=400: nothing cut" eq "$(grep -c '…' <<<"$out" || true)" 0
ctl jobs | cat >/dev/null

echo "== job"
ctl job "$id1"
check "exit 0, name: value lines" eq "$rc:$(grep -c '^queue: *mail$' <<<"$out")" 0:1
check "  the payload (an admin)" grep -q '^payload: *{"to": "a@example.com"}$' <<<"$out"
ctl job "$id1" --json
check "--json: one object" eq "$(json 'j["id"], j["queue"], j["payload"]["to"], j["state"]')" "($id1, 'mail', 'a@example.com', 'ready')"
as watcher job "$id1" --json
check "a monitor: no payload, result, last_error, progress" eq "$rc:$(json 'sorted(k for k in ("payload","result","last_error","progress") if k in j)')" "0:[]"
ctl job "$idw" --json
check "a waiting job's parents (coord.job_parents)" eq "$(json 'j["parents"]')" "[$id1, $id2]"
as watcher job "$idw" --json
check "  a monitor reads them too" eq "$rc:$(json 'j["parents"]')" "0:[$id1, $id2]"
as producer job "$idp" --json
check "  a worker without coord_monitor: its own job, no parents column" eq "$rc:$(json '"parents" in j')" "0:False"
ctl job 999999
check "an unknown job: exit 1" eq "$rc" 1
check "  says so" grep -q 'no job 999999' <<<"$err"

echo "== cancel, retry, await"
ctl cancel "$id3"
check "cancel: exit 0" eq "$rc:$out" "0:job $id3 cancelled (now cancelled)"
ctl cancel "$id3" --json
check "cancel again: exit 1, json says why" eq "$rc:$(json 'j["cancelled"], j["state"]')" "1:(False, 'cancelled')"
check "  and stderr" grep -q "job $id3 was not cancelled: it is cancelled" <<<"$err"
as watcher cancel "$id1"
check "a monitor may not cancel: exit 3 naming coord_admin" eq "$rc:$(grep -c 'GRANT coord_admin TO watcher;' <<<"$err")" 3:1
# a dead job: one attempt, failed
idd=$(sql "SELECT coord.enqueue('fragile', '{}', max_attempts => 1)")
sql "SELECT coord.fail(id, token, 'boom') FROM coord.claim('fragile', 1)" >/dev/null
check "(the job is dead)" eq "$(sql "SELECT state FROM coord.jobs WHERE id = $idd")" dead
ctl retry "$idd"
check "retry a dead job: exit 0, ready again" eq "$rc:$(sql "SELECT state FROM coord.jobs WHERE id = $idd")" 0:ready
ctl retry "$idd" --json
check "retry a job that is not dead: exit 1" eq "$rc:$(json 'j["retried"]')" "1:False"
as watcher retry "$idd"
check "a monitor-only role retrying: exit 3" eq "$rc" 3
check "  the message names the GRANT" grep -qF 'GRANT coord_admin TO watcher;' <<<"$err"
ctl await "$idd" --timeout 0.2
check "await a ready job with a timeout: exit 1, says so" eq "$rc:$(grep -c 'had not finished' <<<"$err")" 1:1
sql "SELECT coord.complete(id, token, '{\"ok\": 1}') FROM coord.claim('fragile', 1)" >/dev/null
ctl await "$idd"
check "await a done job: exit 0, its result" eq "$rc:$out" "0:job $idd done: {\"ok\": 1}"
ctl await "$idd" --json
check "--json: state, result, error" eq "$(json 'j["id"], j["state"], j["result"], j["error"]')" "($idd, 'done', {'ok': 1}, None)"
ctl await "$id3"
check "await a cancelled job: exit 1" eq "$rc:$out" "1:job $id3 cancelled"
as "Nobody Special" await "$idd"
check "await by a role without a grant: exit 3" eq "$rc" 3

echo "== pause, resume, stats"
ctl pause mail
check "pause: exit 0" eq "$rc:$out" "0:queue mail paused until resumed"
ctl pause mail --until '2099-01-01 00:00+00' --json
check "pause again: changed false, until" eq "$rc:$(json 'j["changed"], j["paused"], j["until"][:4]')" "0:(False, True, '2099')"
ctl pause mail --key tenant-1
check "pause a key" eq "$rc:$out" "0:key tenant-1 of queue mail paused until resumed"
ctl stats --json
check "stats --json: the queue paused, its paused key" \
  eq "$(json '[(q["queue"], q["ready"], q["paused_until"][:4], q["paused_keys"]) for q in j if q["queue"] == "mail"]')" "[('mail', 3, '2099', 1)]"
ctl stats
check "stats: a table with a row per queue" eq "$rc:$(grep -cE '^mail +3 ' <<<"$out")" 0:1
ctl resume mail
check "resume: exit 0" eq "$rc:$out" "0:queue mail resumed"
ctl resume mail --json
check "resume again: changed false" eq "$rc:$(json 'j["changed"]')" "0:False"
ctl resume mail --key tenant-1
check "resume the key" eq "$rc:$out" "0:key tenant-1 of queue mail resumed"
ctl resume no_such_queue
check "resume an unknown queue: exit 1" eq "$rc" 1
ctl pause mail --until 'not a time'
check "pause --until not a time: exit 1 (the server's)" eq "$rc" 1
as watcher pause mail
check "a monitor may not pause: exit 3" eq "$rc:$(grep -c 'GRANT coord_admin TO watcher;' <<<"$err")" 3:1
as watcher stats
check "a monitor reads stats: exit 0" eq "$rc" 0
as producer stats
check "a worker may not: exit 3 naming coord_monitor" eq "$rc:$(grep -c 'GRANT coord_monitor TO producer;' <<<"$err")" 3:1

echo "== connection: -d, PG* variables, no password printed"
PGDATABASE=agent_test ctl stats
check "PG* variables" eq "$rc" 0
ctl -d "host=$PGHOST port=$PGPORT dbname=no_such_db user=postgres password=Sekr1tPassw0rd" stats
check "a failed connection: exit 1" eq "$rc" 1
check "  the password is not printed" eq "$(grep -c 'Sekr1tPassw0rd' <<<"$out$err" || true)" 0
ctl -d "postgresql://postgres:Sekr1tPassw0rd@/no_such_db?host=$PGHOST&port=$PGPORT" jobs
check "a URI's password neither" eq "$rc:$(grep -c 'Sekr1tPassw0rd' <<<"$out$err" || true)" 1:0
ctl -d "postgresql://postgres:Sekr1t%zzPassw0rd@/agent_test?host=$PGHOST" stats
check "libpq's error quoting a bad URI: said, the password masked" \
  eq "$rc:$(grep -c 'invalid percent-encoded token' <<<"$err"):$(grep -c 'Sekr1t' <<<"$out$err" || true)" 1:1:0
ctl -d "dbname=agent_test password='Sekr1tPassw0rd" stats
check "a connection string libpq refuses: exit 1, no password" eq "$rc:$(grep -c 'Sekr1tPassw0rd' <<<"$out$err" || true)" 1:0
ctl -d "dbname=postgres" stats
check "a database without pg_coord: exit 1" eq "$rc" 1

finish "coordctl_jobs: $CHECKS checks passed"
