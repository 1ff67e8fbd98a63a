# One long-lived psql session for a bash script, as a coprocess.  Session
# locks live as long as the session, so a bash worker must keep one
# connection open across its statements instead of running psql per step.
#
#   . psql_session.sh
#   sql_open [psql options]       # connects (PG* environment variables apply)
#   sql "SELECT 1, 'a';"          # rows in ROWS[] ('|' between columns), first in ROW
#   sql_close
#
# An SQL error ends the session (ON_ERROR_STOP), and sql then returns 1:
# like a crashed component, the script is expected to give up, and
# PostgreSQL releases everything the session held.

sql_open() {
  trap '' PIPE   # a write to a psql that has exited fails instead of killing us
  coproc SQL_SESSION { exec psql -qtAX -v ON_ERROR_STOP=1 "$@"; }
  # keep our own copies: bash clears SQL_SESSION[] when the coprocess exits
  SQL_IN=${SQL_SESSION[1]} SQL_OUT=${SQL_SESSION[0]} SQL_PID=$SQL_SESSION_PID
}

# The marker line tells where a statement's output ends.
sql() {
  ROWS=() ROW=''
  { printf '%s\n\\echo __sql_done__\n' "$1" >&"$SQL_IN"; } 2>/dev/null || return 1
  local line
  while IFS= read -r line <&"$SQL_OUT"; do
    if [[ $line == __sql_done__ ]]; then
      ROW=${ROWS[0]-}
      return 0
    fi
    ROWS+=("$line")
  done
  return 1   # psql is gone: an error, or the server ended the session
}

sql_close() {
  # end of input makes psql quit; then collect it
  [ -n "${SQL_IN:-}" ] && { exec {SQL_IN}>&- {SQL_OUT}<&- ; } 2>/dev/null
  [ -n "${SQL_PID:-}" ] && wait "$SQL_PID" 2>/dev/null
  SQL_IN='' SQL_PID=''
  return 0
}
