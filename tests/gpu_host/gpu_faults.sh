#!/bin/sh
# gpu_faults.sh — the GPU fault cases of docs/reliability.md, G. Faults, on the GPU host, in one
# call: builds the debug binary (-DEDGED_DEBUG=1: the EDGED_FAULT switch; GPU=1) into $BUILD and
# runs tests/system/test_gpu_faults.py against it (illegal address, trap, device assert, spinning
# kernel, GPU out of memory for one job; on a host of two GPUs or more, one of two fenced while the
# other serves on). Under 3 minutes on an H100 host with 16 cores.
# usage (repo root, the .debs carried as for gpu_host.sh): sh tests/gpu_host/gpu_faults.sh
# Knobs: BUILD (build-faults), ARCHS (nvcc -gencode list), PYTHON (python3).
set -u
BUILD=${BUILD:-build-faults}
ARCHS=${ARCHS:--gencode arch=compute_90,code=sm_90}
PYTHON=${PYTHON:-python3}
OUT=${OUT:-out/gpu}
mkdir -p "$OUT"
log="$OUT/faults.log"
: > "$log"

# libmicrohttpd and cJSON are not installed there: unpack the carried .debs (as gpu_host.sh does).
if [ -d .debs ]; then
    for f in .debs/*.deb; do dpkg -x "$f" /opt/deps; done
    export CPPFLAGS="-I/opt/deps/usr/include -I/opt/deps/usr/include/cjson"
    export LDFLAGS="-L/opt/deps/usr/lib/x86_64-linux-gnu -Wl,-rpath,/opt/deps/usr/lib/x86_64-linux-gnu"
fi
nvidia-smi -L | tee -a "$log"

# Only the server binary: the fault switch lives in server/ops/fault.c and gpu/gconv_fault.cu.
t0=$(date +%s)
if ! timeout 150 make -j16 BUILD="$BUILD" GPU=1 NPP=0 CUDA_ARCHS="$ARCHS" CFLAGS="-O1 -g" \
        CPPFLAGS="${CPPFLAGS:-} -DEDGED_DEBUG=1" "$BUILD/edged" >> "$log" 2>&1; then
    tail -n 40 "$log"
    echo "gpu_faults: build failed"
    exit 1
fi
echo "== build: $(($(date +%s) - t0)) s" | tee -a "$log"
nm "$BUILD/edged" | grep -q gfault_kernel || { echo "gpu_faults: $BUILD/edged has no fault switch"; exit 1; }

EDGED_FAULT_BIN="$BUILD/edged" timeout 150 "$PYTHON" -m pytest -q -rs -s tests/system/test_gpu_faults.py \
    > "$OUT/faults_pytest.log" 2>&1
rc=$?
tee -a "$log" < "$OUT/faults_pytest.log"
echo "== tests: exit $rc, $(($(date +%s) - t0)) s in all" | tee -a "$log"
exit $rc
