#!/usr/bin/env python3
"""soak.py — load and overload of `edged serve` (docs/reliability.md, F. Load), loopback only,
bounded in time and request count.

Phases:
  ramp      closed loop, N keep-alive clients for --step-s each (N in --ramp): req/s, p50/p99,
            errors. The knee is the smallest N whose req/s is within 10% of the best error-free one
            (--knee-frac): where more clients stop buying throughput and only add latency.
  hold      open loop at --hold-frac (0.7) of the knee's req/s for --hold-s: zero non-2xx and
            socket errors, p99 vs p50, server RSS and open fds sampled every --sample-s.
  overload  open loop at --over-mult (2) x the knee's req/s for --over-s: only 200 and 429 (each
            429 with Retry-After), edged_queue_depth sampled and never above its bound.
  recovery  load stops: seconds until /readyz is 200 and a request is served at hold latency.

It starts the server itself (--bin: CPU backend, default --queue-depth, so an admission bound of
64 + 2 x 2 codec slots + 2 workers = 70 image requests; no per-IP cap, as every client here is
127.0.0.1) or uses --url and --pid. Prints one line per step
and a JSON summary (also to --json). Exit status 1 when a phase's condition fails.

  python3 tests/bench/soak.py --bin build/edged              # the full run (~15 minutes)
  python3 tests/bench/soak.py --bin build/edged --quick      # ~1 minute smoke of the same phases

Steady mode (--rate R --minutes M): no ramp and no overload, only the hold phase at R req/s for
M minutes, with the same checks (non-2xx, RSS after warm-up vs end, fds, p50/p99). --abuse adds,
for the whole hold, the cheap requests the budgets are there for, from other loopback addresses:
idle connections past the per-address cap, stalled uploads, CPU jobs over --max-job-cpu-s and
slow jobs whose client leaves. Their answers are counted apart ("abuse"); the paying traffic must
still see only 2xx, and the memory budget must be back to 0 at the end.

  python3 tests/bench/soak.py --bin build/edged --rate 20 --minutes 30 --abuse
"""
import argparse
import http.client
import json
import os
import queue
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import photos  # noqa: E402  (the benchmarks' input images)


def input_png(side, kind):
    """The request image: a photograph composed by tests/bench/photos.py (kind "photo") or its
    synthetic image, as libpng writes it (level 6, adaptive filters), so that decode costs what it
    costs in production."""
    return photos.encode(photos.image(side, kind=kind))


def multipart(png, params):
    b = "soakB0undary"
    body = (("--%s\r\nContent-Disposition: form-data; name=\"image\"; filename=\"x.png\"\r\n"
             "Content-Type: image/png\r\n\r\n" % b).encode() + png +
            ("\r\n--%s\r\nContent-Disposition: form-data; name=\"params\"\r\n\r\n%s\r\n--%s--\r\n" %
             (b, params, b)).encode())
    return body, "multipart/form-data; boundary=" + b


class Client:
    """One keep-alive connection; post() returns (status, retry_after, seconds, server_timing) or
    (0, None, s, "") on a socket error (then the connection is rebuilt)."""

    def __init__(self, host, port, body, ctype, timeout):
        self.host, self.port, self.body, self.ctype, self.timeout = host, port, body, ctype, timeout
        self.conn = None

    def post(self):
        t0 = time.perf_counter()
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            self.conn.request("POST", "/v1/filter", self.body, {"Content-Type": self.ctype})
            r = self.conn.getresponse()
            r.read()
            ra = r.getheader("Retry-After")
            if r.getheader("Connection", "").lower() == "close":
                self.conn.close()
                self.conn = None
            return r.status, ra, time.perf_counter() - t0, r.getheader("Server-Timing", "")
        except (OSError, http.client.HTTPException):
            if self.conn:
                self.conn.close()
            self.conn = None
            return 0, None, time.perf_counter() - t0, ""


