#!/usr/bin/env bash
# S3 crawler, psql/bash flavour (crawler.py is the same in Python).
#
#   crawler.sh -n NAME -f URLFILE [-r ROUND] [-s STALE_AFTER] [-S START_MS]
#
# URLFILE has one URL a line, the same file for every crawler.  The first URL
# is the start page: every crawler asks for it first; the others are asked
# for in an order shuffled per process.  For each URL:
#
#   coord.request(url, stale_after)  blocks while another live crawler owns it
#     true:  a page: fetch it (simulated: 50-200 ms, START_MS for the start
#            page), then record the fetch and coord.mark_done(url) in one
#            transaction; a .pdf: queue it for a downloader and
#            coord.mark_queued(url) in one transaction
#     false: queued or done by someone else (and not stale): skip it
#
# Ownership of a URL belongs to the database session, so the whole crawl runs
# in one psql session kept open as a coprocess (request -> fetch -> mark_done
# must not cross connections).  If this script is killed, psql goes with it
# (same process group) and the first crawler waiting for the URL gets true.
# Connects with the usual PG* environment variables.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../s1/psql_session.sh
. "$(dirname "${BASH_SOURCE[0]}")/../s1/psql_session.sh"   # sql_open / sql / sql_close

name='' urlfile='' round=1 stale='' start_ms=''
while getopts n:f:r:s:S: opt; do
  case $opt in
    n) name=$OPTARG ;;  f) urlfile=$OPTARG ;;  r) round=$OPTARG ;;
    s) stale=$OPTARG ;; S) start_ms=$OPTARG ;;
    *) exit 2 ;;
  esac
done
[[ $name =~ ^[A-Za-z0-9_.-]+$ && -r $urlfile && $round =~ ^[0-9]+$ && $start_ms =~ ^[0-9]*$ ]] || {
  echo "usage: $0 -n NAME -f URLFILE [-r ROUND] [-s STALE_AFTER] [-S START_MS]" >&2
  exit 2
}

log() {
  local t=$EPOCHREALTIME frac
  frac=${t#*.}
  printf '%(%H:%M:%S)T.%s %s [bash] %s\n' "${t%.*}" "${frac:0:3}" "$name" "$*"
}
die() { log "ERROR: $*"; exit 1; }

# No command substitutions below: on a busy machine every fork costs
# milliseconds per URL.
lit() { printf -v "$1" "'%s'" "${2//\'/\'\'}"; }   # VAR TEXT: an SQL string literal (never paste raw)
now_us() { local t=$EPOCHREALTIME; NOW_US=$(( 10#${t%.*} * 1000000 + 10#${t#*.} )); }

stale_sql='' name_sql=''
if [ -n "$stale" ]; then lit stale_sql "$stale"; stale_sql+='::interval'; else stale_sql=NULL; fi
lit name_sql "$name"

fetched=0 queued=0 answered_false=0

crawl() {   # URL FETCH_MS
  local url=$1 ms=$2 t0 ok at waited url_sql at_sql secs
  lit url_sql "$url"
  now_us; t0=$NOW_US
  sql "SELECT coord.request($url_sql, stale_after => $stale_sql), clock_timestamp();" ||
    die "session lost while requesting $url"
  IFS='|' read -r ok at <<<"$ROW"
  now_us; waited=$(( (NOW_US - t0) / 1000 ))
  lit at_sql "$at"
  if [ "$ok" != t ]; then
    log "request $url -> false after $waited ms"
    answered_false=$((answered_false + 1))
    return 0
  fi
  log "request $url -> true after $waited ms"
  if [[ $url == *.pdf ]]; then
    sql "BEGIN;
         INSERT INTO s3.downloads (url, round, queued_by, owned_at, waited_ms)
         VALUES ($url_sql, $round, $name_sql, $at_sql, $waited);
         SELECT coord.mark_queued($url_sql);
         COMMIT;" || die "session lost while queueing $url"
    queued=$((queued + 1))
    log "queued $url for download"
  else
    printf -v secs '%d.%03d' $((ms / 1000)) $((ms % 1000))
    sleep "$secs"   # the "download"
    # the record and mark_done commit together: waiters answer false from here on
    sql "BEGIN;
         INSERT INTO s3.fetches (url, round, crawler, via, owned_at, waited_ms, fetch_ms)
         VALUES ($url_sql, $round, $name_sql, 'crawler', $at_sql, $waited, $ms);
         SELECT coord.mark_done($url_sql);
         COMMIT;" || die "session lost while recording $url"
    fetched=$((fetched + 1))
    log "fetched $url in $ms ms"
  fi
}

mapfile -t urls < <(grep -v '^[[:space:]]*$' "$urlfile")
[ ${#urls[@]} -gt 0 ] || die "no URLs in $urlfile"
rest=()
if [ ${#urls[@]} -gt 1 ]; then mapfile -t rest < <(printf '%s\n' "${urls[@]:1}" | shuf); fi

export PGAPPNAME="s3:crawler:$name"   # shows in pg_stat_activity; the downloader looks for it
# shellcheck disable=SC2119  # no psql options: the PG* environment says where
sql_open
log "round $round, ${#urls[@]} URLs, stale_after ${stale:-never}"
crawl "${urls[0]}" "${start_ms:-$((50 + RANDOM % 151))}"
for url in "${rest[@]}"; do
  crawl "$url" $((50 + RANDOM % 151))
done
log "finished: ${#urls[@]} requests, $fetched fetched, $queued queued, $answered_false false"
sql_close
