#!/bin/sh
# edged.sh — $EDGED_VG_BIN (default build-vg/edged) under valgrind memcheck, for the pytest suites
# as EDGED_BIN (tests/valgrind/run.sh): memory errors and definite leaks make it exit 99, which the
# suites' clean-exit checks catch.
cd "$(dirname "$0")/../.." || exit 1
exec valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
    --show-leak-kinds=definite ${VALGRIND_OPTS:-} "${EDGED_VG_BIN:-build-vg/edged}" "$@"
