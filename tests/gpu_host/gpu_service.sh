#!/bin/sh
# gpu_service.sh — the service half of a GPU-host pass (after $BUILD was built with GPU=1): every
# C test program, the API and CLI-vs-OpenCV suites and the per-device observability tests with the
# GPU backend, then the stream-overlap demo (64 concurrent 2048² requests, 4 streams vs 1). Logs
# under $OUT.
# usage (repo root, on the GPU host): BUILD=build-dev sh tests/gpu_host/gpu_service.sh
set -u
OUT=${OUT:-out/gpu}
BUILD=${BUILD:-build-dev}
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT"
export EDGED_TEST_BACKEND=gpu EDGED_BIN="$BUILD/edged" EDGED_REQUIRE_GPU=1
export EDGED_PNGSUITE=${EDGED_PNGSUITE:-.devrun/pngsuite}
log="$OUT/suite_gpu.log"
: > "$log"
for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    t0=$(date +%s)
    line=$(timeout 150 "$t" 2>>"$log" | tail -n 1)
    echo "$(basename "$t"): $line ($(($(date +%s) - t0)) s)" | tee -a "$log"
done
t0=$(date +%s)
timeout "${PYTEST_LIMIT:-200}" "$PYTHON" -m pytest -q -rs tests/system/test_api.py tests/system/test_cli_vs_opencv.py \
    tests/system/test_observability.py::test_gpu_devices \
    tests/system/test_observability.py::test_api_md_metrics_table_matches_the_server >> "$log" 2>&1
echo "== pytest api+cli_vs_opencv+device observability (gpu backend): exit $? in $(($(date +%s) - t0)) s"
grep -E "passed|failed|FAILED|Error" "$log" | tail -n 15
t0=$(date +%s)
timeout "${OVERLAP_LIMIT:-150}" "$PYTHON" tests/bench/overlap.py --bin "$BUILD/edged" --streams 4,1 > "$OUT/overlap.log" 2>&1
echo "== overlap: exit $? in $(($(date +%s) - t0)) s"
cat "$OUT/overlap.log"
