#!/usr/bin/env python3
"""fence_load.py — a GPU that fails under load costs its share, not the service: drives a debug
build (`make debug GPU=1`: the EDGED_FAULT switch) serving from every GPU with wrk, poisons one
device mid-run, and reports the answers by status, /readyz throughout, and the answers a second
before and after the fault; then, with --last, lets every device fault and checks that the process
exits non-zero. Needs at least two GPUs. Prints one JSON object per phase.

usage: python3 tests/bench/fence_load.py --bin build-faults/edged --input photo_2048.jpg
           [--fault spin|illegal|trap|assert] [--conns 128] [--duration 12] [--fault-at 3000] [--last]
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
WATCHDOG_MS = 2000  # the server's --gpu-watchdog-ms here: a stuck device is fenced this long after the fault
sys.path.insert(0, HERE)
import service  # noqa: E402  (tests/bench/service.py: free ports, the multipart body, wrk's script)


def get(url, timeout=2):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


def counters(text):
    """{code: answered} and the fenced device count of a /metrics text."""
    codes = {int(c): float(v) for c, v in re.findall(r'^edged_requests_total\{code="(\d+)"\} (\S+)$', text, re.M)}
    fenced = re.search(r'^edged_gpu_devices\{state="fenced"\} (\S+)$', text, re.M)
    return codes, float(fenced.group(1)) if fenced else 0.0


class Sampler(threading.Thread):
    """Every 0.25 s: /readyz and /metrics from the probe listener (its own connections)."""

    def __init__(self, probe):
        super().__init__(daemon=True)
        self.probe, self.rows, self.stop = probe, [], threading.Event()

    def run(self):
        while not self.stop.is_set():
            ready = get(self.probe + "/readyz")[0]
            status, text = get(self.probe + "/metrics")
            codes, fenced = counters(text) if status == 200 else ({}, None)
            self.rows.append((time.time(), ready, codes, fenced))
            time.sleep(0.25)


def start(args, env_extra, port, mport):
    env = dict(os.environ, EDGED_HOST="127.0.0.1", EDGED_PORT=str(port), EDGED_BACKEND="gpu",
               EDGED_GPU_WATCHDOG_MS=str(WATCHDOG_MS), EDGED_FAULT_SPIN_MS="600000",
               EDGED_METRICS_LISTEN="127.0.0.1:%d" % mport, **service.SERVER_ENV, **env_extra)
    log = tempfile.NamedTemporaryFile(prefix="fence_", suffix=".log", delete=False)
    proc = subprocess.Popen([args.bin, "serve", "--gpus", args.gpus], env=env, stdout=log, stderr=subprocess.STDOUT)
    until = time.time() + 120
    while time.time() < until and get("http://127.0.0.1:%d/readyz" % mport)[0] != 200:
        if proc.poll() is not None:
            sys.exit("fence_load.py: the server exited with %d (log %s)" % (proc.returncode, log.name))
        time.sleep(0.1)
    return proc, log


def wrk(args, url, body_path, ctype, seconds):
    threads = max(1, min(args.conns, (os.cpu_count() or 2) // 4))
    cmd = [os.environ.get("WRK", "wrk"), "-c", str(args.conns), "-t", str(threads), "-d", "%ds" % seconds,
           "--timeout", "60s", "-s", os.path.join(HERE, "service.lua"), url, "--", body_path, ctype]
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    m = re.search(r"EDGED_WRK (.*)", out)
    return dict(kv.split("=") for kv in m.group(1).split()) if m else {"raw": out[-500:]}


def rate_around(rows, t_fault, t_fence, span=2.0):
    """200 answers a second in the span before the fault and in the span starting 1 s after the
    fence (the fault's own moment is not in the log: for a stuck kernel it is the fence less the
    watchdog, for a sticky error the fence itself)."""
    def ok_at(when):
        best = min(rows, key=lambda r: abs(r[0] - when))
        return best[2].get(200, 0.0), best[0]
    b0, tb0 = ok_at(t_fault - 0.5 - span)
    b1, tb1 = ok_at(t_fault - 0.5)
    a0, ta0 = ok_at(t_fence + 1.0)
    a1, ta1 = ok_at(t_fence + 1.0 + span)
    before = (b1 - b0) / max(tb1 - tb0, 1e-6)
    after = (a1 - a0) / max(ta1 - ta0, 1e-6)
    return before, after


def request_lines(log_path):
    """(access-log lines, distinct request ids, statuses) of the server's log."""
    ids, statuses, n = set(), {}, 0
    with open(log_path, errors="replace") as f:
        for line in f:
            if '"event":"request"' not in line:
                continue
            try:
                o = json.loads(line)
            except ValueError:
                continue
            n += 1
            ids.add(o.get("id") or o.get("request_id"))
            st = o.get("status")
            statuses[st] = statuses.get(st, 0) + 1
    return n, len(ids), statuses


