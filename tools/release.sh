#!/usr/bin/env bash
# tools/release.sh: a release's file changes, done the same way each time.
# It edits the working tree only: it commits, tags and uploads nothing.
#
#   tools/release.sh freeze [--date YYYY-MM-DD]
#       Releases the control file's default_version V (in development):
#       - sql/pg_coord--V.sql, built from the fragments (sql/parts/), becomes
#         a committed file (its line leaves .gitignore), and it and every
#         update script to V are added to sql/released.sha256 (the Makefile
#         then installs it as it is, and test/static/released.py fails when
#         the fragments no longer make it);
#       - META.json.in's release_status becomes stable (META.json made again);
#       - CHANGELOG.md's "## V (unreleased)" gets the date (default today,
#         UTC), and debian/changelog's entry V-N its time stamp;
#       then runs test/static/released.py and test/static/pgxn_meta.py, and
#       prints what to do next (commit, tag vV, make dist).
#
#   tools/release.sh open NEXT
#       After a release V, opens NEXT for the next SQL change: the control
#       file's default_version, sql/pg_coord--V--NEXT.sql (hand-written, empty
#       but for its header), NEXT's built script in .gitignore, release_status
#       unstable, "## NEXT (unreleased)" in CHANGELOG.md, a debian/changelog
#       entry NEXT-1; then runs test/static/released.py.
#
# Both refuse a tree with uncommitted changes to tracked files (the release
# commit holds the release and nothing else) and check their preconditions
# before they change anything.  Needs git, python3, pg_config (make builds
# the install script through PGXS).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
die() { printf 'release: %s\n' "$*" >&2; exit 1; }
say() { printf 'release: %s\n' "$*"; }

semver_re='^[0-9]+\.[0-9]+\.[0-9]+$'
vkey() { awk -F. '{ printf "%06d%06d%06d\n", $1, $2, $3 }' <<<"$1"; }
dev=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" pg_coord.control)
[[ $dev =~ $semver_re ]] || die "pg_coord.control: no default_version x.y.z"
# the newest released version: the newest pg_coord--V.sql in sql/released.sha256
newest=$(sed -n 's/^[0-9a-f]\{64\}  sql\/pg_coord--\([0-9.]*\)\.sql$/\1/p' sql/released.sha256 |
         while read -r v; do echo "$(vkey "$v") $v"; done | sort | tail -1 | cut -d' ' -f2)
[ -n "$newest" ] || die "sql/released.sha256 names no released install script"

clean_tree() {
  git rev-parse --is-inside-work-tree >/dev/null 2>&1 || die "not a git checkout"
  git diff --quiet HEAD -- || die "uncommitted changes to tracked files: commit or stash them first"
}

checks() {   # the static checks that know about releases
  local c rc=0
  for c in "$@"; do
    python3 "test/static/$c" . | tail -1 || rc=1
  done
  return $rc
}

# META.json.in's release_status: set_status VALUE
set_status() {
  grep -q '^   "release_status": "[a-z]*",$' META.json.in || die "META.json.in: no release_status line"
  sed -i "s/^   \"release_status\": \"[a-z]*\",\$/   \"release_status\": \"$1\",/" META.json.in
  make -s META.json >/dev/null
}

freeze() {
  local date
  date=$(date -u +%F)
  while [ $# -gt 0 ]; do
    case $1 in
      --date) date=${2:-}; shift 2 || die "--date needs YYYY-MM-DD" ;;
      *) die "freeze: unknown argument $1" ;;
    esac
  done
  [[ $date =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]] && date -u -d "$date" >/dev/null 2>&1 || die "--date $date is not YYYY-MM-DD"
  clean_tree
  [ "$dev" != "$newest" ] || die "$dev is already released (sql/released.sha256); open the next one: tools/release.sh open NEXT"
  [ -f "sql/pg_coord--$newest--$dev.sql" ] || die "no update script sql/pg_coord--$newest--$dev.sql"
  grep -q "^## $dev (unreleased)\$" CHANGELOG.md || die "CHANGELOG.md has no heading '## $dev (unreleased)'"
  local deb_first
  deb_first=$(head -1 debian/changelog)
  [[ $deb_first == "pg-coord ($dev-"* ]] || die "debian/changelog's first entry is not $dev-N: $deb_first"
  python3 test/static/released.py . >/dev/null || die "test/static/released.py fails before the freeze"

  # the install script as the fragments make it now
  rm -f "sql/pg_coord--$dev.sql"
  make -s "sql/pg_coord--$dev.sql" >/dev/null
  [ -s "sql/pg_coord--$dev.sql" ] || die "make did not build sql/pg_coord--$dev.sql"
  sed -i "\\|^/sql/pg_coord--$dev\\.sql\$|d" .gitignore

  local f files=("sql/pg_coord--$dev.sql")
  for f in sql/pg_coord--*--"$dev".sql; do files+=("$f"); done
  for f in "${files[@]}"; do
    grep -q " $f\$" sql/released.sha256 || sha256sum "$f" >>sql/released.sha256
  done
  say "frozen: ${files[*]} (sql/released.sha256)"

  set_status stable
  sed -i "s/^## $dev (unreleased)\$/## $dev ($date)/" CHANGELOG.md
  # debian/changelog: the first entry's trailer line gets the release's time
  local stamp
  stamp=$(LC_ALL=C date -u -R -d "$date $(date -u +%T)")
  awk -v stamp="$stamp" '!done && /^ -- / { sub(/>  .*$/, ">  " stamp); done = 1 } { print }' \
    debian/changelog >debian/changelog.new && mv debian/changelog.new debian/changelog
  say "META.json(.in) release_status stable; CHANGELOG.md: ## $dev ($date); debian/changelog: $stamp"

  checks released.py pgxn_meta.py || die "a check fails after the freeze (above): git checkout -- . && git clean -n to undo"
  cat <<EOF
