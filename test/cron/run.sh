#!/usr/bin/env bash
# The standalone tests of src/schedules/cron.c, built and run by
# test/harness.sh.
here=$(cd "$(dirname "$0")" && pwd)
exec bash "$here/../harness.sh" cron "$here/cron_test.c" "$here/../../src/schedules/cron.c"
