#!/bin/sh
# gpu_multi.sh — several GPUs in one server, on a host of two or more (in one call, about 9 minutes
# on two H100s): builds the server and the GPU tests, and a debug copy with the fault switch; runs
# the GPU suites on each device alone and the API suite on the GPU backend over every device; the
# service on the 2048^2 photograph as JPEG q90 and as PNG, edge, PNG out, 128 connections, with one
# GPU and with all of them (service_*.md: req/s, p50/p99, server CPU per request); and
# tests/bench/fence_load.py: one device poisoned under that load, then every device. Logs in $OUT.
# usage (repo root, .debs carried as for gpu_host.sh): sh tests/gpu_host/gpu_multi.sh
# Knobs: BUILD (build-dev), ARCHS (nvcc -gencode list), PYTHON, CONNS (128), DURATION (8s), WORK
# (scratch: /tmp/edged-multi), FAULT (spin; or illegal, trap, assert), FAULT_AT (the job of GPU 1 that
# faults: 3000), SCALING_FORMATS (jpeg png; empty: none), SCALING_GPUS (the --gpus lists to compare:
# "0 all"), FENCE_GPUS (the --gpus of the fault under load: all), SKIP_SUITES=1 (only the
# service and the fault under load), SKIP_SERVICE=1 (only the builds and the suites), SKIP_FENCE=1.
set -u
OUT=${OUT:-out/gpu}
BUILD=${BUILD:-build-dev}
ARCHS=${ARCHS:--gencode arch=compute_90,code=sm_90}
PYTHON=${PYTHON:-python3}
CONNS=${CONNS:-128}
DURATION=${DURATION:-8s}
work=${WORK:-/tmp/edged-multi}
mkdir -p "$OUT" "$work/photos"
log="$OUT/multi.log"
: > "$log"

step() { # step NAME SECONDS CMD...: runs CMD with a time limit and logs its status line
    name=$1 limit=$2
    shift 2
    t0=$(date +%s)
    timeout "$limit" "$@"
    rc=$?
    [ "$rc" = 124 ] && echo "== $name: FAILED: TIMED OUT after $limit s" | tee -a "$log" >&2 ||
        echo "== $name: exit $rc in $(($(date +%s) - t0)) s" | tee -a "$log" >&2
    return $rc
}

