#!/bin/sh
# gpu_host.sh — one pass on a GPU host: build, GPU tests, the quick set
# under compute-sanitizer memcheck and racecheck, a bench with NPP and its charts. Logs under $OUT.
# usage (repo root, with .debs carried): sh tests/gpu_host/gpu_host.sh [all|test|bench|fast|fft|tf32x3|headline]
# tf32x3: test_gpu for that variant alone (EDGED_GPU_ONLY=tf32x3: its matrix, its own test against the
# exact sum, plans), its memcheck and racecheck sets, and tf32x3 beside fast on custom full-rank taps
# 9..31 at 8192^2, gray and 3 planes, and as a job's one filter (--ops) on u8 RGB images, whose integer
# planes take its two-product path, 9..21 (tf32x3_bench.csv).
# fft: test_gpu_fft (fft against the exact correlation, its errors beside the bound), memcheck and
# racecheck of its small set (EDGED_GPU_QUICK=1),
# and fft beside fast on custom full-rank taps 13..63 at 8192^2, gray and 3 planes, with fft's cuFFT
# path (EDGED_FFT_FUSED=0) as rows fft_cufft and the fused kernel's one-block-per-SM build
# (EDGED_FFT_FUSED=2) as rows fft_1blk (fft_bench.csv); then cuDNN and torch's FFT convolution on
# the same GPU where python3 has torch (tests/bench/fft_vs_torch.py, fft_torch.csv).
# test: test_gpu, test_gpu_fft, test_gpu_jpeg, test_gpu_png (twice: also with EDGED_GPU_INFLATE_SEG=0), test_gpu_png_encode and test_gpu_inflate, then memcheck, synccheck and one racecheck per GPU variant side
# by side (each with its own time limit; a run killed at its limit says FAILED: TIMED OUT).
# fast: the fast-kernel pass: full GPU tests, memcheck (quick set, every variant), racecheck of fast
# alone, and the fast-vs-seed-vs-NPP bench at 8192^2 (fp32 gaussian and full-rank custom taps,
# large separable gaussians, the u8 edge pipeline) with a summary table (fast_summary.txt), and ncu
# stall reasons of the gray edge kernel (ncu_edge.txt, at the GPU's own clocks).
# headline: the headline figures on photographs composed by tests/bench/photos.py (scikit-image's
# sample photographs), meant to fit in about 8 minutes, seven files in $OUT: fast vs NPP gaussian 8192^2 k=3,7,31,63
# and full-rank custom 31 (random planes: fp32 arithmetic takes the same time on any pixels), the u8
# edge pipeline and Canny (aperture 3 L1 and L2, 5) at 8192^2 on the photo vs NPP with Canny's
# built-in synthetic image as extra rows (headline_kernels.csv), the codec bench on the 2048^2 photo
# and its edge map (headline_codec.csv), the service with the GPU backend on the 2048^2 photo as
# JPEG q90 and as PNG, edge, PNG out, 64 connections (headline_service.csv/.md), the OpenCV pool on
# the same files (headline_pool.txt), and a summary (headline_summary.txt).
# Knobs: BUILD (build-dev), BENCH_ARGS (the bench's arguments), ARCHS (nvcc -gencode list), WORK
# (headline's scratch: photos, server logs, raw wrk outputs; /tmp/edged-headline), HEADLINE_BACKEND
# (the service's backend in headline: gpu; cpu for a dry run of the script without a GPU).
set -u
export EDGED_REQUIRE_GPU=1
OUT=${OUT:-out/gpu}
BUILD=${BUILD:-build-dev}
ARCHS=${ARCHS:--gencode arch=compute_90,code=sm_90}
BENCH_CSV=${BENCH_CSV:-bench.csv}
BENCH_ARGS=${BENCH_ARGS:---sizes 256,1024,4096,8192 --ksizes 3,5,7,11,15,21,31 --blocks 16 --compare --cpu --serial-max 1024 --reps 10 --warmup 2}
what=${1:-all}
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT"
log="$OUT/host.log"

step() { # step NAME SECONDS CMD... : runs CMD with a time limit, logs its status line
    name=$1 limit=$2
    shift 2
    t0=$(date +%s)
    timeout "$limit" "$@"
    rc=$?
    if [ "$rc" = 124 ]; then # timeout's status: the run was killed, its outcome is unknown
        echo "== $name: FAILED: TIMED OUT after $limit s (killed; raise its limit or split it)" | tee -a "$log" >&2
    else
        echo "== $name: exit $rc in $(($(date +%s) - t0)) s" | tee -a "$log" >&2
    fi
    return $rc
}

