#!/bin/sh
# run_tests.sh — runs every test program in $BUILD/tests (built from tests/unit) and the pytest
# suites in tests/system, adds up their summary lines and prints the total. Exits 1 if any test
# failed or any program crashed.
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-python3}
out=tests/out
mkdir -p "$out"
tp=0 tf=0 ts=0 crashed=0

# add LINE: adds "N passed, N failed[, N skipped]" counts (pytest's wording too) to the totals.
add() {
    p=$(echo "$1" | grep -o '[0-9]\+ passed' | grep -o '[0-9]\+' || true)
    f=$(echo "$1" | grep -o '[0-9]\+ failed' | grep -o '[0-9]\+' || true)
    s=$(echo "$1" | grep -o '[0-9]\+ skipped' | grep -o '[0-9]\+' || true)
    e=$(echo "$1" | grep -o '[0-9]\+ errors\?' | grep -o '[0-9]\+' || true)
    tp=$((tp + ${p:-0})) tf=$((tf + ${f:-0} + ${e:-0})) ts=$((ts + ${s:-0}))
}

for t in "$BUILD"/tests/test_*; do
    case "$t" in *.o|*.d) continue ;; esac
    [ -x "$t" ] || continue
    name=$(basename "$t")
    "$t" > "$out/$name.log" 2>&1
    rc=$?
    line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$out/$name.log" | tail -n 1)
    printf '%-28s %s\n' "$name" "${line:-no summary (exit $rc)}"
    [ -n "$line" ] && add "$line"
    if [ $rc -ne 0 ] && [ -z "$line" ]; then crashed=$((crashed + 1)); tail -n 20 "$out/$name.log"; fi
    [ $rc -ne 0 ] && [ -n "$line" ] && grep -E 'FAIL' "$out/$name.log" | head -n 20
done

if ls tests/system/test_*.py >/dev/null 2>&1; then
    EDGED_BIN="$BUILD/edged" "$PYTHON" -m pytest -q -rs tests/system > "$out/pytest.log" 2>&1
    rc=$?
    line=$(grep -E '[0-9]+ (passed|failed|skipped|errors?)' "$out/pytest.log" | tail -n 1)
    printf '%-28s %s\n' "pytest" "${line:-no summary (exit $rc)}"
    [ -n "$line" ] && add "$line"
    [ $rc -ne 0 ] && [ $rc -ne 5 ] && tail -n 40 "$out/pytest.log"
    [ $rc -ne 0 ] && [ $rc -ne 5 ] && [ -z "$line" ] && crashed=$((crashed + 1))
fi

[ $crashed -eq 0 ] || echo "$crashed test program(s) ended without a summary line"
echo "total: $tp passed, $tf failed, $ts skipped"
[ $tf -eq 0 ] && [ $crashed -eq 0 ]