class Stats:
    def __init__(self, trace=None):
        self.lock = threading.Lock()
        self.codes, self.lat, self.bad_429 = {}, [], 0
        self.trace = trace  # a file: one CSV line per request (end time, seconds, status, Server-Timing)

    def add(self, status, retry_after, secs, timing=""):
        with self.lock:
            if self.trace:
                self.trace.write("%.4f,%.4f,%d,\"%s\"\n" % (time.time(), secs, status, timing))
            self.codes[status] = self.codes.get(status, 0) + 1
            if status == 200:
                self.lat.append(secs)
            if status == 429 and not retry_after:
                self.bad_429 += 1

    def summary(self, wall):
        n = sum(self.codes.values())
        lat = np.array(self.lat) * 1e3 if self.lat else np.array([0.0])
        return {"requests": n, "ok": self.codes.get(200, 0), "codes": {str(k): v for k, v in sorted(self.codes.items())},
                "errors": n - self.codes.get(200, 0), "rps": round(self.codes.get(200, 0) / wall, 2),
                "p50_ms": round(float(np.percentile(lat, 50)), 1), "p99_ms": round(float(np.percentile(lat, 99)), 1),
                "max_ms": round(float(lat.max()), 1), "seconds": round(wall, 1), "429_without_retry_after": self.bad_429}