if [ -d .debs ]; then
    for f in .debs/*.deb; do dpkg -x "$f" /opt/deps; done
    export CPPFLAGS="-I/opt/deps/usr/include -I/opt/deps/usr/include/cjson"
    export LDFLAGS="-L/opt/deps/usr/lib/x86_64-linux-gnu -Wl,-rpath,/opt/deps/usr/lib/x86_64-linux-gnu"
    export WRK=/opt/deps/usr/bin/wrk LD_LIBRARY_PATH="/opt/deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
{ date -u; nvidia-smi -L; nproc; } | tee -a "$log"
ngpu=$(nvidia-smi -L | grep -c '^GPU ')
# whether a sticky error on one device reaches the others in one process (it does: see the probe)
nvcc -O2 -std=c++17 -o "$work/sticky_probe" tests/gpu_host/sticky_probe.cu >> "$log" 2>&1 &&
    "$work/sticky_probe" | tee "$OUT/sticky_probe.txt" | tee -a "$log"

( "$PYTHON" tests/bench/photos.py --out "$work/photos" --sizes 2048 &&
  "$PYTHON" tests/bench/photos.py --out "$work/photos" --sizes 2048 --format jpeg ) > "$work/photos.log" 2>&1 &
photos=$!
tests="$BUILD/tests/test_gpu $BUILD/tests/test_gpu_jpeg $BUILD/tests/test_gpu_png $BUILD/tests/test_worker_mock"
# shellcheck disable=SC2086
step build 240 make -j"$(nproc)" BUILD="$BUILD" CUDA_ARCHS="$ARCHS" NPP=0 "$BUILD/edged" $tests >> "$log" 2>&1 ||
    { tail -30 "$log"; exit 1; }
# The debug build (the fault switch), from scratch: about a minute with every core.
step build-faults 150 make -j"$(nproc)" BUILD=build-faults DEBUG=1 CUDA_ARCHS="$ARCHS" NPP=0 build-faults/edged \
    >> "$log" 2>&1 || tail -30 "$log"
nm build-faults/edged | grep -q gfault_kernel || echo "build-faults/edged has no fault switch" | tee -a "$log"

if [ "${SKIP_SUITES:-0}" != 1 ]; then
    # test_gpu drives device 0, then the quick set on every further device in the same process
    step test_gpu-all 150 env EDGED_GPU_QUICK=1 EDGED_REQUIRE_GPU=1 "$BUILD/tests/test_gpu" > "$OUT/test_gpu_all.log" 2>&1
    grep -E "^device|passed, [0-9]+ failed" "$OUT/test_gpu_all.log" | tail -n 4 | tee -a "$log"
    grep -m 10 FAIL "$OUT/test_gpu_all.log" | tee -a "$log"
    d=0
    while [ "$d" -lt "$ngpu" ]; do
        for t in test_gpu_jpeg test_gpu_png; do
            step "$t-gpu$d" 120 env CUDA_VISIBLE_DEVICES=$d EDGED_PNGSUITE="$PWD/.devrun/pngsuite" \
                EDGED_REQUIRE_GPU=1 "$BUILD/tests/$t" > "$OUT/${t}_gpu$d.log" 2>&1
            echo "$t on GPU $d: $(grep -E "passed, [0-9]+ failed" "$OUT/${t}_gpu$d.log" | tail -n 1)" | tee -a "$log"
        done
        d=$((d + 1))
    done
    step pytest-api-all-gpus 200 env EDGED_TEST_BACKEND=gpu EDGED_BIN="$BUILD/edged" EDGED_REQUIRE_GPU=1 \
        EDGED_PNGSUITE="$PWD/.devrun/pngsuite" "$PYTHON" -m pytest -q -rfs tests/system/test_api.py tests/system/test_observability.py \
        tests/system/test_gpu_png.py > "$OUT/pytest_multi.log" 2>&1
    tail -n 3 "$OUT/pytest_multi.log" | tee -a "$log"
    step gpu-faults 200 env EDGED_FAULT_BIN=build-faults/edged "$PYTHON" -m pytest -q -rs -s tests/system/test_gpu_faults.py \
        > "$OUT/faults_pytest.log" 2>&1
    grep -a -E "passed|failed|FAILED|retried" "$OUT/faults_pytest.log" | tail -n 8 | tee -a "$log"
fi

[ "${SKIP_SERVICE:-0}" = 1 ] && exit 0
wait "$photos" || { cat "$work/photos.log"; exit 1; }
for fmt in ${SCALING_FORMATS-jpeg png}; do
    for g in ${SCALING_GPUS:-0 all}; do
        step "service-$fmt-gpus-$g" 150 env EDGED_GPUS=$g BIN="$BUILD/edged" BACKEND=gpu SIZES=2048 FILTERS=edge \
            CONNS="$CONNS" DURATION="$DURATION" WARMUP=3s INPUT_FORMAT="$fmt" INPUTS="$work/photos" \
            OUT="$work/service_${fmt}_$g" PYTHON="$PYTHON" sh tests/bench/service.sh > "$OUT/service_${fmt}_gpus_$g.md" 2>&1
        tail -n 6 "$OUT/service_${fmt}_gpus_$g.md" | tee -a "$log"
    done
done
[ "${SKIP_FENCE:-0}" = 1 ] && exit 0
step fence-load 200 "$PYTHON" tests/bench/fence_load.py --bin build-faults/edged --input "$work/photos/photo_2048.jpg" \
    --fault "${FAULT:-spin}" --gpus "${FENCE_GPUS:-all}" --conns "$CONNS" --duration 12 --fault-at "${FAULT_AT:-3000}" --last > "$OUT/fence_load.json" 2>&1
cat "$OUT/fence_load.json" | tee -a "$log"
