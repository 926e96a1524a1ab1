#!/usr/bin/python3
"""canny_vs_opencv.py — times edged's canny_cpu (bench_canny) against cv2.Canny on the same 8-bit
gray image at the same thread count (cv2.setNumThreads), and checks the maps are equal.

The image is a photograph composed by photos.py (from scikit-image's sample photographs; --synthetic:
its synthetic image, with texture) cropped to --width x --height, gray by BT.601 luma as edged
computes it. Each cell is the median of --reps calls; rows are interleaved (ours, then OpenCV) and
repeated --rounds times, each cell keeping its best median, since load from other processes only
ever adds time.

    /usr/bin/python3 tests/bench/canny_vs_opencv.py --threads 1,2 [--bench build/bench/bench_canny] [--synthetic]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import photos  # noqa: E402

CASES = [(3, 0, 50, 150), (3, 1, 50, 150), (5, 0, 200, 600), (7, 0, 1600, 4800)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default="build/bench/bench_canny")
    ap.add_argument("--width", type=int, default=1920)
    ap.add_argument("--height", type=int, default=1080)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=21)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--synthetic", action="store_true", help="photos.py's synthetic image instead of a photograph")
    a = ap.parse_args()
    kind = "synthetic" if a.synthetic else "photo"
    rgb = photos.image(max(a.width, a.height), seed=1, kind=kind)[:a.height, :a.width]
    gray = np.ascontiguousarray(photos.gray(rgb))
    with tempfile.TemporaryDirectory() as d:
        raw, out = os.path.join(d, "g.raw"), os.path.join(d, "o.raw")
        gray.tofile(raw)
        print("# %dx%d gray %s (tests/bench/photos.py)" % (a.width, a.height, kind))
        print("aperture,l2,threads,edged_ms,opencv_ms,differing_pixels")
        for apert, l2, low, high in CASES:
            for th in [int(t) for t in a.threads.split(",")]:
                best_e = best_o = float("inf")
                cv2.setNumThreads(th)
                for _ in range(a.rounds):
                    cmd = [a.bench, raw, str(a.width), str(a.height), str(th), str(apert), str(l2), str(low),
                           str(high), str(a.reps), out]
                    best_e = min(best_e, float(subprocess.run(cmd, capture_output=True, text=True,
                                                              check=True).stdout))
                    ts = []
                    for _ in range(a.reps):
                        t0 = time.perf_counter()
                        ref = cv2.Canny(gray, low, high, apertureSize=apert, L2gradient=bool(l2))
                        ts.append((time.perf_counter() - t0) * 1e3)
                    best_o = min(best_o, sorted(ts)[len(ts) // 2])
                diff = int((np.fromfile(out, np.uint8).reshape(gray.shape) != ref).sum())
                print("%d,%d,%d,%.2f,%.2f,%d" % (apert, l2, th, best_e, best_o, diff))


if __name__ == "__main__":
    main()