# The GPU variants this build runs, one a line (`edged variants`, the rows that run on a gpu).
gpu_variants() {
    "$BUILD/edged" variants | awk '$2 ~ /^gpu/ { print $1 }'
}

# libmicrohttpd and cJSON are not installed there: unpack the carried .debs.
if [ -d .debs ]; then
    for f in .debs/*.deb; do dpkg -x "$f" /opt/deps; done
    export CPPFLAGS="-I/opt/deps/usr/include -I/opt/deps/usr/include/cjson"
    export LDFLAGS="-L/opt/deps/usr/lib/x86_64-linux-gnu -Wl,-rpath,/opt/deps/usr/lib/x86_64-linux-gnu"
fi
{ date -u; nvidia-smi; nvcc --version | tail -2; ls /usr/local/cuda/lib64/libnppif* 2>&1; } >> "$log" 2>&1

# headline's photographs are made while the build runs (photos.py is single-threaded): the 2048^2
# photo as PNG (libpng, level 6) and JPEG (q90), and the 8192^2 one for edged bench --input (PNG at
# level 1: only its pixels matter there)
work=${WORK:-/tmp/edged-headline}
if [ "$what" = headline ]; then
    rm -rf "$work"
    mkdir -p "$work/photos"
    ( "$PYTHON" tests/bench/photos.py --out "$work/photos" --sizes 2048 &&
      "$PYTHON" tests/bench/photos.py --out "$work/photos" --sizes 2048 --format jpeg &&
      "$PYTHON" tests/bench/photos.py --out "$work/photos" --sizes 8192 --level 1 ) > "$work/photos.log" 2>&1 &
    photos_pid=$!
fi

# Build; when NPP (only here) breaks the build, build without it so the rest still runs.
targets="$BUILD/edged $BUILD/tests/test_gpu $BUILD/tests/test_gpu_fft $BUILD/tests/test_gpu_jpeg $BUILD/tests/test_gpu_png $BUILD/tests/test_gpu_inflate $BUILD/tests/test_gpu_png_encode"
[ "$what" = headline ] && targets="$BUILD/edged"
# shellcheck disable=SC2086
if ! step build 180 make -j16 BUILD="$BUILD" CUDA_ARCHS="$ARCHS" $targets >> "$log" 2>&1; then
    tail -40 "$log"
    rm -rf "$BUILD/gpu"
    # shellcheck disable=SC2086
    if ! step build-without-npp 120 make -k -j16 BUILD="$BUILD" CUDA_ARCHS="$ARCHS" NPP=0 $targets >> "$log" 2>&1; then
        # another file of the tree may be broken right now: link the test from what it needs
        tail -60 "$log"
        cc $LDFLAGS -o "$BUILD/tests/test_gpu" "$BUILD/tests/unit/test_gpu.o" "$BUILD"/api/*.o "$BUILD"/cpu_ref/*.o \
            "$BUILD"/gpu/*.o -L/usr/local/cuda/lib64 -lcudart_static -ldl -lrt -lstdc++ -lcjson -lpng16 -lz -lm \
            -pthread >> "$log" 2>&1 || exit 1
    fi
fi
grep -c "warning:" "$log" | sed 's/^/build warnings (all files): /' | tee -a "$log"

if [ "$what" = all ] || [ "$what" = test ]; then
    step test_gpu 120 "$BUILD/tests/test_gpu" > "$OUT/test_gpu.log" 2>&1
    tail -n 12 "$OUT/test_gpu.log"; grep -m 20 FAIL "$OUT/test_gpu.log"
    step test_gpu_fft 120 "$BUILD/tests/test_gpu_fft" > "$OUT/test_gpu_fft.log" 2>&1
    tail -n 3 "$OUT/test_gpu_fft.log"; grep -m 20 FAIL "$OUT/test_gpu_fft.log"
    step test_gpu_jpeg 120 "$BUILD/tests/test_gpu_jpeg" > "$OUT/test_gpu_jpeg.log" 2>&1
    tail -n 3 "$OUT/test_gpu_jpeg.log"; grep -m 20 FAIL "$OUT/test_gpu_jpeg.log"
    step test_gpu_png 120 "$BUILD/tests/test_gpu_png" > "$OUT/test_gpu_png.log" 2>&1
    grep -E "^(PngSuite|generated|unfilter|large|job|damaged|color)|passed, [0-9]+ failed|seed" "$OUT/test_gpu_png.log"
    grep -m 20 FAIL "$OUT/test_gpu_png.log"
    # the same with the inflate's speculative and placing decodes one thread a block (EDGED_GPU_INFLATE_SEG=0, gpu/ginflate.h)
    step test_gpu_png_serial 120 env EDGED_GPU_INFLATE_SEG=0 "$BUILD/tests/test_gpu_png" > "$OUT/test_gpu_png_serial.log" 2>&1
    grep -E "^device inflate|passed, [0-9]+ failed" "$OUT/test_gpu_png_serial.log"; grep -m 20 FAIL "$OUT/test_gpu_png_serial.log"
    step test_gpu_inflate 180 "$BUILD/tests/test_gpu_inflate" > "$OUT/test_gpu_inflate.log" 2>&1
    grep -E "^device inflate|passed, [0-9]+ failed|seed" "$OUT/test_gpu_inflate.log"; grep -m 20 FAIL "$OUT/test_gpu_inflate.log"
    step test_gpu_png_encode 120 "$BUILD/tests/test_gpu_png_encode" > "$OUT/test_gpu_png_encode.log" 2>&1
    grep -E "seed|edge map .* (640x480|2048x2048)|^2048x2048|passed, [0-9]+ failed" "$OUT/test_gpu_png_encode.log"
    grep -m 20 FAIL "$OUT/test_gpu_png_encode.log"
    # The sanitizer runs are independent processes on one GPU, each mostly one busy CPU thread: they
    # run side by side, each with its own limit, log and status line. racecheck is ~35 ms a launch,
    # so it runs once per variant (the smaller set): every variant in one run took past any sane limit.
    san="$OUT/sanitizer.log"
    sdir="$OUT/san"
    mkdir -p "$sdir"
    sanitize() { # sanitize NAME SECONDS TOOL QUICK [ONLY [TEST]]: compute-sanitizer over TEST (test_gpu), in the background
        ( step "$1" "$2" env EDGED_GPU_QUICK="$4" EDGED_GPU_ONLY="${5:-}" compute-sanitizer --tool "$3" \
            --error-exitcode 99 "$BUILD/tests/${6:-test_gpu}" > "$sdir/$1.log" 2>&1 ) &
    }
    sanitize memcheck 420 memcheck 1
    sanitize memcheck-jpeg 240 memcheck 1 "" test_gpu_jpeg
    sanitize memcheck-png 300 memcheck 1 "" test_gpu_png
    sanitize racecheck-png 300 racecheck 1 "" test_gpu_png
    sanitize memcheck-inflate 300 memcheck 1 "" test_gpu_inflate
    sanitize racecheck-inflate 300 racecheck 1 "" test_gpu_inflate
    sanitize memcheck-png-encode 300 memcheck 1 "" test_gpu_png_encode
    sanitize synccheck 240 synccheck 2
    for v in $(gpu_variants); do
        sanitize "racecheck-$v" 300 racecheck 2 "$v"
    done
    wait
    : > "$san"
    for f in "$sdir"/*.log; do
        echo "#### $(basename "$f" .log)" >> "$san"
        cat "$f" >> "$san"
        echo "$(basename "$f" .log): $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$f" | tail -n 1)" \
            "$(grep -E "passed, [0-9]+ failed" "$f" | tail -n 1)"
    done
fi

if [ "$what" = all ] || [ "$what" = bench ]; then
    # shellcheck disable=SC2086
    step bench 100 "$BUILD/edged" bench $BENCH_ARGS --csv > "$OUT/$BENCH_CSV" 2>> "$log"
    [ "$BENCH_CSV" = bench.csv ] && "$PYTHON" tests/bench/plots.py "$OUT/bench.csv" "$OUT" >> "$log" 2>&1
    "$PYTHON" - "$OUT/$BENCH_CSV" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["ms"]]
big = max(int(r["width"]) for r in rows)
print("%-16s %5s %4s %9s %9s %8s %6s %7s" % ("variant", "side", "k", "ms", "GFLOP/s", "GB/s", "%copy", "x_cpu"))
for r in rows:
    if int(r["width"]) == big and r["ksize"] in ("3", "7", "15", "31"):
        print("%-16s %5s %4s %9s %9s %8s %6s %7s" % (r["variant"], r["width"], r["ksize"], r["ms"], r["gflop_s"],
              r["gb_s"], r["pct_copy_bw"], r["speedup_vs_cpu"]))
PY
fi
if [ "$what" = fft ]; then
    step test_gpu_fft 200 "$BUILD/tests/test_gpu_fft" > "$OUT/test_gpu_fft.log" 2>&1
    grep -E "largest error|passed, [0-9]+ failed|seed" "$OUT/test_gpu_fft.log"; grep -m 20 FAIL "$OUT/test_gpu_fft.log"
    step memcheck-fft 200 env EDGED_GPU_QUICK=1 compute-sanitizer --tool memcheck --error-exitcode 99 \
        "$BUILD/tests/test_gpu_fft" > "$OUT/sanitizer_fft.log" 2>&1
    grep -E "ERROR SUMMARY|passed, [0-9]+ failed" "$OUT/sanitizer_fft.log"
    step racecheck-fft 300 env EDGED_GPU_QUICK=1 compute-sanitizer --tool racecheck --error-exitcode 99 \
        "$BUILD/tests/test_gpu_fft" > "$OUT/racecheck_fft.log" 2>&1
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed, [0-9]+ failed" "$OUT/racecheck_fft.log"
    b="$BUILD/edged bench --sizes 8192 --reps 20 --warmup 3 --filter custom --ksizes 13,15,17,21,25,31,45,63 --csv"
    step bench-fft 150 $b --variants fast,fft > "$OUT/fft_bench.csv" 2>> "$log"
    step bench-fft-rgb 150 $b --variants fast,fft --channels 3 | tail -n +2 >> "$OUT/fft_bench.csv" 2>> "$log"
    # the cuFFT path (EDGED_FFT_FUSED=0) beside the fused tile kernel, as rows fft_cufft
    step bench-fft-cufft 150 env EDGED_FFT_FUSED=0 $b --variants fft 2>> "$log" | tail -n +2 |
        sed "s/,fft,/,fft_cufft,/" >> "$OUT/fft_bench.csv"
    step bench-fft-cufft-rgb 150 env EDGED_FFT_FUSED=0 $b --variants fft --channels 3 2>> "$log" | tail -n +2 |
        sed "s/,fft,/,fft_cufft,/" >> "$OUT/fft_bench.csv"
    # the fused kernel's one-block-per-SM build (EDGED_FFT_FUSED=2), as rows fft_1blk
    step bench-fft-1blk 150 env EDGED_FFT_FUSED=2 $b --variants fft 2>> "$log" | tail -n +2 |
        sed "s/,fft,/,fft_1blk,/" >> "$OUT/fft_bench.csv"
    cat "$OUT/fft_bench.csv"
    # the comparators on the same GPU: cuDNN and torch's FFT convolution, whole and by tiles
    if python3 -c 'import torch' 2>/dev/null; then
        step fft-vs-torch 300 python3 tests/bench/fft_vs_torch.py --size 8192 --ksizes 31,63 \
            > "$OUT/fft_torch.csv" 2>> "$log"
        cat "$OUT/fft_torch.csv"
    else
        echo "== fft-vs-torch: skipped (python3 has no torch): cuDNN and torch FFT not timed" | tee -a "$log" >&2
    fi
fi
if [ "$what" = tf32x3 ]; then
    step test_gpu-tf32x3 200 env EDGED_GPU_ONLY=tf32x3 "$BUILD/tests/test_gpu" > "$OUT/test_gpu_tf32x3.log" 2>&1
    grep -E "^tf32x3|passed, [0-9]+ failed|seed" "$OUT/test_gpu_tf32x3.log"; grep -m 20 FAIL "$OUT/test_gpu_tf32x3.log"
    step memcheck-tf32x3 200 env EDGED_GPU_QUICK=1 EDGED_GPU_ONLY=tf32x3 compute-sanitizer --tool memcheck \
        --error-exitcode 99 "$BUILD/tests/test_gpu" > "$OUT/sanitizer_tf32x3.log" 2>&1
    step racecheck-tf32x3 200 env EDGED_GPU_QUICK=2 EDGED_GPU_ONLY=tf32x3 compute-sanitizer --tool racecheck \
        --error-exitcode 99 "$BUILD/tests/test_gpu" >> "$OUT/sanitizer_tf32x3.log" 2>&1
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed, [0-9]+ failed" "$OUT/sanitizer_tf32x3.log"
    b="$BUILD/edged bench --sizes 8192 --reps 20 --warmup 3 --filter custom --ksizes 9,11,13,15,17,21,25,31 --csv"
    step bench-tf32x3 150 $b --variants fast,tf32x3 > "$OUT/tf32x3_bench.csv" 2>> "$log"
    step bench-tf32x3-rgb 150 $b --variants fast,tf32x3 --channels 3 | tail -n +2 >> "$OUT/tf32x3_bench.csv" 2>> "$log"
    # a job's own path: u8 RGB images unpacked into integer planes (every block of tf32x3 on its
    # two-product path), one custom full-rank filter of random taps per side
    for k in 9 13 17 21; do
        ops=$("$PYTHON" -c "import json, random; random.seed($k); print(json.dumps([{'filter': 'custom', 'taps':
[[round(random.uniform(-1, 1), 4) for _ in range($k)] for _ in range($k)]}]))")
        step bench-tf32x3-job-$k 100 "$BUILD/edged" bench --ops "$ops" --sizes 8192 --reps 20 --warmup 3 \
            --variants fast,tf32x3 --csv 2>> "$log" | tail -n +2 >> "$OUT/tf32x3_bench.csv"
    done
    cat "$OUT/tf32x3_bench.csv"
fi
if [ "$what" = fast ]; then
    step test_gpu 200 "$BUILD/tests/test_gpu" > "$OUT/test_gpu.log" 2>&1
    grep -E "^edge fast|passed, [0-9]+ failed|seed" "$OUT/test_gpu.log"; grep -m 20 FAIL "$OUT/test_gpu.log"
    san="$OUT/sanitizer.log"
    echo "#### EDGED_GPU_QUICK=1 compute-sanitizer --tool memcheck (every variant)" > "$san"
    step memcheck 150 env EDGED_GPU_QUICK=1 compute-sanitizer --tool memcheck --error-exitcode 99 \
        "$BUILD/tests/test_gpu" >> "$san" 2>&1
    echo "#### EDGED_GPU_QUICK=2 EDGED_GPU_ONLY=fast compute-sanitizer --tool racecheck" >> "$san"
    step racecheck-fast 100 env EDGED_GPU_QUICK=2 EDGED_GPU_ONLY=fast compute-sanitizer --tool racecheck \
        --error-exitcode 99 "$BUILD/tests/test_gpu" >> "$san" 2>&1
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed, [0-9]+ failed" "$san"
    b="$BUILD/edged bench --sizes 8192 --reps 20 --warmup 3 --compare --csv"
    step bench-gauss 60 $b --filter gaussian --ksizes 3,5,7,9,11,13,15,17,19,21,25,31 \
        --variants fast,tiled,separable,shared_constant > "$OUT/fast_gauss.csv" 2>> "$log"
    step bench-custom 60 $b --filter custom --ksizes 3,5,7,9,11,15,25,31 --variants fast,tiled,shared_constant \
        > "$OUT/fast_custom.csv" 2>> "$log"
    step bench-gauss-big 60 $b --filter gaussian --ksizes 41,51,63 --variants fast,separable,tiled \
        > "$OUT/fast_gauss_big.csv" 2>> "$log"
    step bench-edge 60 $b --u8-edge --variants fast,tiled,shared_constant,shared_halo,naive \
        > "$OUT/fast_edge.csv" 2>> "$log"
    # knob_rows NAME FILE KNOB... -- ARGS: the fast rows of `$b ARGS` with the bench knobs KNOB
    # (VAR=value) set, renamed fast_NAME (fast_1bit: fast_NAME_1bit), appended to $OUT/FILE, for
    # comparison with the default in the same run
    knob_rows() {
        name=$1 file=$2 knobs=""
        shift 2
        while [ "$1" != "--" ]; do knobs="$knobs $1"; shift; done
        shift
        env $knobs $b "$@" --variants fast 2>> "$log" | tail -n +2 |
            sed "s/,fast\(_1bit\)\{0,1\},/,fast_$name\1,/" >> "$OUT/$file"
    }
    # the edge kernel without its prefetch ring, with 4 px per lane, with one strip height for all
    knob_rows EDGED_EDGE_PREFETCH=0 fast_edge.csv EDGED_EDGE_PREFETCH=0 -- --u8-edge
    knob_rows EDGED_EDGE_PX=4 fast_edge.csv EDGED_EDGE_PX=4 -- --u8-edge
    knob_rows EDGED_EDGE_SY=24+EDGED_EDGE_TAIL=0 fast_edge.csv EDGED_EDGE_SY=24 EDGED_EDGE_TAIL=0 -- --u8-edge
    # the cases the streaming kernels serve, on the tiles instead (k <= 5, full-rank 7 and 9; gaussian
    # 5 runs on the separable band kernel either way, a repeat of its default row)
    knob_rows tiles fast_gauss.csv EDGED_FAST_STREAM=0 -- --filter gaussian --ksizes 3,5
    knob_rows tiles fast_custom.csv EDGED_FAST_STREAM=0 -- --filter custom --ksizes 3,5,7,9
    # the separable kernel's bands: fixed heights against the default (about 4 rounds of blocks and
    # a round of 128-row bands), and the default without the tail
    knob_rows notail fast_gauss.csv EDGED_SEP_TAIL=0 -- --filter gaussian --ksizes 19,25,31
    knob_rows notail fast_gauss_big.csv EDGED_SEP_TAIL=0 -- --filter gaussian --ksizes 41,63
    # ... and with every step staged by the threads instead of the copy engine
    knob_rows nobulk fast_gauss.csv EDGED_SEP_BULK=0 -- --filter gaussian --ksizes 19,25,31
    knob_rows nobulk fast_gauss_big.csv EDGED_SEP_BULK=0 -- --filter gaussian --ksizes 41,63
    for band in 256 1024; do
        knob_rows band$band fast_gauss.csv EDGED_SEP_BAND=$band -- --filter gaussian --ksizes 19,25,31
        knob_rows band$band fast_gauss_big.csv EDGED_SEP_BAND=$band -- --filter gaussian --ksizes 63
    done
    # where the edge kernel's time goes: ncu's stall reasons and pipe use for one 8192^2 gray launch,
    # at the GPU's own clocks (--clock-control none: the profiler does not lock them)
    if command -v ncu > /dev/null; then
        step ncu-edge 120 ncu --clock-control none -k regex:k_edge -c 1 --section SpeedOfLight \
            --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \
            --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
            "$BUILD/edged" bench --sizes 8192 --reps 1 --warmup 0 --u8-edge --variants fast \
            > "$OUT/ncu_edge.txt" 2>&1
    fi
    "$PYTHON" - "$OUT" <<'PY' | tee "$OUT/fast_summary.txt"
import csv, os, sys
out = sys.argv[1]
def rows(name):
    p = os.path.join(out, name)
    return [r for r in csv.DictReader(open(p))] if os.path.exists(p) else []
print("%-22s %9s %-26s %9s %9s %9s %7s %7s" % ("case", "fast ms", "best seed", "seed ms", "NPP ms", "floor", "x_floor", "vs NPP"))
for name, label in (("fast_gauss.csv", "gaussian"), ("fast_custom.csv", "custom"), ("fast_gauss_big.csv", "gaussian"),
                    ("fast_edge.csv", "edge")):
    rs = rows(name)
    keys = []
    for r in rs:
        key = (r["ksize"], r["channels"]) if label == "edge" else (r["ksize"],)
        if key not in keys:
            keys.append(key)
    for key in keys:
        grp = [r for r in rs if ((r["ksize"], r["channels"]) if label == "edge" else (r["ksize"],)) == key]
        ms = lambda r: float(r["ms"]) if r["ms"] else None
        fast = [r for r in grp if r["variant"] == "fast" and ms(r)]
        npp = [r for r in grp if r["variant"] == "npp" and ms(r)]
        seeds = sorted([r for r in grp if not r["variant"].startswith("fast") and r["variant"] != "npp" and ms(r)],
                       key=ms)
        for r in grp:
            if r["variant"].startswith("fast_") and r["variant"] != "fast_1bit" and ms(r):
                print("  (%s: %.4f ms)" % (r["variant"], ms(r)))
        case = "%s k=%s" % (label, key[0]) if label != "edge" else "u8 edge %s" % ("gray" if key[1] == "1" else "rgb")
        n = ms(npp[0]) if npp else None
        # edge: also the map as 1-bit rows (fast_1bit), against its own floor (ch + 1/8 bytes per pixel)
        for impl, fr in (("", fast), (" 1-bit", [r for r in grp if r["variant"] == "fast_1bit" and ms(r)])):
            if impl and not fr:
                continue
            f = ms(fr[0]) if fr else None
            print("%-22s %9s %-26s %9s %9s %9s %7s %7s" % (case + impl, "%.4f" % f if f else "-",
                  seeds[0]["variant"] if seeds else "-", "%.4f" % ms(seeds[0]) if seeds else "-",
                  "%.4f" % n if n else "-", fr[0]["floor_ms"] if fr else "-",
                  fr[0]["x_floor"] if fr else "-", "%.2fx" % (n / f) if f and n else "-"))
PY
fi
if [ "$what" = headline ]; then
    wait "$photos_pid"
    echo "== photos: exit $?" | tee -a "$log"
    cat "$work/photos.log" >> "$log"
    P2="$work/photos/photo_2048.png" J2="$work/photos/photo_2048.jpg" P8="$work/photos/photo_8192.png"
    kern="$OUT/headline_kernels.csv"
    rm -f "$kern" "$OUT/headline_pool.txt"
    # hstep NAME LIMIT FILE CMD...: step, CMD's output into FILE, its stderr into the log (the
    # status line once)
    hstep() {
        name=$1 limit=$2 file=$3
        shift 3
        step "$name" "$limit" "$@" > "$file" 2> "$work/stderr"
        rc=$?
        grep -v '^== ' "$work/stderr" >> "$log"
        return $rc
    }
    # bench_rows CASE LIMIT ARGS...: `edged bench ARGS` at 8192^2 (median of 20 after 3 warm-up), its
    # CSV rows appended to headline_kernels.csv with CASE in front
    bench_rows() {
        name=$1 limit=$2
        shift 2
        hstep "$name" "$limit" "$work/$name.csv" "$BUILD/edged" bench --sizes 8192 --reps 20 --warmup 3 --csv "$@"
        [ -s "$kern" ] || sed -n '1s/^/case,/p' "$work/$name.csv" > "$kern"
        tail -n +2 "$work/$name.csv" | sed "s/^/$name,/" >> "$kern"
    }
    # (a) fp32 planes of random samples: the kernels' time does not depend on the pixels
    bench_rows gaussian 120 --filter gaussian --ksizes 3,7,31,63 --variants fast --compare
    bench_rows custom 60 --filter custom --ksizes 31 --variants fast --compare
    # (b) the u8 edge pipeline on the photo, gray and RGB, u8 and 1-bit maps; NPP on gray
    bench_rows edge_photo 60 --u8-edge --variants fast --compare --input "$P8"
    # (c) Canny on the photo, then on the built-in synthetic image (the extra rows)
    bench_rows canny_photo 60 --filter canny --ksizes 3,5 --compare --input "$P8"
    bench_rows canny_photo_l2 60 --filter canny --ksizes 3 --l2gradient --compare --input "$P8"
    bench_rows canny_synthetic 60 --filter canny --ksizes 3,5 --compare
    bench_rows canny_synthetic_l2 60 --filter canny --ksizes 3 --l2gradient --compare
    # (d) the codecs on one core: the photo as PNG and JPEG, and its edge map as edged writes it
    "$BUILD/edged" filter "$P2" "$work/edge_2048.png" --filter edge --threshold 5 > /dev/null 2>> "$log"
    pin=""
    command -v taskset > /dev/null && [ "$(nproc)" -gt 2 ] && pin="taskset -c 2"
    # shellcheck disable=SC2086
    hstep codec 120 "$work/codec.jsonl" $pin "$BUILD/edged" bench --codec --json --reps 11 "$P2" "$J2" \
        "$work/edge_2048.png"
    # (e) the service, GPU backend: the 2048^2 photo as JPEG q90, then as PNG; edge, PNG out, 64
    # connections, 8 s after 3 s of warm-up (server CPU per request is a column)
    for fmt in jpeg png; do
        hstep "service-$fmt" 150 "$work/service_$fmt.log" env BIN="$BUILD/edged" BACKEND="${HEADLINE_BACKEND:-gpu}" \
            SIZES=2048 FILTERS=edge CONNS=64 DURATION=8s WARMUP=3s INPUT_FORMAT="$fmt" INPUTS="$work/photos" \
            OUT="$work/service_$fmt" PYTHON="$PYTHON" sh tests/bench/service.sh
        tail -n 20 "$work/service_$fmt.log" >> "$log"
    done
    # (f) the OpenCV pool (16 processes) on the same files
    for f in "$J2" "$P2"; do
        hstep "pool-$(basename "$f")" 120 "$work/pool.txt" "$PYTHON" tests/bench/opencv_pool.py --input "$f" \
            --filter edge --out png --procs 16
        cat "$work/pool.txt" >> "$OUT/headline_pool.txt"
    done
    "$PYTHON" - "$OUT" "$work" <<'PY' | tee "$OUT/headline_summary.txt"
import csv, glob, json, os, sys
import cv2
out, work = sys.argv[1], sys.argv[2]
print("inputs: tests/bench/photos.py (scikit-image's sample photographs), see host.log for bytes and hashes")
m = cv2.imread(os.path.join(work, "edge_2048.png"), cv2.IMREAD_UNCHANGED)
if m is not None:
    print("edge map of photo_2048.png at threshold 5: %.2f %% edge pixels, %d bytes"
          % (100.0 * (m > 0).mean(), os.path.getsize(os.path.join(work, "edge_2048.png"))))
rows = list(csv.DictReader(open(os.path.join(out, "headline_kernels.csv")))) if os.path.exists(
    os.path.join(out, "headline_kernels.csv")) else []
ms = lambda r: float(r["ms"]) if r["ms"] else None
print("\n%-20s %-10s %5s %4s %9s %9s %8s %7s  %s" % ("case", "variant", "ch", "k", "ms", "NPP ms", "NPP/ms", "x_floor",
                                                    "note"))
for r in rows:
    if r["variant"] == "npp" or ms(r) is None:
        continue
    npp = [q for q in rows if q["case"] == r["case"] and q["variant"] == "npp" and q["ksize"] == r["ksize"]
           and q["channels"] == r["channels"] and ms(q)]
    n = ms(npp[0]) if npp else None
    print("%-20s %-10s %5s %4s %9.4f %9s %8s %7s  %s" % (r["case"], r["variant"], r["channels"], r["ksize"], ms(r),
          "%.4f" % n if n else "-", "%.2fx" % (n / ms(r)) if n else "-", r["x_floor"], r["note"]))
codec = [json.loads(line) for line in open(os.path.join(work, "codec.jsonl")) if line.startswith("{")] if \
    os.path.exists(os.path.join(work, "codec.jsonl")) else []
if codec:
    with open(os.path.join(out, "headline_codec.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(codec[0]))
        w.writeheader()
        w.writerows(codec)
    print("\n%-16s %-14s %10s %10s %10s" % ("file", "codec", "decode ms", "encode ms", "bytes"))
    for c in codec:
        print("%-16s %-14s %10.2f %10.2f %10d" % (os.path.basename(c["file"]), c["codec"], c["decode_ms"],
                                                 c["encode_ms"], c["bytes"]))
svc = []
for fmt in ("jpeg", "png"):
    p = os.path.join(work, "service_" + fmt, "summary.csv")
    if os.path.exists(p):
        svc += list(csv.DictReader(open(p)))
if svc:
    keys = list(svc[0])
    with open(os.path.join(out, "headline_service.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys + [k for r in svc for k in r if k not in keys])
        w.writeheader()
        w.writerows(svc)
    with open(os.path.join(out, "headline_service.md"), "w") as f:
        for fmt in ("jpeg", "png"):
            p = os.path.join(work, "service_" + fmt, "summary.md")
            if os.path.exists(p):
                f.write(open(p).read() + "\n")
    print("\n%-16s %6s %9s %9s %8s %8s %8s %12s %10s %10s" % ("input", "conns", "req/s", "served/s", "p50 ms",
                                                               "p99 ms", "non-2xx", "CPU ms/req", "decode ms",
                                                               "encode ms"))
    for r in svc:
        print("%-16s %6s %9.1f %9.1f %8.1f %8.1f %8s %12.2f %10.2f %10.2f" % (
            r["input"], r["conns"], float(r["req_s"]), float(r["served_s"]), float(r["p50_ms"]), float(r["p99_ms"]),
            r["non2xx"], float(r["server_cpu_ms_req"]), float(r.get("stage_decode") or 0),
            float(r.get("stage_encode") or 0)))
pool = os.path.join(out, "headline_pool.txt")
if os.path.exists(pool):
    print("\n" + open(pool).read().strip())
PY
fi
grep "^== " "$log"
