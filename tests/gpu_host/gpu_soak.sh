#!/bin/sh
# gpu_soak.sh — the load and overload run (tests/bench/soak.py, docs/reliability.md, F. Load)
# against the GPU backend on the GPU host. A full run takes ~13 minutes, longer than one device command may run,
# so `start` builds and launches it in its own session (setsid: it outlives the command) and
# `wait SECONDS` (the next command, issued at once: the host is given back after ~30 s idle)
# waits for it up to SECONDS, then copies its log and JSON to $OUT.
# usage (repo root, .debs carried): sh tests/gpu_host/gpu_soak.sh start 540; sh tests/gpu_host/gpu_soak.sh wait 580
# Knobs: SRC (the tree to build, default .), BUILD (build-soak), DIR (/tmp/edged-soak),
# SOAK_ARGS (soak.py's arguments after --bin/--backend/--json).
set -u
OUT=${OUT:-out/gpu}
SRC=${SRC:-.}
BUILD=${BUILD:-build-soak}
DIR=${DIR:-/tmp/edged-soak}
SOAK_ARGS=${SOAK_ARGS:---threads 0 --size 1024 --ramp 1,2,4,8,12,16,24,32 --step-s 10}
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT" "$DIR"

case "${1:-}" in
start)
    if [ -d .debs ]; then
        for f in .debs/*.deb; do dpkg -x "$f" /opt/deps; done
        export CPPFLAGS="-I/opt/deps/usr/include -I/opt/deps/usr/include/cjson"
        export LDFLAGS="-L/opt/deps/usr/lib/x86_64-linux-gnu -Wl,-rpath,/opt/deps/usr/lib/x86_64-linux-gnu"
    fi
    cd "$SRC" || exit 1
    if ! make -j16 BUILD="$BUILD" CUDA_ARCHS="-gencode arch=compute_90,code=sm_90" "$BUILD/edged" \
        > "$DIR/build.log" 2>&1; then
        tail -30 "$DIR/build.log"
        exit 1
    fi
    { date -u; nproc; nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv; } > "$DIR/host.txt"
    # wrk drives the ramp and the hold: installed, or from the carried .debs (with its LuaJIT)
    wrk=wrk
    if ! command -v wrk > /dev/null 2>&1 && [ -x /opt/deps/usr/bin/wrk ]; then
        wrk=/opt/deps/usr/bin/wrk
        export LD_LIBRARY_PATH="/opt/deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
    # shellcheck disable=SC2086
    setsid nohup "$PYTHON" tests/bench/soak.py --bin "$BUILD/edged" --backend gpu --json "$DIR/soak_gpu.json" \
        --log "$DIR/edged.log" --wrk "$wrk" $SOAK_ARGS > "$DIR/soak.log" 2>&1 < /dev/null &
    sleep "${2:-20}"
    cat "$DIR/host.txt" "$DIR/soak.log"
    ;;
wait)
    t0=$(date +%s)
    while pgrep -f tests/bench/soak.py > /dev/null && [ $(($(date +%s) - t0)) -lt "${2:-60}" ]; do
        sleep 5
    done
    cp "$DIR"/* "$OUT"/ 2>/dev/null
    cat "$DIR/soak.log"
    if pgrep -f tests/bench/soak.py > /dev/null; then
        echo "soak.py still running"
    fi
    ;;
*)
    echo "usage: sh tests/gpu_host/gpu_soak.sh start [SECONDS] | wait SECONDS" >&2
    exit 2
    ;;
esac
