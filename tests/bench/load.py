#!/usr/bin/python3
"""load.py — HTTP load on `edged serve`: req/s, p50 and p99 latency of POST /v1/filter for each
image size and concurrency, plus the per-stage breakdown (from /metrics deltas, ms per request),
the share of the PNG codec (decode + encode) in decode + compute + encode, and `overhead`: what the
server adds (total - receive - codec_wait - queue - stages) relative to decode + compute + encode.
receive is the body's arrival (the client's upload), codec_wait the waits for a codec slot, queue
the wait for a worker.

The images are photographs composed from scikit-image's sample photographs (tests/bench/photos.py),
written by libpng at level 6 with adaptive filters, so that PNG sizes, codec times and edge maps are
those of photographs; --synthetic sends the synthetic image instead (far fewer edges). Each client
thread keeps one keep-alive connection and sends a pre-built multipart body (no client-side encoding
in the loop).

    /usr/bin/python3 tests/bench/load.py --url http://127.0.0.1:8080            # a running server
    /usr/bin/python3 tests/bench/load.py --bin build/edged --backend cpu        # starts one itself
    options: --sizes 512,1024,4096 --concurrency 1,4,16 --duration 8 --min-requests 8
             --filter edge --bit-depth 8 --png-level 1 --csv out.csv --synthetic
"""
import argparse
import concurrent.futures as cf
import csv
import json
import os
import platform
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import zlib

import numpy as np
import requests

import photos  # the benchmarks' input images (tests/bench/photos.py)

STAGES = ["receive", "codec_wait", "queue", "decode", "upload", "kernel", "download", "encode", "total"]


def png_bytes(a, level=6):
    """a (h x w x 3 or 4 uint8) as a PNG of unfiltered rows at zlib level: with level 0 the cheapest
    PNG to decode (overlap.py keeps the codec out of the way so)."""
    h, w, c = a.shape
    raw = b"".join(b"\x00" + a[i].tobytes() for i in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, {3: 2, 4: 6}[c], 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw, level)) + chunk(b"IEND", b""))


def multipart(png, params):
    req = requests.Request("POST", "http://x/v1/filter", files={"image": ("img.png", png, "image/png"),
                                                                 "params": (None, json.dumps(params))}).prepare()
    return req.body, req.headers["Content-Type"]


def stage_sums(url):
    """{stage: (sum_seconds, count)} from /metrics."""
    text = requests.get(url + "/metrics", timeout=10).text
    out = {}
    for m in re.finditer(r'^edged_stage_seconds_(sum|count)\{stage="(\w+)"\} (\S+)$', text, re.M):
        s, c = out.get(m.group(2), (0.0, 0.0))
        out[m.group(2)] = (float(m.group(3)), c) if m.group(1) == "sum" else (s, float(m.group(3)))
    return out


def run_cell(url, body, ctype, conc, duration, min_requests):
    """conc threads send the body back to back until both duration and min_requests are reached."""
    lat, errors, lock = [], [], threading.Lock()
    start = time.perf_counter()
    stop_at = start + duration

    def client():
        s = requests.Session()
        while True:
            with lock:
                if time.perf_counter() >= stop_at and len(lat) + len(errors) >= min_requests:
                    return
            t0 = time.perf_counter()
            try:
                r = s.post(url + "/v1/filter", data=body, headers={"Content-Type": ctype}, timeout=600)
                ok = r.status_code == 200
            except requests.RequestException as e:
                ok, r = False, e
            with lock:
                (lat if ok else errors).append(time.perf_counter() - t0 if ok else str(getattr(r, "status_code", r)))

    with cf.ThreadPoolExecutor(conc) as ex:
        for f in [ex.submit(client) for _ in range(conc)]:
            f.result()
    wall = time.perf_counter() - start
    return lat, errors, wall