def phase_one(args, body_path, ctype):
    port, mport = service.free_port(), service.free_port()
    proc, log = start(args, {"EDGED_FAULT": args.fault, "EDGED_FAULT_DEVICE": "1",
                             "EDGED_FAULT_AFTER": str(args.fault_at)}, port, mport)
    probe = "http://127.0.0.1:%d" % mport
    sampler = Sampler(probe)
    sampler.start()
    w = wrk(args, "http://127.0.0.1:%d" % port, body_path, ctype, args.duration)
    time.sleep(2)
    sampler.stop.set()
    sampler.join()
    status, version = get(probe.replace(str(mport), str(port)) + "/version")
    rows = [r for r in sampler.rows if r[3] is not None]
    fault_rows = [r for r in rows if r[3] >= 1]
    t_fence = fault_rows[0][0] if fault_rows else None
    t_fault = t_fence - (WATCHDOG_MS / 1e3 if args.fault == "spin" else 0.0) if t_fence else None
    before, after = rate_around(rows, t_fault, t_fence) if t_fence else (None, None)
    final = rows[-1][2] if rows else {}
    alive = proc.poll() is None
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
    lines, ids, statuses = request_lines(log.name)
    res = {"phase": "one device of two fails", "fault": args.fault, "fault_after_jobs_on_gpu1": args.fault_at,
           "wrk_requests": int(w.get("requests", 0)), "wrk_non2xx": int(w.get("status", -1)),
           "wrk_timeouts": int(w.get("timeout", -1)), "answered_by_code": {str(k): int(v) for k, v in final.items()},
           "access_log_lines": lines, "distinct_request_ids": ids, "statuses": statuses,
           "readyz_not_200_samples": sum(1 for r in sampler.rows if r[1] != 200), "samples": len(sampler.rows),
           "fenced_seen": t_fence is not None, "ok_per_s_before": before, "ok_per_s_after": after,
           "after_over_before": (after / before) if before else None, "server_alive_after_run": alive,
           "version_devices": json.loads(version).get("devices") if status == 200 else None, "log": log.name}
    print(json.dumps(res, indent=1))
    return res


def phase_last(args, body_path, ctype):
    """Every device faults at its own job fault_at: the process must exit non-zero."""
    port, mport = service.free_port(), service.free_port()
    proc, log = start(args, {"EDGED_FAULT": args.fault, "EDGED_FAULT_AFTER": str(args.fault_at)}, port, mport)
    w = wrk(args, "http://127.0.0.1:%d" % port, body_path, ctype, args.duration)
    try:
        rc = proc.wait(30)
    except subprocess.TimeoutExpired:
        rc = None
        proc.kill()
    lines, ids, statuses = request_lines(log.name)
    res = {"phase": "every device fails", "exit_code": rc, "wrk_requests": int(w.get("requests", 0)),
           "access_log_lines": lines, "distinct_request_ids": ids, "statuses": statuses, "log": log.name}
    print(json.dumps(res, indent=1))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="a debug build with GPU=1 (the EDGED_FAULT switch)")
    ap.add_argument("--input", required=True, help="the image every request sends")
    ap.add_argument("--fault", default="spin", choices=["spin", "illegal", "trap", "assert"],
                    help="spin: a stuck kernel the watchdog fences; the others: sticky CUDA errors")
    ap.add_argument("--gpus", default="all", help="the server's --gpus")
    ap.add_argument("--conns", type=int, default=128)
    ap.add_argument("--duration", type=int, default=12, help="seconds of wrk per phase")
    ap.add_argument("--fault-at", type=int, default=3000, help="the job of GPU 1 (of each GPU with --last) that faults")
    ap.add_argument("--params", default='{"filter":"edge","threshold":5}')
    ap.add_argument("--last", action="store_true", help="also the phase where every device fails")
    args = ap.parse_args()
    with open(args.input, "rb") as f:
        body, ctype = service.multipart(f.read(), json.loads(args.params))
    tmp = tempfile.NamedTemporaryFile(suffix=".body", delete=False)
    tmp.write(body)
    tmp.close()
    one = phase_one(args, tmp.name, ctype)
    # 499: requests wrk still had in flight when it stopped (it closes its connections), at most one a connection
    codes = one["answered_by_code"]
    ok = (one["fenced_seen"] and one["readyz_not_200_samples"] == 0 and one["server_alive_after_run"] and
          set(codes) <= {"200", "503", "499"} and codes.get("499", 0) <= args.conns and
          one["access_log_lines"] == one["distinct_request_ids"])
    if args.last:
        last = phase_last(args, tmp.name, ctype)
        ok = ok and last["exit_code"] not in (None, 0)
    print("fence_load: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
