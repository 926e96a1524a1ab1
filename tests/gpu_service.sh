#!/bin/sh
# gpu_service.sh — the service half of a GPU-host pass (after tests/gpu_host.sh built $BUILD):
# every test program and pytest suite with the GPU backend, then the stream-overlap demo
# (64 concurrent 2048² requests, 4 streams vs 1). Logs under $OUT.
# usage (repo root, on the GPU host): BUILD=build-dev sh tests/gpu_service.sh
set -u
OUT=${OUT:-out/gpu}
BUILD=${BUILD:-build-dev}
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT"
export EDGED_TEST_BACKEND=gpu EDGED_BIN="$BUILD/edged" EDGED_PNGSUITE=${EDGED_PNGSUITE:-.devrun/pngsuite}
t0=$(date +%s)
timeout 300 env PYTHON="$PYTHON" BUILD="$BUILD" sh tests/run_tests.sh > "$OUT/suite_gpu.log" 2>&1
echo "== suite (gpu backend): exit $? in $(($(date +%s) - t0)) s"
grep -E "passed|failed|FAIL" "$OUT/suite_gpu.log" | head -n 40
t0=$(date +%s)
timeout 240 "$PYTHON" tests/bench/overlap.py --bin "$BUILD/edged" --streams 4,1 > "$OUT/overlap.log" 2>&1
echo "== overlap: exit $? in $(($(date +%s) - t0)) s"
cat "$OUT/overlap.log"
