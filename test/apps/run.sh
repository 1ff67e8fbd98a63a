#!/usr/bin/env bash
# The standalone tests of src/apps/apps_periods.c (the pure part of
# coord.define_app), built and run by test/harness.sh.
here=$(cd "$(dirname "$0")" && pwd)
exec bash "$here/../harness.sh" "apps periods" "$here/periods_test.c" "$here/../../src/apps/apps_periods.c"
