#!/usr/bin/python3
"""cpu_vs_opencv.py — times edged's cpu_conv (bench_cpu) against OpenCV on the same fp32 plane.

For each k: box and gaussian (separable, cpu_conv's two-pass path) and a custom k x k kernel of
random taps (not separable, the direct path). OpenCV: cv2.filter2D(src, cv2.CV_32F, kernel,
borderType=cv2.BORDER_CONSTANT) for every kernel and cv2.sepFilter2D with the 1-D factors for the
separable ones. Note: filter2D does not look for separability, and for large kernels it switches to
a DFT: in OpenCV 4.x for CV_32F -> CV_32F on an SSE3 CPU once k*k >= 130 (13x13 and up; 11x11 is
still spatial), below 50 taps otherwise (dftFilter2D in imgproc/src/filter.dispatch.cpp). Same size, same
thread count (cv2.setNumThreads), output preallocated, 1 warm-up then the median of --reps; the
table is interleaved (ours, then OpenCV, row by row) and repeated --rounds times, each cell keeping
its best median, since load from other processes only ever adds time. Both time the same plane:
the gray (BT.601 luma) of a photograph composed by photos.py, or with --image synthetic|random its
synthetic image or random samples 0..255 (fp32 arithmetic takes the same time on any of them; the
row says which was used).

Run with Debian's /usr/bin/python3 (python3-opencv, numpy):
    /usr/bin/python3 tests/bench/cpu_vs_opencv.py --threads 2 [--bench build/bench/bench_cpu]
"""
import argparse
import csv
import io
import math
import os
import platform
import subprocess
import sys
import tempfile
import time

try:
    import cv2
    import numpy as np
except ImportError as e:  # pragma: no cover - reported, not hidden
    sys.exit("cpu_vs_opencv: needs numpy and OpenCV (apt install python3-opencv): %s" % e)


DFT_MIN_TAPS = 130  # filter2D's DFT threshold for CV_32F with SSE3 (see the docstring)


def gaussian_1d(n):
    """The edged taps (api/filter.c filter_gaussian_1d, default sigma), in float32."""
    sigma = 0.3 * ((n - 1) * 0.5 - 1.0) + 0.8
    c = (n - 1) / 2.0
    g = np.array([math.exp(-(i - c) ** 2 / (2.0 * sigma * sigma)) for i in range(n)])
    return (g / g.sum()).astype(np.float32)


def kernels(name, k, rng):
    """(2-D kernel, 1-D factor or None) for one benchmark row."""
    if name == "box":
        f = np.full(k, 1.0 / k, dtype=np.float32)
        return np.outer(f, f), f
    if name == "gaussian":
        f = gaussian_1d(k)
        return np.outer(f, f), f
    return rng.uniform(-1.0, 1.0, (k, k)).astype(np.float32), None


def time_ms(fn, reps, warmup):
    for _ in range(warmup):
        fn()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        t.append((time.perf_counter() - t0) * 1e3)
    t.sort()
    return t[len(t) // 2]


def plane(args, rng):
    """The args.size^2 float32 plane both sides filter (--image)."""
    if args.image == "random":
        return rng.integers(0, 256, (args.size, args.size)).astype(np.float32)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import photos
    return photos.gray(photos.image(args.size, kind=args.image)).astype(np.float32)


def run_ours(args, name, k):
    """bench_cpu's (median ms, separable) for one filter and k."""
    cmd = [args.bench, "--size", str(args.size), "--threads", str(args.threads), "--reps", str(args.reps),
           "--k", str(k), "--filters", name, "--input", args.raw]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    r = next(csv.DictReader(io.StringIO(out)))
    return float(r["median_ms"]), r["separable"] == "1"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", default=os.path.join(os.environ.get("BUILD", "build"), "bench", "bench_cpu"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--k", type=lambda s: [int(x) for x in s.split(",")], default=[3, 5, 11, 25])
    ap.add_argument("--filters", type=lambda s: s.split(","), default=["box", "gaussian", "custom"])
    ap.add_argument("--image", choices=["photo", "synthetic", "random"], default="photo",
                    help="the plane: a photograph's gray (photos.py), the synthetic image's, or random samples")
    args = ap.parse_args()
    if not os.access(args.bench, os.X_OK):
        sys.exit("cpu_vs_opencv: %s not built (make BUILD=... GPU=0 $BUILD/bench/bench_cpu)" % args.bench)

    cv2.setNumThreads(args.threads)
    rng = np.random.default_rng(1)
    src = plane(args, rng)
    dst = np.empty_like(src)
    with tempfile.NamedTemporaryFile(suffix=".f32", delete=False) as f:
        src.tofile(f)
        args.raw = f.name
    try:
        best = time_rows(args, src, dst, rng)
    finally:
        os.remove(args.raw)
    report(args, best)


def time_rows(args, src, dst, rng):
    """{(filter, k): (ours ms, separable, filter2D ms, sepFilter2D ms or None)}, best of the rounds."""
    rows = [(name, k) for name in args.filters for k in args.k]
    kern = {row: kernels(row[0], row[1], rng) for row in rows}
    best = {}
    # Each round times ours then OpenCV row by row (interleaved, so that load from other processes
    # hits both alike); a cell keeps its best median over the rounds (contention only adds time).
    for _ in range(args.rounds):
        for row in rows:
            ms, sep = run_ours(args, *row)
            k2, f = kern[row]
            f2d = time_ms(lambda: cv2.filter2D(src, cv2.CV_32F, k2, dst=dst, borderType=cv2.BORDER_CONSTANT),
                          args.reps, 1)
            sep_ms = None
            if f is not None:
                sep_ms = time_ms(lambda: cv2.sepFilter2D(src, cv2.CV_32F, f, f, dst=dst,
                                                         borderType=cv2.BORDER_CONSTANT), args.reps, 1)
            old = best.get(row, (math.inf, sep, math.inf, math.inf))
            best[row] = (min(old[0], ms), sep, min(old[2], f2d), min(old[3], sep_ms) if sep_ms else None)
    return best


def report(args, best):
    print("# %dx%d fp32 (%s), zero border, %d threads; %s, OpenCV %s (%d threads), numpy %s; best of %d rounds "
          "of the median of %d" % (args.size, args.size, args.image, args.threads,
                                   platform.processor() or platform.machine(), cv2.__version__, cv2.getNumThreads(),
                                   np.__version__, args.rounds, args.reps))
    print("| filter | k | separable | ours ms | filter2D ms | filter2D/ours | sepFilter2D ms | sepFilter2D/ours |")
    print("|---|---|---|---|---|---|---|---|")
    for (name, k) in best:
        ms, sep, f2d, sep_ms = best[(name, k)]
        print("| %s | %d | %s | %.1f | %.1f%s | %.2f | %s | %s |"
              % (name, k, "yes" if sep else "no", ms, f2d, " (DFT)" if k * k >= DFT_MIN_TAPS else "", f2d / ms,
                 "%.1f" % sep_ms if sep_ms else "-", "%.2f" % (sep_ms / ms) if sep_ms else "-"))


if __name__ == "__main__":
    main()
