#!/usr/bin/python3
"""service.py — load figures of `edged serve` with wrk (run through tests/bench/service.sh, which
finds wrk). For each image size, filter and connection count: req/s, p50/p99 latency, answers >= 400,
CPU of the server (/proc/PID/stat) and of wrk (its rusage), the mean time per request of each
stage from /metrics deltas, and on the GPU backend a job's hold on its stream by phase. With --base-bin, every case also runs on a second binary (e.g. the
previous release), interleaved, and the table shows both figures and their ratio.

The inputs are photographs composed from scikit-image's sample photographs (tests/bench/photos.py),
as PNG written by libpng or as JPEG/WebP (--input-format); --synthetic takes the synthetic image
instead (waves, shapes, texture: far fewer edges than a photograph). The table says which. Each
server gets a warm-up run per size and filter before it is measured, and after every wrk run the
script waits for the server to finish the requests wrk left behind, so they do not count against
the next case.

    /usr/bin/python3 tests/bench/service.py --bin build/edged --backend gpu --sizes 512,2048,4096 \\
        --filters edge,gaussian:7 --conns 1,16,64 --duration 10s --out out/service
Every option also reads the environment (BIN BASE_BIN BACKEND DURATION SIZES FILTERS CONNS PORT
OUT INPUTS INPUT_FORMAT SYNTHETIC=1 PARAMS WARMUP WRK WRK_TIMEOUT); flags win.
"""
import argparse
import csv
import datetime
import json
import os
import platform
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import photos  # noqa: E402  (beside this file)

# Limits raised for 4096^2 bodies and 64 waiting connections. Given as environment (EDGED_*) rather
# than flags, so that an older binary that lacks one of them still starts.
SERVER_ENV = {"EDGED_MAX_BODY_MB": "256", "EDGED_QUEUE_DEPTH": "1024", "EDGED_QUEUE_DEADLINE_MS": "3600000",
              "EDGED_MAX_CONN_PER_IP": "0", "EDGED_MAX_CONNECTIONS": "1024", "EDGED_REQUEST_TIMEOUT_S": "3600",
              "EDGED_CONN_TIMEOUT_S": "3600"}
CLK_TCK = os.sysconf("SC_CLK_TCK")


def options():
    env = os.environ.get
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=env("BIN", "build/edged"))
    ap.add_argument("--base-bin", default=env("BASE_BIN", ""), help="a second binary to compare with")
    ap.add_argument("--backend", default=env("BACKEND", "auto"), help="cpu, gpu or auto")
    ap.add_argument("--duration", default=env("DURATION", "10s"), help="wrk -d of each measured run")
    ap.add_argument("--warmup", default=env("WARMUP", "3s"), help="wrk -d of the warm-up per size and filter")
    ap.add_argument("--sizes", default=env("SIZES", "512,2048,4096"))
    ap.add_argument("--filters", default=env("FILTERS", "edge,gaussian:7"), help="NAME or NAME:SIZE, comma-separated")
    ap.add_argument("--conns", default=env("CONNS", "1,16,64"))
    ap.add_argument("--port", type=int, default=int(env("PORT", "0") or 0), help="0: free ports; base uses PORT+1")
    ap.add_argument("--out", default=env("OUT", "out/service"))
    ap.add_argument("--inputs", default=env("INPUTS", ""), help="where the input PNGs are kept (default OUT/inputs)")
    ap.add_argument("--input-format", default=env("INPUT_FORMAT", "png"), choices=["png", "jpeg", "webp"],
                    help="how the input photographs are encoded (JPEG/WebP at quality 90)")
    ap.add_argument("--synthetic", action="store_true", default=env("SYNTHETIC", "") not in ("", "0"),
                    help="the synthetic image (photos.py --synthetic) instead of the photographs")
    ap.add_argument("--params", default=env("PARAMS", ""),
                    help='JSON object merged into every request\'s params, e.g. {"format":"jpeg"}')
    ap.add_argument("--wrk", default=env("WRK", "wrk"))
    ap.add_argument("--wrk-timeout", default=env("WRK_TIMEOUT", "120s"),
                    help="wrk --timeout (a slower answer counts as an error)")
    return ap.parse_args()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read()


