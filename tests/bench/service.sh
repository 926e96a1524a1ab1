#!/bin/sh
# service.sh — the service benchmark: drives `edged serve` with wrk (tests/bench/service.py does the
# work) and prints one markdown table of req/s, p50/p99, CPU and the per-stage split per case.
# usage (repo root): [BIN=build/edged] [BASE_BIN=old/edged] [BACKEND=auto|cpu|gpu] [DURATION=10s]
#   [SIZES=512,2048,4096] [FILTERS=edge,gaussian:7] [CONNS=1,16,64] [PORT=0] [OUT=out/service]
#   [INPUT_FORMAT=png|jpeg|webp] [SYNTHETIC=1] sh tests/bench/service.sh [service.py flags]
# The inputs are photographs composed from scikit-image's sample photographs (photos.py);
# SYNTHETIC=1 takes the synthetic image instead. The table's input column says which.
# wrk (Debian package wrk) is taken from WRK, else PATH, else $DEPS_ROOT/usr/bin (default /opt/deps);
# on a host without it, the carried .debs (wrk, libluajit-5.1-2) are unpacked into $DEPS_ROOT first.
set -eu
# the first interpreter that has what the image generator (tests/bench/photos.py) needs: numpy,
# OpenCV, Pillow and scikit-image (its sample photographs), unless PYTHON says which
if [ -z "${PYTHON:-}" ]; then
    for p in python3 /usr/bin/python3; do
        if "$p" -c 'import numpy, cv2, PIL, skimage' 2>/dev/null; then PYTHON=$p; break; fi
    done
    PYTHON=${PYTHON:-python3}
fi
DEPS_ROOT=${DEPS_ROOT:-/opt/deps}
deps=$DEPS_ROOT/usr

if [ -z "${WRK:-}" ] && ! command -v wrk >/dev/null 2>&1 && [ ! -x "$deps/bin/wrk" ] && ls .debs/wrk_*.deb >/dev/null 2>&1; then
    for f in .debs/*.deb; do dpkg -x "$f" "$DEPS_ROOT"; done
fi
if [ -z "${WRK:-}" ]; then
    if command -v wrk >/dev/null 2>&1; then
        WRK=wrk
    elif [ -x "$deps/bin/wrk" ]; then
        WRK="$deps/bin/wrk"
        export LD_LIBRARY_PATH="$deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    else
        echo "service.sh: wrk not found (apt-get install wrk, or carry its .debs: see docs/performance.md)" >&2
        exit 2
    fi
fi
export WRK
exec "$PYTHON" tests/bench/service.py "$@"