def closed_loop(args, nclients, seconds, budget):
    stats, stop = Stats(), time.time() + seconds

    def run():
        c = Client("127.0.0.1", args.port, args.body, args.ctype, args.timeout)
        while time.time() < stop and budget.take():
            stats.add(*c.post())

    threads = [threading.Thread(target=run) for _ in range(nclients)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return stats.summary(time.time() - t0)


MAX_LAG_S = 0.1  # the open-loop sender's schedule is reset when it falls further behind


def open_loop(args, rate, seconds, budget, workers, on_tick=None):
    """Arrivals at `rate` per second (evenly spaced) served by up to `workers` connections."""
    stats, q = Stats(args.trace_file), queue.Queue()

    def run():
        c = Client("127.0.0.1", args.port, args.body, args.ctype, args.timeout)
        while True:
            item = q.get()
            if item is None:
                return
            stats.add(*c.post())

    threads = [threading.Thread(target=run) for _ in range(workers)]
    for t in threads:
        t.start()
    t0, sent, last_tick, base, lag = time.time(), 0, 0.0, time.time(), []
    while time.time() - t0 < seconds and budget.take():
        due = base + sent / rate
        now = time.time()
        if due > now:
            time.sleep(min(due - now, 0.05))
            if time.time() < due:
                budget.give_back()
                continue
        elif now - due > MAX_LAG_S:
            # This process was not scheduled in time (it shares the cores with the server): the
            # missed arrivals are dropped, not sent at once as a burst the offered rate never had.
            lag.append(now - due)
            base, sent = now, 0
        q.put(1)
        sent += 1
        if on_tick and time.time() - last_tick >= args.sample_s:
            last_tick = time.time()
            on_tick()
    for _ in threads:
        q.put(None)
    for t in threads:
        t.join()
    s = stats.summary(time.time() - t0)
    s["offered_rps"] = round(rate, 2)
    s["generator_lags"] = len(lag)  # times the sender fell behind by more than MAX_LAG_S
    s["generator_lag_s"] = round(sum(lag), 2)
    return s


QUANTILES = np.array(list(range(1, 100)) + [99.2, 99.4, 99.6, 99.8, 99.9, 99.95, 99.99, 100]) / 100  # soak.lua's


def wrk_run(args, conns, seconds, rate, on_tick):
    """One wrk process (soak.lua): its counts, latency quantiles (ms), wall time and client CPU."""
    nthreads = max(1, min(conns, args.wrk_threads))
    cmd = [args.wrk, "-t", str(nthreads), "-c", str(conns), "-d", "%ds" % max(1, round(seconds)),
           "--timeout", "%ds" % max(1, round(args.timeout)), "-s", os.path.join(HERE, "soak.lua"),
           "http://127.0.0.1:%d/v1/filter" % args.port, "--", args.body_file, args.ctype, "%.6g" % (rate / nthreads)]
    ru0, t0, last = resource.getrusage(resource.RUSAGE_CHILDREN), time.time(), time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    while p.poll() is None:
        time.sleep(0.1)
        if on_tick and time.time() - last >= args.sample_s:
            last = time.time()
            on_tick()
    text, wall = p.stdout.read(), time.time() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    m, q = re.search(r"^EDGED_SOAK (.*)$", text, re.M), re.search(r"^EDGED_SOAK_Q (.*)$", text, re.M)
    if p.returncode != 0 or not m or not q:
        raise SystemExit("soak.py: wrk failed (exit %d):\n%s" % (p.returncode, text[-2000:]))
    f = dict(kv.split("=", 1) for kv in m.group(1).split())
    codes = {c: int(n) for c, n in (x.split(":") for x in f["codes"].split(",") if x)}
    sock = sum(int(f[k]) for k in ("connect", "read", "write", "timeout"))
    if sock:
        codes["0"] = sock  # socket errors, as Client.post reports them
    return {"codes": codes, "q_ms": np.array([int(x) for x in q.group(1).split(",")]) / 1e3, "wall": wall,
            "lags": int(f["lags"]), "cpu": ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime}


def merged_quantile(runs, q):
    """The q-quantile of the latencies of several wrk runs, from their quantiles weighted by their
    request counts (exact at the reported quantile points, linear between them)."""
    xs = np.unique(np.concatenate([r["q_ms"] for r in runs]))
    n = np.array([sum(r["codes"].values()) for r in runs], dtype=float)
    cdf = sum(k * np.interp(xs, r["q_ms"], QUANTILES, left=0.0, right=1.0) for k, r in zip(n, runs)) / max(n.sum(), 1)
    return float(xs[min(np.searchsorted(cdf, q - 1e-9), len(xs) - 1)])


def wrk_phase(args, conns, seconds, rate=0.0, on_tick=None):
    """The ramp's or the hold's load from wrk (C, epoll: --client wrk) instead of Python threads,
    so that the client's own scheduling adds little to the latencies it reports: `conns` keep-alive
    connections, closed loop, or with rate > 0 arrivals paced at `rate` req/s (soak.lua). A phase
    longer than --segment-s runs as consecutive wrk runs of that length, each one a row of
    "segments" (req/s, p50, p99 over time); the totals and quantiles cover them all. Returns the
    Stats.summary fields, plus the offered rate, the arrivals the pacing dropped (lags) and the
    client's CPU seconds. on_tick runs every --sample-s while wrk runs."""
    runs, t0, left = [], time.time(), seconds
    piece = args.segment_s if args.segment_s > 0 else seconds
    while left > 0.5:
        runs.append(wrk_run(args, conns, min(piece, left), rate, on_tick))
        left = seconds - (time.time() - t0)
    codes = {}
    for r in runs:
        for c, k in r["codes"].items():
            codes[c] = codes.get(c, 0) + k
    wall = time.time() - t0
    n, ok = sum(codes.values()), codes.get("200", 0)
    out = {"requests": n, "ok": ok, "codes": dict(sorted(codes.items())), "errors": n - ok,
           "rps": round(ok / wall, 2), "p50_ms": round(merged_quantile(runs, 0.5), 1),
           "p99_ms": round(merged_quantile(runs, 0.99), 1), "max_ms": round(max(r["q_ms"][-1] for r in runs), 1),
           "seconds": round(wall, 1), "429_without_retry_after": 0, "offered_rps": round(rate, 2),
           "generator_lags": sum(r["lags"] for r in runs), "generator_lag_s": None, "client": "wrk",
           "client_cpu_s": round(sum(r["cpu"] for r in runs), 1)}
    if len(runs) > 1:
        out["segments"] = [{"rps": round(r["codes"].get("200", 0) / r["wall"], 1), "p50_ms": round(merged_quantile([r], 0.5), 1),
            "p99_ms": round(merged_quantile([r], 0.99), 1),
            "max_ms": round(float(r["q_ms"][-1]), 1), "errors": sum(r["codes"].values()) - r["codes"].get("200", 0)}
            for r in runs]
    return out


def load(args, conns, seconds, budget, rate=0.0, on_tick=None):
    """The ramp's (rate 0: closed loop) or the hold's load, from wrk or Python threads (--client)."""
    if args.client == "wrk":
        return wrk_phase(args, conns, seconds, rate, on_tick)
    if rate <= 0:
        return closed_loop(args, conns, seconds, budget)
    return open_loop(args, rate, seconds, budget, conns, on_tick)


class Budget:
    """The most requests the whole run may send."""

    def __init__(self, n):
        self.n, self.lock = n, threading.Lock()

    def take(self):
        with self.lock:
            if self.n <= 0:
                return False
            self.n -= 1
            return True

    def give_back(self):
        with self.lock:
            self.n += 1


def proc_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def gpu_mb(pid):
    """Device memory the process holds (nvidia-smi), MiB; None without a GPU or nvidia-smi."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) == 2 and f[0] == str(pid):
            return int(f[1])
    return None


def quarter_medians(values):
    """Instantaneous samples swing with the requests in flight; flat means no trend: the medians
    of the first and of the last quarter of the samples after the first tenth (allocator and pool
    warm-up)."""
    settled = values[len(values) // 10:] or values
    q = max(1, len(settled) // 4)
    return float(np.median(settled[:q])), float(np.median(settled[-q:]))


def metric(port, name):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    m = re.search(r"^%s (\S+)$" % name, text, re.M)
    return float(m.group(1)) if m else None


def start_server(args):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    args.port = s.getsockname()[1]
    s.close()
    cmd = [args.bin, "serve", "--host", "127.0.0.1", "--port", str(args.port), "--backend", args.backend,
           "--queue-depth", str(args.queue_depth), "--threads", str(args.threads), "--cpu-workers",
           str(args.cpu_workers), "--max-conn-per-ip", str(args.max_conn_per_ip)]
    log = open(args.log, "w")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
    for _ in range(200):
        try:
            c = http.client.HTTPConnection("127.0.0.1", args.port, timeout=1)
            c.request("GET", "/readyz")
            if c.getresponse().status == 200:
                return proc
        except OSError:
            time.sleep(0.05)
    raise SystemExit("edged did not start: see " + args.log)


class Abuse:
    """Background abuse during the hold (--abuse): each kind in its own thread, from 127.0.0.2..5."""

    COSTLY = '{"filter":"gaussian","size":63,"color":"gray","variant":"cpu_serial"}'
    SLOW = '{"filter":"gaussian","size":31,"color":"gray","variant":"cpu_serial"}'

    def __init__(self, port, png, big):
        self.port, self.png, self.big, self.stop = port, png, big, threading.Event()
        self.counts, self.lock, self.threads = {}, threading.Lock(), []

    def count(self, key):
        with self.lock:
            self.counts[key] = self.counts.get(key, 0) + 1

    def conn(self, source):
        s = socket.socket()
        s.settimeout(10)
        s.bind((source, 0))
        s.connect(("127.0.0.1", self.port))
        return s

    def idle(self):  # 80 idle connections from one address: 16 past the default cap of 64
        held = []
        while not self.stop.is_set():
            while len(held) < 80:
                try:
                    held.append(self.conn("127.0.0.2"))
                except OSError:
                    self.count("idle_connect_error")
                    break
            self.stop.wait(1.0)
            alive = []
            for s in held:
                s.setblocking(False)
                try:
                    got = s.recv(1)
                    s.close()
                    self.count("idle_cut" if got == b"" else "idle_data")
                except BlockingIOError:
                    alive.append(s)
                except OSError:
                    s.close()
                    self.count("idle_reset")
            held = alive
        for s in held:
            s.close()

    def post(self, source, params, leave_after=None, stall=False, png=None):
        body, ctype = multipart(png or self.png, params)
        try:
            s = self.conn(source)
            head = ("POST /v1/filter HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n" %
                    (ctype, (8 << 20) if stall else len(body))).encode()
            s.sendall(head + (body[:1024] if stall else body))
            if stall:
                self.stop.wait(5)
                s.close()
                self.count("stalled")
                return
            if leave_after is not None:
                time.sleep(leave_after)
                s.close()
                self.count("left")
                return
            got = s.recv(64)
            s.close()
            m = re.match(rb"HTTP/1\.1 (\d+)", got)
            self.count("costly_" + (m.group(1).decode() if m else "none"))
        except OSError:
            self.count(("stall" if stall else "post") + "_socket_error")

    def every(self, period, fn):
        def run():
            while not self.stop.wait(period):
                fn()
        t = threading.Thread(target=run, daemon=True)
        t.start()
        self.threads.append(t)

    def start(self):
        t = threading.Thread(target=self.idle, daemon=True)
        t.start()
        self.threads.append(t)
        self.every(2.0, lambda: self.post("127.0.0.3", "{}", stall=True))
        self.every(3.0, lambda: self.post("127.0.0.4", self.COSTLY, png=self.big))
        self.every(3.0, lambda: self.post("127.0.0.5", self.SLOW, leave_after=0.2))

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(10)
        return dict(self.counts)


def main():
    # A client thread whose answer has arrived waits for the interpreter lock at most this long (the
    # default is 5 ms): that wait would count in the latency as if the server had taken it.
    sys.setswitchinterval(0.001)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/edged")
    ap.add_argument("--url", help="use a running server (http://127.0.0.1:PORT) instead of --bin")
    ap.add_argument("--pid", type=int, help="its pid, for RSS and fds (with --url)")
    ap.add_argument("--size", type=int, default=512, help="image side (RGB photograph, tests/bench/photos.py)")
    ap.add_argument("--synthetic", action="store_true", help="photos.py's synthetic image instead of a photograph")
    ap.add_argument("--params", default='{"filter":"edge"}')
    ap.add_argument("--ramp", default="1,2,3,4,6,8,12")
    ap.add_argument("--step-s", type=float, default=20)
    ap.add_argument("--knee-frac", type=float, default=0.9,
                    help="the knee: the fewest clients reaching this fraction of the best error-free req/s")
    ap.add_argument("--hold-frac", type=float, default=0.7)
    ap.add_argument("--hold-s", type=float, default=600)
    ap.add_argument("--over-mult", type=float, default=2.0)
    ap.add_argument("--over-s", type=float, default=60)
    ap.add_argument("--sample-s", type=float, default=5)
    ap.add_argument("--queue-depth", type=int, default=64, help="the server's --queue-depth (its default)")
    ap.add_argument("--max-conn-per-ip", type=int, default=0,
                    help="the server's cap; 0 (off) as every client here is 127.0.0.1")
    ap.add_argument("--backend", default="cpu", help="the server's --backend (cpu, gpu)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cpu-workers", type=int, default=2)
    ap.add_argument("--workers", type=int, default=128,
                    help="open-loop connections at most: above the admission bound, so that overload reaches it")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--client", choices=["wrk", "python"],
                    help="what drives the ramp and the hold: wrk (default where installed: C, so the "
                    "latencies are the server's) or Python threads; the overload is always Python's (it checks "
                    "every 429's Retry-After)")
    ap.add_argument("--wrk", default="wrk")
    ap.add_argument("--wrk-threads", type=int, default=2, help="wrk -t")
    ap.add_argument("--segment-s", type=float, default=60,
                    help="with wrk: a longer phase runs as wrk runs of this length, reported one by one "
                    "(0: one run)")
    ap.add_argument("--max-requests", type=int, default=400000)
    ap.add_argument("--quick", action="store_true", help="short phases: ramp 1,2,4 x 4 s, hold 20 s, overload 10 s")
    ap.add_argument("--rate", type=float, default=0, help="steady mode: hold at this many req/s (no ramp, no overload)")
    ap.add_argument("--minutes", type=float, default=10, help="steady mode: hold this long")
    ap.add_argument("--abuse", action="store_true", help="during the hold: idle connections, stalled uploads, "
                    "costly and abandoned jobs from other loopback addresses (counted apart)")
    ap.add_argument("--json", default="")
    ap.add_argument("--log", default="/tmp/edged-soak.log")
    ap.add_argument("--trace", default="", help="CSV of every open-loop request: end time, seconds, status, "
                    "Server-Timing (to see where slow requests spent their time)")
    args = ap.parse_args()
    args.client = args.client or ("wrk" if shutil.which(args.wrk) else "python")
    if args.quick:
        args.ramp, args.step_s, args.hold_s, args.over_s, args.sample_s = "1,2,4", 4, 20, 10, 2
    args.trace_file = open(args.trace, "w") if args.trace else None
    kind = "synthetic" if args.synthetic else "photo"
    png = input_png(args.size, kind)
    args.body, args.ctype = multipart(png, args.params)
    args.body_file = os.path.join(os.path.dirname(os.path.abspath(args.log)), "edged-soak-body-%d.bin" % os.getpid())
    with open(args.body_file, "wb") as f:
        f.write(args.body)
    proc = None
    if args.url:
        args.port = int(args.url.rsplit(":", 1)[1].strip("/"))
        pid = args.pid
    else:
        proc = start_server(args)
        pid = proc.pid
    budget = Budget(args.max_requests)
    out = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "cpus": os.cpu_count(),
           "image": "%dx%d RGB %s, %d bytes" % (args.size, args.size, kind, len(png)), "params": args.params,
           "queue_depth": args.queue_depth, "client": args.client, "ramp": [], "ok": True, "failures": []}

    def fail(msg):
        out["ok"] = False
        out["failures"].append(msg)
        print("FAIL: " + msg, flush=True)

    abuse = None
    try:
        closed_loop(args, 1, min(3, args.step_s), budget)  # warm-up
        if args.rate > 0:
            args.ramp, args.hold_s, args.hold_frac = "", args.minutes * 60, 1.0
        for n in [int(x) for x in args.ramp.split(",") if x]:
            r = load(args, n, args.step_s, budget)
            r["clients"] = n
            out["ramp"].append(r)
            print("ramp  clients %3d  %7.1f req/s  p50 %7.1f ms  p99 %7.1f ms  errors %d %s" %
                  (n, r["rps"], r["p50_ms"], r["p99_ms"], r["errors"], r["codes"]), flush=True)
            if r["errors"]:
                fail("ramp at %d clients: %d errors %s" % (n, r["errors"], r["codes"]))
        clean = [r for r in out["ramp"] if not r["errors"]]
        if args.rate > 0:
            knee = {"clients": 0, "rps": args.rate, "p50_ms": closed_loop(args, 1, 3, budget)["p50_ms"]}
        else:
            best = max(r["rps"] for r in clean)
            knee = min((r for r in clean if r["rps"] >= args.knee_frac * best), key=lambda r: r["clients"])
        out["knee"] = {"clients": knee["clients"], "rps": knee["rps"], "p50_ms": knee["p50_ms"]}
        print("knee: %d clients, %.1f req/s" % (knee["clients"], knee["rps"]), flush=True)

        samples = []

        def sample():
            samples.append({"t": round(time.time() - t_hold, 1), "rss_kb": proc_kb(pid, "VmRSS"),
                            "hwm_kb": proc_kb(pid, "VmHWM"), "fds": fds(pid),
                            "gpu_mb": gpu_mb(pid) if args.backend == "gpu" else None})

        if args.abuse:
            abuse = Abuse(args.port, input_png(1000, kind), input_png(2000, kind))
            abuse.start()
        if args.rate > 0:  # warm-up at the rate (and under the abuse): RSS is compared from after it
            load(args, args.workers, min(60, args.hold_s / 10), budget, args.rate)
        t_hold = time.time()
        sample()
        hold = load(args, args.workers, args.hold_s, budget, args.hold_frac * knee["rps"], sample)
        if args.client == "wrk":
            time.sleep(1)  # wrk has closed its connections when it exits; the server closes them now
        sample()
        hold["samples"] = samples
        if abuse:
            out["abuse"] = abuse.finish()
            abuse = None
            print("abuse %s" % out["abuse"], flush=True)
            time.sleep(2)  # the abusers' connections close; descriptors are compared after
            samples.append(dict(samples[-1], fds=fds(pid)))
        # RSS: the quarter medians, and the peak (VmHWM) from the first tenth to the end.
        settled = samples[len(samples) // 10:] or samples
        first, last = quarter_medians([x["rss_kb"] for x in samples])
        gpu = [x["gpu_mb"] for x in samples if x["gpu_mb"] is not None]
        if gpu:
            hold["gpu_mb_start"], hold["gpu_mb_end"] = gpu[0], gpu[-1]
            hold["gpu_mb_median_first_quarter"], hold["gpu_mb_median_last_quarter"] = quarter_medians(gpu)
        hold.update({"rss_start_kb": samples[0]["rss_kb"], "rss_end_kb": samples[-1]["rss_kb"],
                     "rss_median_first_quarter_kb": first, "rss_median_last_quarter_kb": last,
                     "hwm_settled_kb": settled[0]["hwm_kb"], "hwm_end_kb": samples[-1]["hwm_kb"],
                     "fds_start": samples[0]["fds"], "fds_end": samples[-1]["fds"],
                     "fds_max": max(x["fds"] for x in samples), "nsamples": len(samples)})
        out["hold"] = hold
        print("hold  %.1f req/s offered, %.1f served, %d requests, p50 %.1f ms, p99 %.1f ms, errors %d, RSS %d -> %d kB "
              "(median first/last quarter %.0f / %.0f kB, peak %d -> %d kB), fds %d -> %d, sender lags %d, client %s "
              "(%s CPU s)" %
              (hold["offered_rps"], hold["rps"], hold["requests"], hold["p50_ms"], hold["p99_ms"], hold["errors"],
               hold["rss_start_kb"], hold["rss_end_kb"], first, last, hold["hwm_settled_kb"], hold["hwm_end_kb"],
               hold["fds_start"], hold["fds_end"], hold["generator_lags"], args.client, hold.get("client_cpu_s", "?")),
              flush=True)
        for k, g in enumerate(hold.get("segments", [])):
            print("hold  piece %2d  %7.1f req/s  p50 %6.1f ms  p99 %6.1f ms  max %6.1f ms  errors %d" %
                  (k + 1, g["rps"], g["p50_ms"], g["p99_ms"], g["max_ms"], g["errors"]), flush=True)
        if hold["errors"]:
            fail("hold: %d errors %s" % (hold["errors"], hold["codes"]))
        # flat: within 10 % of the settled value (16 MiB for a small process), since the bodies and
        # images in flight at the sampling instant are part of it
        if last - first > max(16 * 1024, 0.1 * first):
            fail("hold: RSS grew more than 10 %% (median %.0f -> %.0f kB)" % (first, last))
        if gpu:
            print("hold  GPU memory %d -> %d MiB (median first/last quarter %.0f / %.0f MiB)" %
                  (gpu[0], gpu[-1], hold["gpu_mb_median_first_quarter"], hold["gpu_mb_median_last_quarter"]), flush=True)
            if hold["gpu_mb_median_last_quarter"] - hold["gpu_mb_median_first_quarter"] > 64:
                fail("hold: GPU memory grew (median %.0f -> %.0f MiB)" %
                     (hold["gpu_mb_median_first_quarter"], hold["gpu_mb_median_last_quarter"]))
        if hold["fds_end"] > hold["fds_start"] + 4:
            fail("hold: fds grew %d -> %d" % (hold["fds_start"], hold["fds_end"]))
        hold["p99_over_p50"] = round(hold["p99_ms"] / max(hold["p50_ms"], 1e-3), 2)
        if hold["p99_over_p50"] > 3 and not args.abuse:  # the abuse's slow jobs share the cores
            fail("hold: p99 %.1f ms is %.1f x p50 (at most 3)" % (hold["p99_ms"], hold["p99_over_p50"]))

        if args.rate > 0:
            for _ in range(100):  # the abusers' reservations end with their requests
                used = metric(args.port, "edged_memory_budget_bytes")
                if not used:
                    break
                time.sleep(0.1)
            out["memory_budget_end"] = used
            if used:
                fail("memory budget not back to 0 after the hold: %s bytes" % used)
            return finish(args, proc, out)

        depth = []

        def sample_depth():
            depth.append(metric(args.port, "edged_queue_depth"))

        over = open_loop(args, args.over_mult * knee["rps"], args.over_s, budget, args.workers, sample_depth)
        over["queue_depth_max"] = max(d for d in depth if d is not None) if depth else None
        out["overload"] = over
        print("over  %.1f req/s offered, %.1f served, %d requests, codes %s, p50 %.1f ms, p99 %.1f ms, queue max %s/%d"
              % (over["offered_rps"], over["rps"], over["requests"], over["codes"], over["p50_ms"], over["p99_ms"],
                 over["queue_depth_max"], args.queue_depth), flush=True)
        if set(over["codes"]) - {"200", "429"}:
            fail("overload: statuses other than 200 and 429: %s" % over["codes"])
        if over["429_without_retry_after"]:
            fail("overload: %d answers 429 without Retry-After" % over["429_without_retry_after"])
        if over["queue_depth_max"] is not None and over["queue_depth_max"] > args.queue_depth:
            fail("overload: queue depth %s above its bound %d" % (over["queue_depth_max"], args.queue_depth))
        if "429" not in over["codes"]:
            fail("overload: no 429 at %.0f req/s offered: the admission bound was never reached" % over["offered_rps"])

        t0 = time.time()
        c = Client("127.0.0.1", args.port, args.body, args.ctype, args.timeout)
        while time.time() - t0 < 30:
            status, _, secs, _ = c.post()
            if status == 200 and secs * 1e3 < 2 * max(hold["p50_ms"], knee["p50_ms"]):
                break
            time.sleep(0.1)
        out["recovery_s"] = round(time.time() - t0, 2)
        print("recovery: %.2f s until a request was served at hold latency" % out["recovery_s"], flush=True)
        if out["recovery_s"] >= 30:
            fail("no recovery within 30 s")
        out["rss_end_kb"] = proc_kb(pid, "VmRSS")
        out["fds_end"] = fds(pid)
    finally:
        if abuse:
            abuse.finish()
        if proc and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            out["exit_status"] = proc.wait(60)
            if out["exit_status"] != 0:
                fail("edged exited %d" % out["exit_status"])
    return finish(args, None, out)  # after the finally: a return inside it would override the steady one


def finish(args, proc, out):
    """Stops the server (when proc), prints and writes the summary; the exit status."""
    if proc:
        proc.send_signal(signal.SIGTERM)
        out["exit_status"] = proc.wait(60)
        if out["exit_status"] != 0:
            out["ok"] = False
            out["failures"].append("edged exited %d" % out["exit_status"])
    print(json.dumps({k: v for k, v in out.items() if k != "hold"} | {"hold": {k: v for k, v in out["hold"].items()
                                                                                if k != "samples"}}))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    if os.path.exists(args.body_file):
        os.unlink(args.body_file)
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
