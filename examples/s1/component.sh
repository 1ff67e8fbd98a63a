#!/usr/bin/env bash
# S1 autonomous component, psql/bash flavour (component.py is the same in Python).
#
#   component.sh -c COMPONENT -p 1|2 -w WORKER [-t WORK_MS] [-n CANDIDATES] [-i INDEX_TIMEOUT_S] [-o]
#
# One run is what cron started once in the original; without -o the worker
# repeats runs until the index has nothing left for COMPONENT.
#
#   procedure 1: take the index lock /SBOI/<component>, read candidate batches,
#                lock the first free one with coord.lock_first, release the
#                index lock, then work on that one batch
#   procedure 2: take the index lock and keep it while working through every
#                batch, locking each in turn
#
# Work on a batch: re-check it is not done yet (a candidate read earlier can
# be stale), get a fencing token, "work", store the result with the token,
# unlock.  Connects with the usual PG* environment variables.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/psql_session.sh"

component='' procedure='' worker='' work_ms=300 candidates=10 index_timeout=30 once=0
while getopts c:p:w:t:n:i:o opt; do
  case $opt in
    c) component=$OPTARG ;;  p) procedure=$OPTARG ;;  w) worker=$OPTARG ;;
    t) work_ms=$OPTARG ;;    n) candidates=$OPTARG ;; i) index_timeout=$OPTARG ;;
    o) once=1 ;;
    *) exit 2 ;;
  esac
done
# These go into SQL text and lock paths: keep them to plain names and numbers.
[[ $component =~ ^[a-z0-9_-]+$ && $worker =~ ^[A-Za-z0-9_.-]+$ && $procedure =~ ^[12]$ &&
   $work_ms =~ ^[0-9]+$ && $candidates =~ ^[0-9]+$ && $index_timeout =~ ^[0-9]+$ ]] || {
  echo "usage: $0 -c COMPONENT -p 1|2 -w WORKER [-t WORK_MS] [-n CANDIDATES] [-i INDEX_TIMEOUT_S] [-o]" >&2
  exit 2
}
index="/SBOI/$component"

log() {
  local t=$EPOCHREALTIME frac
  frac=${t#*.}
  printf '%(%H:%M:%S)T.%s %s [bash] %s\n' "${t%.*}" "${frac:0:3}" "$worker" "$*"
}
die() { log "ERROR: $*"; exit 1; }

# Reads the index and locks the first free candidate.  Sets ncand (how many
# unprocessed batches were read) and path (the one locked, empty if all busy).
pick_batch() {
  sql "SELECT cardinality(c), coord.lock_first(c) FROM s1.candidates('$component', $candidates) AS c;" ||
    die "session lost while reading the index"
  IFS='|' read -r ncand path <<<"$ROW"
}

# Works on a batch whose lock this session holds, and releases it.
work_on() {
  local path=$1 token ms
  sql "SELECT s1.processed('$path');" || die "session lost"
  if [ "$ROW" = t ]; then
    # processed by someone else between reading the index and locking it
    log "$path is done already, skipping"
  else
    sql "SELECT coord.fence('$path');" || die "session lost"
    token=$ROW
    sql "SELECT s1.begin_attempt('$path', $token, '$worker');" || die "session lost"
    log "working on $path (token $token)"
    ms=$(( work_ms * (80 + RANDOM % 41) / 100 ))   # +-20%, so workers drift apart
    sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
    sql "SELECT s1.store_result('$path', $token, '$worker', 'checksum of ${path##*/} by $worker');" ||
      die "session lost"
    if [ "$ROW" = t ]; then log "stored $path"; else log "store REJECTED $path: token $token is stale"; fi
  fi
  sql "SELECT coord.unlock('$path');" || die "session lost"
}

# One run of procedure 1.  Returns 0 after a batch, 1 if nothing is left, 2 if busy.
run_procedure_1() {
  sql "SELECT coord.lock('$index', interval '$index_timeout seconds');" || die "session lost"
  [ "$ROW" = t ] || { log "index lock $index busy for ${index_timeout}s"; return 2; }
  pick_batch
  sql "SELECT coord.unlock('$index');" || die "session lost"
  [ "$ncand" -gt 0 ] || return 1
  [ -n "$path" ] || return 2          # every candidate is being worked on
  work_on "$path"
}

# One run of procedure 2.  Returns 0 after some batches, 1 if nothing was left, 2 if busy.
run_procedure_2() {
  local n_done=0
  sql "SELECT coord.lock('$index', interval '$index_timeout seconds');" || die "session lost"
  [ "$ROW" = t ] || { log "index lock $index busy for ${index_timeout}s"; return 2; }
  log "holding $index"
  while pick_batch && [ "$ncand" -gt 0 ]; do
    if [ -z "$path" ]; then sleep 0.05; continue; fi   # a procedure-1 worker has it
    work_on "$path"
    n_done=$((n_done + 1))
  done
  sql "SELECT coord.unlock('$index');" || die "session lost"
  log "released $index after $n_done batches"
  [ "$n_done" -gt 0 ] && return 0 || return 1
}

export PGAPPNAME="s1:$worker"   # shows in coord.locks and pg_stat_activity
sql_open
log "component $component, procedure $procedure"
while :; do
  rc=0
  "run_procedure_$procedure" || rc=$?
  [ "$once" = 1 ] && break
  [ "$rc" = 1 ] && break
  [ "$rc" = 2 ] && sleep 0.1
done
if [ "$rc" = 1 ]; then log "nothing left, exiting"; else log "run done, exiting"; fi
sql_close
