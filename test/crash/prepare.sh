#!/usr/bin/env bash
# PREPARE TRANSACTION and pg_coord (issue 13, section 5), on a cluster of its
# own with max_prepared_transactions > 0 (the main test cluster has none, so
# there every PREPARE fails anyway).  Refused with 0A000 after a transaction
# took or let go of a pg_coord lock (session or transaction level), a request
# or a session-bound claim: those belong to the session, which a prepared
# transaction outlives.  Allowed after row-only work (enqueue, lease claim,
# complete), which COMMIT PREPARED then applies.  Exit 0 = pass.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
COORD_PGPORT=${COORD_PREPARE_PGPORT:-54351} coord_cluster_start
psql -qX -d postgres -c "ALTER SYSTEM SET max_prepared_transactions = 5" >/dev/null
as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -l "$COORD_TMP/server.log" -w -t 60 restart >/dev/null
psql -qX -d postgres -c "CREATE EXTENSION pg_coord" >/dev/null
checks=0
fail() { echo "FAIL: $*"; exit 1; }
q() { psql -qXAt -v ON_ERROR_STOP=1 -d postgres -c "$1"; }
# refused SQL...: the transaction SQL then PREPARE fails with 0A000, and nothing stays prepared
refused() {
  local what=$1 sql=$2 out
  out=$(psql -qXAt -d postgres -v VERBOSITY=verbose -c "BEGIN" -c "$sql" -c "PREPARE TRANSACTION 'p_$checks'" 2>&1)
  echo "$out" | grep -q "ERROR:  0A000: cannot PREPARE a transaction that took or let go of pg_coord" ||
    fail "$what: PREPARE not refused with 0A000: $out"
  [ "$(q "SELECT count(*) FROM pg_prepared_xacts")" = 0 ] || fail "$what: a transaction stayed prepared"
  checks=$((checks + 1))
}
refused "session lock" "SELECT coord.lock('/prep/a')"
refused "try_lock" "SELECT coord.try_lock('/prep/a')"
refused "transaction lock" "SELECT coord.xact_lock('/prep/a')"
refused "try_xact_lock" "SELECT coord.try_xact_lock('/prep/a')"
refused "lock_first" "SELECT coord.lock_first(ARRAY['/prep/b', '/prep/c'])"
refused "request" "SELECT coord.request('prep-key')"
q "SELECT coord.enqueue('prep', '{}')" >/dev/null
refused "session-bound claim" "SELECT count(*) FROM coord.claim('prep', 1, session_bound => true)"
# nothing of the refused transactions is left: another session takes the lock at once
[ "$(q "SELECT coord.try_lock('/prep/a') AND coord.try_xact_lock('/prep/b')")" = t ] || fail "a lock outlived its refused PREPARE"
checks=$((checks + 1))
# a session lock taken earlier, let go in the prepared transaction: refused too
out=$(psql -qXAt -d postgres -v VERBOSITY=verbose -c "SELECT coord.lock('/prep/held')" -c "BEGIN" -c "SELECT coord.unlock('/prep/held')" \
      -c "PREPARE TRANSACTION 'p_unlock'" 2>&1)
echo "$out" | grep -q "0A000" || fail "unlock: PREPARE not refused: $out"
checks=$((checks + 1))

# row-only work may be prepared, and COMMIT PREPARED applies it
q "SELECT coord.enqueue('prep2', '{\"n\": 1}')" >/dev/null
psql -qXAt -v ON_ERROR_STOP=1 -d postgres -c "BEGIN" -c "SELECT coord.enqueue('prep2', '{\"n\": 2}')" \
  -c "SELECT coord.complete(id, token) FROM coord.claim('prep2', 1, lease => '1 minute')" \
  -c "PREPARE TRANSACTION 'p_rows'" >/dev/null 2>&1 || fail "PREPARE after enqueue, lease claim and complete was refused"
[ "$(q "SELECT count(*) FROM pg_prepared_xacts")" = 1 ] || fail "the row-only transaction is not prepared"
q "COMMIT PREPARED 'p_rows'" >/dev/null || fail "COMMIT PREPARED"
[ "$(q "SELECT string_agg(state, ',' ORDER BY id) FROM coord.jobs WHERE queue = 'prep2'")" = "done,ready" ] ||
  fail "COMMIT PREPARED did not apply the enqueue and the completion"
checks=$((checks + 2))
echo "prepare: $checks checks passed; PREPARE TRANSACTION refused (0A000) after pg_coord locks, requests and session-bound claims, allowed after row-only work"