def start_server(bin_path, backend, extra=()):
    """Starts `edged serve` on a free loopback port; returns (process, url) once /readyz is 200."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [bin_path, "serve", "--host", "127.0.0.1", "--port", str(port), "--backend", backend,
           "--queue-depth", "256"] + list(extra)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = "http://127.0.0.1:%d" % port
    for _ in range(600):
        try:
            if requests.get(url + "/readyz", timeout=1).status_code == 200:
                return proc, url
        except requests.ConnectionError:
            pass
        if proc.poll() is not None:
            sys.exit("edged serve exited with %d (%s backend available?)" % (proc.returncode, backend))
        time.sleep(0.05)
    proc.kill()
    sys.exit("edged serve did not become ready (%s backend available?)" % backend)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url")
    ap.add_argument("--bin", default="build/edged")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--server-args", nargs=argparse.REMAINDER, default=[])
    ap.add_argument("--sizes", default="512,1024,4096")
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--duration", type=float, default=8.0)
    ap.add_argument("--min-requests", type=int, default=8)
    ap.add_argument("--filter", default="edge")
    ap.add_argument("--variant", default="auto")
    ap.add_argument("--bit-depth", type=int, default=8)
    ap.add_argument("--png-level", type=int, default=1)
    ap.add_argument("--csv")
    ap.add_argument("--synthetic", action="store_true", help="the synthetic image instead of the photographs")
    args = ap.parse_args()
    kind = "synthetic" if args.synthetic else "photo"

    proc = None
    url = args.url
    if not url:
        proc, url = start_server(args.bin, args.backend, args.server_args)
    try:
        ver = requests.get(url + "/version", timeout=10).json()
        print("# %s, server backend %s (%s), %d codec threads; client %s, %d cores; %s" % (
            time.strftime("%Y-%m-%d"), ver["backend"], ver["device"], ver["threads"], platform.node(),
            os.cpu_count(), "filter=%s bit_depth=%d png_level=%d; input %s (tests/bench/photos.py), libpng level 6"
            % (args.filter, args.bit_depth, args.png_level, kind)))
        head = ("size", "conc", "n", "req/s", "p50_ms", "p99_ms", "errors") + tuple(s + "_ms" for s in STAGES) + (
            "codec_share", "overhead", "in_png_bytes", "out_png_bytes")
        print(" ".join("%12s" % h for h in head))
        rows = []
        params = {"filter": args.filter, "variant": args.variant, "bit_depth": args.bit_depth,
                  "png_level": args.png_level}
        for side in [int(s) for s in args.sizes.split(",")]:
            png = photos.encode(photos.image(side, kind=kind))
            body, ctype = multipart(png, params)
            r = requests.post(url + "/v1/filter", data=body, headers={"Content-Type": ctype}, timeout=600)
            assert r.status_code == 200, r.text  # warm-up, and the output size
            out_bytes = len(r.content)
            for conc in [int(c) for c in args.concurrency.split(",")]:
                before = stage_sums(url)
                lat, errors, wall = run_cell(url, body, ctype, conc, args.duration, args.min_requests)
                after = stage_sums(url)
                mean = {}
                for st in STAGES:
                    ds = after.get(st, (0, 0))[0] - before.get(st, (0, 0))[0]
                    dc = after["total"][1] - before["total"][1]
                    mean[st] = 1e3 * ds / dc if dc else 0.0
                lat_ms = np.array(lat) * 1e3
                # work = decode + upload + kernel + download + encode; codec share is of that
                work = sum(mean[s] for s in STAGES[3:-1])
                codec = (mean["decode"] + mean["encode"]) / work if work else 0.0
                # what the server adds: total minus the body's arrival, the queue and the work
                overhead = (mean["total"] - mean["receive"] - mean["codec_wait"] - mean["queue"] - work) / work if work else 0.0
                row = (side, conc, len(lat), len(lat) / wall, float(np.percentile(lat_ms, 50)) if len(lat) else 0,
                       float(np.percentile(lat_ms, 99)) if len(lat) else 0, len(errors)) + tuple(
                    mean[s] for s in STAGES) + (codec, overhead, len(png), out_bytes)
                rows.append(row)
                print(" ".join("%12.4g" % v if isinstance(v, float) else "%12s" % v for v in row), flush=True)
        if args.csv:
            with open(args.csv, "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(head)
                w.writerows(rows)
    finally:
        if proc:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)


if __name__ == "__main__":
    main()
