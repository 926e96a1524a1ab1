#!/usr/bin/python3
"""opencv_pool.py — the anchor of the service benchmarks: a pool of N OpenCV processes (one thread
each) doing what one edged request does, decode + filter + encode, on the same input file, without
HTTP. Prints images/s and CPU seconds per image (of the pool's processes). The input is the file the
service benchmark sends, a photograph composed by tests/bench/photos.py (`photos.py --out DIR --sizes
2048 --format jpeg` writes DIR/photo_2048.jpg; --synthetic the synthetic image, synthetic_2048.jpg).

    /usr/bin/python3 tests/bench/opencv_pool.py --input photo_2048.jpg --filter edge --out png
    /usr/bin/python3 tests/bench/opencv_pool.py --input photo_2048.jpg --filter gaussian:7 --out jpeg

Filters as edged computes them (OpenCV's default border, reflect-101): edge = gray, 5x5 Gaussian,
3x3 Laplacian, |L| > threshold as a 0/255 map; gaussian:N = an N x N Gaussian of each RGB channel;
canny = cv2.Canny(gray, 50, 150). PNG output at zlib level 1 (edged's default), JPEG at quality 90.
"""
import argparse
import multiprocessing as mp
import os
import sys
import time

import numpy as np


def work(job):
    import cv2
    cv2.setNumThreads(1)
    path, flt, fmt, n = job
    data = np.frombuffer(open(path, "rb").read(), np.uint8)
    name, _, size = flt.partition(":")
    for _ in range(n):
        im = cv2.imdecode(data, cv2.IMREAD_COLOR)
        if name == "edge":
            g = cv2.cvtColor(im, cv2.COLOR_BGR2GRAY).astype(np.float32)
            lap = cv2.Laplacian(cv2.GaussianBlur(g, (5, 5), 0), cv2.CV_32F, ksize=1)
            res = ((np.abs(lap) > 5) * 255).astype(np.uint8)
        elif name == "gaussian":
            k = int(size or 5)
            res = cv2.GaussianBlur(im, (k, k), 0)
        elif name == "canny":
            res = cv2.Canny(cv2.cvtColor(im, cv2.COLOR_BGR2GRAY), 50, 150)
        else:
            raise SystemExit("opencv_pool.py: unknown filter " + flt)
        if fmt == "jpeg":
            ok, _ = cv2.imencode(".jpg", res, [cv2.IMWRITE_JPEG_QUALITY, 90])
        else:
            ok, _ = cv2.imencode(".png", res, [cv2.IMWRITE_PNG_COMPRESSION, 1])
        assert ok
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", required=True, help="image file (PNG, JPEG, WebP)")
    ap.add_argument("--filter", default="edge", help="edge, gaussian:N or canny")
    ap.add_argument("--out", default="png", choices=["png", "jpeg"])
    ap.add_argument("--procs", type=int, default=16)
    ap.add_argument("--per-proc", type=int, default=8, help="images each process handles in the measured run")
    args = ap.parse_args()
    ctx = mp.get_context("spawn")  # forked workers would share OpenCV's state with this process
    with ctx.Pool(args.procs) as pool:
        pool.map(work, [(args.input, args.filter, args.out, 1)] * args.procs)  # imports, first run
        cpu0 = sum(_proc_cpu(p.pid) for p in pool._pool)  # noqa: SLF001 (the pool's processes)
        t0 = time.perf_counter()
        done = sum(pool.map(work, [(args.input, args.filter, args.out, args.per_proc)] * args.procs))
        dt = time.perf_counter() - t0
        # pool workers are live children: their CPU comes from /proc, not from rusage
        cpu = sum(_proc_cpu(p.pid) for p in pool._pool) - cpu0  # noqa: SLF001
    print("opencv pool, %d processes, %s, %s -> %s: %d images in %.2f s = %.1f images/s" %
          (args.procs, os.path.basename(args.input), args.filter, args.out, done, dt, done / dt))
    print("pool CPU: %.1f ms per image" % (1e3 * cpu / done))
    return 0


def _proc_cpu(pid):
    """User + system CPU seconds of a live process."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    sys.exit(main())