class Server:
    """One `edged serve` on 127.0.0.1, started here and stopped with SIGTERM."""

    def __init__(self, label, path, backend, port, out):
        self.label, self.path = label, path
        self.port = port or free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        env = dict(os.environ, EDGED_HOST="127.0.0.1", EDGED_PORT=str(self.port), EDGED_BACKEND=backend, **SERVER_ENV)
        self.log = open(os.path.join(out, "server_%s.log" % label), "wb")
        self.proc = subprocess.Popen([path, "serve"], env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.wait_ready()
        self.version = json.loads(http_get(self.url + "/version")[1])
        self.idle_in_flight = self.metrics().get("edged_requests_in_flight", 0)  # counts /metrics itself or not

    def wait_ready(self, limit=120.0):
        until = time.time() + limit
        while time.time() < until:
            if self.proc.poll() is not None:
                sys.exit("service.py: %s exited with %d (log: %s)" % (self.path, self.proc.returncode, self.log.name))
            try:
                if http_get(self.url + "/readyz", 1)[0] == 200:
                    return
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.1)
        self.stop()
        sys.exit("service.py: %s not ready after %.0f s (backend available?)" % (self.path, limit))

    def cpu_seconds(self):
        """utime + stime of the server process so far."""
        with open("/proc/%d/stat" % self.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def metrics(self):
        """{name{labels}: value} of the /metrics text."""
        text = http_get(self.url + "/metrics")[1].decode()
        return {k: float(v) for k, v in re.findall(r"^(edged_[^ ]+) (\S+)$", text, re.M)}

    def settle(self, limit=3600.0):
        """Waits until requests left behind by wrk are answered (queue empty, in flight as when idle);
        returns the last metrics."""
        until = time.time() + limit
        while True:
            m = self.metrics()
            idle = m.get("edged_requests_in_flight", 0) <= self.idle_in_flight and m.get("edged_queue_depth", 0) == 0
            if idle or time.time() > until:
                return m
            time.sleep(0.1)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        self.trim_log()

    def trim_log(self, keep=20):
        """Drops the access-log lines (one per request: hundreds of MB after a GPU run) but the last
        few; every other line (start, errors, drain) stays."""
        tmp, dropped, tail = self.log.name + ".tmp", 0, []
        with open(self.log.name, "rb") as src, open(tmp, "wb") as dst:
            for line in src:
                if b'"event":"request"' in line:
                    tail.append(line)
                    if len(tail) > keep:
                        tail.pop(0)
                        dropped += 1
                else:
                    dst.write(line)
            if dropped:
                dst.write(b"(%d access-log lines left out; the last %d follow)\n" % (dropped, len(tail)))
            dst.writelines(tail)
        os.replace(tmp, self.log.name)


def filter_params(spec, extra=""):
    """params of one case: NAME or NAME:SIZE, plus the --params object."""
    name, _, size = spec.partition(":")
    params = {"filter": name}
    if size:
        params["size"] = int(size)
    params.update(json.loads(extra) if extra else {})
    return params


def multipart(image, params):
    """(body, content type) of a POST /v1/filter form: the image file and the params JSON. The
    server sniffs the format from the bytes; the file name and part type are only labels."""
    boundary = "edgedbench%016x" % int.from_bytes(os.urandom(8), "big")
    head = ('--%s\r\nContent-Disposition: form-data; name="params"\r\n\r\n%s\r\n'
            '--%s\r\nContent-Disposition: form-data; name="image"; filename="photo"\r\n'
            'Content-Type: application/octet-stream\r\n\r\n' % (boundary, json.dumps(params), boundary)).encode()
    return head + image + ("\r\n--%s--\r\n" % boundary).encode(), "multipart/form-data; boundary=" + boundary


def check_once(server, body, ctype):
    """One request outside wrk: the case must answer 200 before it is worth measuring."""
    req = urllib.request.Request(server.url + "/v1/filter", data=body, headers={"Content-Type": ctype})
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            return len(r.read())
    except urllib.error.HTTPError as e:
        sys.exit("service.py: %s answered %d: %s" % (server.label, e.code, e.read()[:300]))


def run_wrk(args, server, conns, duration, body_path, ctype, raw_path):
    """One wrk run; returns its EDGED_WRK fields plus client CPU seconds and wall seconds."""
    threads = max(1, min(conns, (os.cpu_count() or 2) // 2))
    cmd = [args.wrk, "-c", str(conns), "-t", str(threads), "-d", duration, "--latency", "--timeout",
           args.wrk_timeout, "-s", os.path.join(HERE, "service.lua"), server.url, "--", body_path, ctype]
    t0 = time.perf_counter()
    with open(raw_path, "w") as f:
        f.write("# %s\n" % " ".join(cmd))
        f.flush()
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    with open(raw_path) as f:
        text = f.read()
    m = re.search(r"^EDGED_WRK (.*)$", text, re.M)
    if proc.returncode != 0 or not m:
        sys.exit("service.py: wrk failed (exit %d), see %s:\n%s" % (proc.returncode, raw_path, text[-2000:]))
    res = {k: float(v) for k, v in (kv.split("=") for kv in m.group(1).split())}
    res["client_cpu_s"] = usage.ru_utime + usage.ru_stime
    res["wall_s"] = wall
    return res


HOLD_PHASES = ("pending", "device", "handoff")  # edged_gpu_device_stream_seconds_total's phases


def measure(args, server, conns, body_path, ctype, raw_path):
    """One measured case on one server: wrk figures, CPU and per-stage means (ms per request)."""
    before, cpu0, t0 = server.settle(), server.cpu_seconds(), time.perf_counter()
    w = run_wrk(args, server, conns, args.duration, body_path, ctype, raw_path)
    after = server.settle()
    cpu1, t1 = server.cpu_seconds(), time.perf_counter()
    count = 'edged_stage_seconds_count{stage="total"}'
    served = after.get(count, 0) - before.get(count, 0)
    cpu = cpu1 - cpu0
    # served_s counts the requests wrk left in flight too, over the time until they were answered: the
    # throughput where single requests outlast the run (large images, many connections, CPU backend)
    row = {"req_s": w["requests"] / (w["duration_us"] / 1e6), "served_s": served / (t1 - t0),
           "p50_ms": w["p50_us"] / 1e3, "p99_ms": w["p99_us"] / 1e3, "requests": int(w["requests"]),
           "non2xx": int(w["status"]), "sock_errors": int(w["connect"] + w["read"] + w["write"] + w["timeout"]),
           "server_cpu_pct": 100 * cpu / (t1 - t0), "server_cpu_ms_req": 1e3 * cpu / served if served else 0,
           "client_cpu_pct": 100 * w["client_cpu_s"] / w["wall_s"], "served": int(served)}
    for key in after:  # every stage the server reports, in its own order
        m = re.fullmatch(r'edged_stage_seconds_sum\{stage="(\w+)"\}', key)
        if m:
            row["stage_" + m.group(1)] = 1e3 * (after[key] - before.get(key, 0)) / served if served else 0
    # what total holds beyond the named stages (codec_wait is one of them)
    named = sum(v for k, v in row.items() if k.startswith("stage_") and k != "stage_total")
    row["other_ms"] = row.get("stage_total", 0) - named
    # a GPU job's hold on its stream by phase, ms per job the devices completed (0 without a GPU, or
    # for a binary that does not export it)
    delta = lambda k: after[k] - before.get(k, 0)
    gpu_jobs = sum(delta(k) for k in after if k.startswith("edged_gpu_device_jobs_total{"))
    for phase in HOLD_PHASES:
        secs = sum(delta(k) for k in after
                   if re.fullmatch(r'edged_gpu_device_stream_seconds_total\{device="\d+",phase="%s"\}' % phase, k))
        row["hold_" + phase] = 1e3 * secs / gpu_jobs if gpu_jobs else 0
    return row


def identity(path):
    """The first line of a binary's --version, for the table's header."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout
        return (out.strip().split("\n") or ["?"])[0] or "?"
    except OSError:
        return "?"


def fmt(v):
    if isinstance(v, int):
        return str(v)
    return "%.0f" % v if abs(v) >= 100 else "%.1f" % v if abs(v) >= 10 else "%.2f" % v


def cell(rows, key, with_ratio):
    """One figure, or 'new / base ×ratio' when two binaries ran."""
    if len(rows) == 1:
        return fmt(rows[0][key])
    a, b = rows[0][key], rows[1][key]
    ratio = " ×%.2f" % (a / b) if with_ratio and b else ""
    return "%s / %s%s" % (fmt(a), fmt(b), ratio)


def markdown(header, cases, labels):
    stages = [k for k in cases[0][1][0] if k.startswith("stage_") and any(r[k] for _, rs in cases for r in rs)]
    holds = [k for k in cases[0][1][0] if k.startswith("hold_") and any(r[k] for _, rs in cases for r in rs)]
    inputs = {size: "%s (%.2f MB)" % (rows[0]["input"], rows[0]["input_bytes"] / 1e6) for (size, _, _), rows in cases}
    cols = [("req/s", "req_s", True), ("served/s", "served_s", True), ("p50 ms", "p50_ms", True),
            ("p99 ms", "p99_ms", True), ("non-2xx", "non2xx", False), ("sock err", "sock_errors", False),
            ("server CPU %", "server_cpu_pct", False), ("server CPU ms/req", "server_cpu_ms_req", True),
            ("wrk CPU %", "client_cpu_pct", False)] + [(k[6:] + " ms", k, False) for k in stages] + [
            ("other ms", "other_ms", False)] + [("stream %s ms/job" % k[5:], k, False) for k in holds]
    lines = header + [""]
    if len(labels) > 1:
        lines += ["Cells: %s / %s, ×ratio (%s over %s)." % (labels[0], labels[1], labels[0], labels[1]), ""]
    lines.append("| size | input | filter | conns | " + " | ".join(c[0] for c in cols) + " |")
    lines.append("|---" * (4 + len(cols)) + "|")
    for (size, flt, conns), rows in cases:
        cells = " | ".join(cell(rows, c[1], c[2]) for c in cols)
        lines.append("| %d² | %s | %s | %d | %s |" % (size, inputs[size], flt, conns, cells))
    return "\n".join(lines) + "\n"


def header(args, servers):
    v = servers[0].version
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    what = ("the synthetic image (tests/bench/photos.py --synthetic: waves, shapes, texture, noise)" if args.synthetic
            else "photographs composed from scikit-image's sample photographs (tests/bench/photos.py)")
    lines = ["# edged service benchmark (wrk)", "",
             "%s UTC; host %s, %d cores; backend %s (%s); wrk -d %s, -t min(conns, cores/2); inputs: %s, %s%s"
             % (now, platform.node(), os.cpu_count() or 0, v.get("backend"), v.get("device"), args.duration, what,
                "libpng level 6" if args.input_format == "png" else args.input_format + " quality 90",
                "; params " + args.params if args.params else "")]
    return lines + ["- %s: `%s` (%s)" % (s.label, s.path, identity(s.path)) for s in servers]


def input_image(args, size):
    """(file name, bytes) of the input of one size in --input-format, written once into OUT/inputs."""
    kind = "synthetic" if args.synthetic else "photo"
    name = photos.file_name(size, args.input_format, kind)
    path = os.path.join(args.inputs, name)
    if not os.path.exists(path):
        photos.write_photo(path, size, fmt=args.input_format, kind=kind)
    with open(path, "rb") as f:
        return name, f.read()


def run_size_filter(args, servers, size, flt, conns, first):
    """Warm-up, then every connection count on every server (who goes first alternates, starting
    with servers[first]); returns [((size, filter, conns), [row per server])]."""
    name, image = input_image(args, size)
    body, ctype = multipart(image, filter_params(flt, args.params))
    tag = "%d_%s" % (size, flt.replace(":", ""))
    body_path = os.path.join(args.inputs, "body_%s.bin" % tag)
    with open(body_path, "wb") as f:
        f.write(body)
    for s in servers:  # warm-up: first answers, pools, caches, clocks
        check_once(s, body, ctype)
        run_wrk(args, s, max(conns), args.warmup, body_path, ctype,
                os.path.join(args.out, "raw", "%s_%s_warmup.txt" % (s.label, tag)))
        s.settle()
    cases = []
    for i, n in enumerate(conns):
        order = servers if (first + i) % 2 == 0 else servers[::-1]
        rows = {}
        for s in order:
            raw = os.path.join(args.out, "raw", "%s_%s_c%d.txt" % (s.label, tag, n))
            r = rows[s.label] = measure(args, s, n, body_path, ctype, raw)
            r["input"], r["input_bytes"] = name, len(image)
            print("%-5s %5d² %-11s c=%-3d %8.1f req/s  p50 %8.1f ms  p99 %8.1f ms  non-2xx %d  server CPU %4.0f%%  "
                  "wrk CPU %3.0f%%" % (s.label, size, flt, n, r["req_s"], r["p50_ms"], r["p99_ms"], r["non2xx"],
                                       r["server_cpu_pct"], r["client_cpu_pct"]), flush=True)
        cases.append(((size, flt, n), [rows[s.label] for s in servers]))
    os.remove(body_path)  # made again in a moment from the image file; 4096² bodies are tens of MB
    return cases


def write_results(args, servers, head, cases):
    with open(os.path.join(args.out, "summary.csv"), "w", newline="") as f:
        w = None
        for (size, flt, n), rows in cases:
            for s, r in zip(servers, rows):
                line = dict({"binary": s.label, "path": s.path, "size": size, "filter": flt, "conns": n}, **r)
                if w is None:
                    w = csv.DictWriter(f, fieldnames=list(line))
                    w.writeheader()
                w.writerow(line)
    md = markdown(head, cases, [s.label for s in servers])
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(md)
    print("\n" + md + "\n(raw wrk outputs, summary.csv and summary.md in %s)" % args.out)


def main():
    args = options()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    filters = [f for f in args.filters.split(",") if f]
    conns = [int(c) for c in args.conns.split(",") if c]
    args.inputs = args.inputs or os.path.join(args.out, "inputs")
    for d in (os.path.join(args.out, "raw"), args.inputs):
        os.makedirs(d, exist_ok=True)
    bins = [("new", args.bin)] + ([("base", args.base_bin)] if args.base_bin else [])
    servers, cases = [], []
    try:
        for i, (label, path) in enumerate(bins):
            servers.append(Server(label, path, args.backend, args.port + i if args.port else 0, args.out))
        head = header(args, servers)
        print("\n".join(head), flush=True)
        for size in sizes:
            for flt in filters:
                cases += run_size_filter(args, servers, size, flt, conns, len(cases) % 2)
    finally:
        for s in servers:
            s.stop()
    write_results(args, servers, head, cases)


if __name__ == "__main__":
    main()