release: $dev is frozen in the working tree.  Next:
  git add -A sql/ .gitignore META.json META.json.in CHANGELOG.md debian/changelog
  git commit -m "Release $dev"
  git tag -a v$dev -m "pg_coord $dev"
  make dist            # pg_coord-$dev.zip from the tag, checked by test/static/pgxn_meta.py
  make deb             # postgresql-NN-pg-coord_$dev-N and coord-agent_$dev-N
The next SQL change first opens the next version: tools/release.sh open NEXT.
EOF
}

open_next() {
  local next=${1:-}
  [[ $next =~ $semver_re ]] || die "open: NEXT must be x.y.z"
  clean_tree
  [ "$dev" = "$newest" ] || die "$dev is not released yet (tools/release.sh freeze first)"
  [ "$(vkey "$next")" \> "$(vkey "$dev")" ] || die "$next is not newer than $dev"
  local up="sql/pg_coord--$dev--$next.sql"
  [ ! -e "$up" ] || die "$up exists already"

  sed -i "s/^default_version *= *'$dev'\$/default_version = '$next'/" pg_coord.control
  grep -q "^default_version = '$next'\$" pg_coord.control || die "pg_coord.control: default_version not changed"
  cat >"$up" <<EOF
-- pg_coord $dev -> $next: written by hand.  Every change to the catalog
-- after the $dev release goes here and into the fragments under sql/parts/
-- (which build the $next install script); test/upgrade/upgrade_and_dump.sh
-- checks that an updated catalog matches a fresh $next install object for
-- object.  Frozen once $next is released.

\\echo Use "ALTER EXTENSION pg_coord UPDATE TO '$next'" to load this file. \\quit

-- No catalog change yet: the update only moves the version, which the
-- $next library checks before it serves a database.
EOF
  # the built install script of the version in development is not committed
  if grep -q '^# built from sql/parts/' .gitignore; then
    sed -i "/^# built from sql\\/parts\\//a /sql/pg_coord--$next.sql" .gitignore
  else
    printf '/sql/pg_coord--%s.sql\n' "$next" >>.gitignore
  fi
  set_status unstable
  awk -v h="## $next (unreleased)" '!done && /^## / { print h; print ""; done = 1 } { print }' \
    CHANGELOG.md >CHANGELOG.md.new && mv CHANGELOG.md.new CHANGELOG.md
  local maint
  maint=$(sed -n '0,/^ -- /s/^ -- \(.*>\)  .*/\1/p' debian/changelog)
  { printf 'pg-coord (%s-1) unstable; urgency=medium\n\n  * pg_coord %s, in development.\n\n -- %s  %s\n\n' \
      "$next" "$next" "$maint" "$(LC_ALL=C date -u -R)"
    cat debian/changelog; } >debian/changelog.new && mv debian/changelog.new debian/changelog
  say "opened $next: pg_coord.control, $up, .gitignore, META.json(.in) unstable, CHANGELOG.md, debian/changelog"
  checks released.py || die "test/static/released.py fails after opening $next (above)"
  echo "release: commit it (\"Open $next\"), then write the SQL change into sql/parts/ and $up."
}

case ${1:-} in
  freeze) shift; freeze "$@" ;;
  open)   shift; open_next "$@" ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
