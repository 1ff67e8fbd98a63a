#!/usr/bin/env bash
# The docs suite of make test, on the running private cluster (the PG*
# environment of test/lib.sh, a superuser): the SQL examples of README.md
# and docs/ (examples.py, one TAP line per page, each page in a fresh
# database), the runner's own cases (examples.py --self-test: pages that
# must fail do), and docs/reference.md against the catalog of the installed
# extension (reference.py), and SECURITY.md naming every granted function
# and view (security.py).  Exits non-zero when anything failed.
# By hand, after make install, with PGHOST, PGPORT and PGUSER set:
#   bash test/docs/run.sh
set -u
cd "$(dirname "$0")/../.."
py=${PYTHON:-python3}
rc=0
"$py" test/docs/examples.py || rc=1
"$py" test/docs/examples.py --self-test || rc=1
"$py" test/docs/reference.py || rc=1
"$py" test/docs/security.py || rc=1
exit $rc
