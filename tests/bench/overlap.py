#!/usr/bin/python3
"""overlap.py — the CUDA-stream overlap demo: N concurrent requests (default 64 x 2048x2048 RGB,
all released at once) against `edged serve --backend gpu`, run with 4 streams and with 1.

Prints per run: streams, requests, wall time, req/s, p50/p99 latency, the mean of each stage
from /metrics, and gpu_sum/wall = (sum over jobs of upload + kernel + download) / wall time,
which exceeds 1 only when jobs' GPU stages overlap across streams.

The image is a photograph composed from scikit-image's sample photographs (tests/bench/photos.py;
--synthetic: the synthetic image). To keep the PNG codec (which runs on the CPU cores) from hiding
the GPU, inputs are stored PNGs (zlib level 0, unfiltered rows) and outputs png_level 0 by default;
pass --input-level/--png-level to change.

On the GPU host (starts and stops the server once per --streams value):
    /usr/bin/python3 tests/bench/overlap.py --bin build/edged --streams 4,1
Against a server already running (its --streams is whatever it was started with):
    /usr/bin/python3 tests/bench/overlap.py --url http://127.0.0.1:8080
Options: --n 64 --size 2048 --filter edge --variant auto --threads N (server codec threads) --synthetic
"""
import argparse
import concurrent.futures as cf
import os
import signal
import sys
import threading
import time

import numpy as np
import requests

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import photos  # noqa: E402
from load import STAGES, multipart, png_bytes, stage_sums, start_server  # noqa: E402

def burst(url, body, ctype, n):
    barrier = threading.Barrier(n)
    lat, bad = [], []

    def one(_):
        barrier.wait()
        t0 = time.perf_counter()
        r = requests.post(url + "/v1/filter", data=body, headers={"Content-Type": ctype}, timeout=600)
        return r.status_code, time.perf_counter() - t0, r.headers.get("X-Edged-Variant")

    t0 = time.perf_counter()
    with cf.ThreadPoolExecutor(n) as ex:
        results = list(ex.map(one, range(n)))
    wall = time.perf_counter() - t0
    for status, t, _ in results:
        (lat if status == 200 else bad).append(t if status == 200 else status)
    return wall, lat, bad, results[0][2]


def run(url, args, body, ctype):
    ver = requests.get(url + "/version", timeout=10).json()
    requests.post(url + "/v1/filter", data=body, headers={"Content-Type": ctype}, timeout=600)  # warm-up
    before = stage_sums(url)
    wall, lat, bad, variant = burst(url, body, ctype, args.n)
    after = stage_sums(url)
    d = {s: after.get(s, (0, 0))[0] - before.get(s, (0, 0))[0] for s in STAGES}
    ok = max(len(lat), 1)
    gpu = d["upload"] + d["kernel"] + d["download"]
    print("streams=%s device=%s variant=%s n=%d ok=%d failed=%s wall=%.3fs req/s=%.2f p50=%.1fms p99=%.1fms "
          "gpu_sum/wall=%.2f" % (ver.get("streams"), ver["device"], variant, args.n, len(lat), bad or 0, wall,
                                 len(lat) / wall, np.percentile(np.array(lat) * 1e3, 50) if lat else 0,
                                 np.percentile(np.array(lat) * 1e3, 99) if lat else 0, gpu / wall))
    print("  mean ms per request: " + " ".join("%s=%.2f" % (s, 1e3 * d[s] / ok) for s in STAGES), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url")
    ap.add_argument("--bin", default="build/edged")
    ap.add_argument("--streams", default="4,1")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--filter", default="edge")
    ap.add_argument("--variant", default="auto")
    ap.add_argument("--png-level", type=int, default=0)
    ap.add_argument("--input-level", type=int, default=0)
    ap.add_argument("--synthetic", action="store_true", help="the synthetic image instead of a photograph")
    args = ap.parse_args()

    kind = "synthetic" if args.synthetic else "photo"
    png = png_bytes(photos.image(args.size, kind=kind), level=args.input_level)
    body, ctype = multipart(png, {"filter": args.filter, "variant": args.variant, "png_level": args.png_level})
    print("# %s: %d x %dx%d RGB %s (%d-byte PNG), filter %s, variant %s" % (
        time.strftime("%Y-%m-%d %H:%M"), args.n, args.size, args.size, kind, len(png), args.filter, args.variant))
    if args.url:
        run(args.url, args, body, ctype)
        return
    for streams in [int(s) for s in args.streams.split(",")]:
        extra = ["--streams", str(streams)] + (["--threads", str(args.threads)] if args.threads else [])
        proc, url = start_server(args.bin, "gpu", extra)
        try:
            run(url, args, body, ctype)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)


if __name__ == "__main__":
    main()
