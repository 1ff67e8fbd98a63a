#!/usr/bin/env bash
# The standalone tests of src/partitions/partitions_assign.c (the pure
# assignment of partition groups), built and run by test/harness.sh.
here=$(cd "$(dirname "$0")" && pwd)
exec bash "$here/../harness.sh" "partition assignment" "$here/assign_test.c" "$here/../../src/partitions/partitions_assign.c" -DCOORD_ASSIGN_STANDALONE -lm
