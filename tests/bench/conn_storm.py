#!/usr/bin/env python3
"""conn_storm.py — a reconnect storm against `edged serve` on loopback, and what probes see meanwhile.

The storm: --conns idle connections from --addrs source addresses (127.0.0.2, 127.0.0.3, ...; the
same share each), sending nothing; every socket the server closes (or refuses) is replaced, at most
--rate replacements a second. While it runs, --probes probes GET a path on a fresh connection from
127.0.0.1, one every --every seconds, each with a --timeout second limit (as the kubelet's probes
do). A probe passes only on a 200; it fails on another status, a refused or reset connection, a
connection closed without an answer, or the timeout.

It starts the server itself (--bin, CPU backend, with --metrics-listen on a second port when
--metrics is given) or probes a running one (--url, and --metrics-url for the probe listener):

  python3 tests/bench/conn_storm.py --bin build/edged --rate 50
  python3 tests/bench/conn_storm.py --bin build/edged --rate 200 --metrics
  python3 tests/bench/conn_storm.py --url http://127.0.0.1:8080 --rate 100

Prints, per probe target, how many probes passed and why the others failed, the storm's
reconnects a second, and a JSON summary (also to --json).
"""
import argparse
import errno
import json
import selectors
import socket
import subprocess
import sys
import threading
import time
import urllib.parse


class Storm:
    """The idle-connection storm, run by one thread with one selector."""

    def __init__(self, host, port, conns, addrs, rate):
        self.target = (host, port)
        self.sources = ["127.0.0.%d" % (2 + i) for i in range(addrs)]
        self.conns, self.rate = conns, rate
        self.sel = selectors.DefaultSelector()
        self.pending = []          # source addresses whose socket is to be replaced
        self.opened = self.closed = 0
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def open_one(self, src):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.bind((src, 0))
            rc = s.connect_ex(self.target)
        except OSError:
            s.close()
            self.pending.append(src)
            return
        if rc not in (0, errno.EINPROGRESS):
            s.close()
            self.pending.append(src)
            return
        self.sel.register(s, selectors.EVENT_READ, src)
        self.opened += 1

    def reap(self, timeout):
        """Closes and queues for replacement every socket that reads an end, an error or data."""
        for key, _ in self.sel.select(timeout):
            s = key.fileobj
            try:
                gone = s.recv(4096) == b""
            except BlockingIOError:
                continue
            except OSError:
                gone = True
            if gone:
                self.sel.unregister(s)
                s.close()
                self.closed += 1
                self.pending.append(key.data)

    def run(self):
        for i in range(self.conns):
            self.open_one(self.sources[i % len(self.sources)])
        tokens, last = 0.0, time.monotonic()
        while not self.stop_flag.is_set():
            self.reap(0.005)
            now = time.monotonic()
            tokens = min(tokens + (now - last) * self.rate, max(1.0, self.rate / 20.0))
            last = now
            while tokens >= 1.0 and self.pending:
                tokens -= 1.0
                self.open_one(self.pending.pop(0))
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()
        self.sel.close()

    def start(self):
        self.thread.start()

    def stop(self):
        self.stop_flag.set()
        self.thread.join(10)


def probe(host, port, path, timeout):
    """One probe on a fresh connection: "ok", or why it failed."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.bind(("127.0.0.1", 0))
        s.connect((host, port))
        s.sendall(("GET %s HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n" % path).encode())
        data = b""
        while b"\r\n" not in data:
            got = s.recv(1024)
            if not got:
                return "closed without an answer"
            data += got
        status = data.split(b" ", 2)[1].decode(errors="replace")
        return "ok" if status == "200" else "status " + status
    except socket.timeout:
        return "timeout"
    except ConnectionRefusedError:
        return "refused"
    except ConnectionResetError:
        return "reset"
    except OSError as e:
        return "error " + (errno.errorcode.get(e.errno, str(e.errno)))
    finally:
        s.close()


def run_probes(targets, count, every, timeout):
    """Probes each target (host, port, path) count times, every `every` seconds, in turn;
    returns {label: {outcome: n}}."""
    out = {"%s:%d%s" % t: {} for t in targets}
    for _ in range(count):
        t0 = time.monotonic()
        for t in targets:
            r = probe(t[0], t[1], t[2], timeout)
            tally = out["%s:%d%s" % t]
            tally[r] = tally.get(r, 0) + 1
        time.sleep(max(0.0, every - (time.monotonic() - t0)))
    return out


def storm_and_probe(host, port, targets, conns=320, addrs=8, rate=50, probes=60, every=0.25, timeout=2.0,
                    warmup=2.0):
    """Runs the storm against host:port, probes the targets (host, port, path) while it runs, and
    returns {"probes": {label: {outcome: n}}, "reconnects_per_s": ...}."""
    storm = Storm(host, port, conns, addrs, rate)
    storm.start()
    try:
        time.sleep(warmup)
        opened0, t0 = storm.opened, time.monotonic()
        tallies = run_probes(targets, probes, every, timeout)
        rps = (storm.opened - opened0) / max(time.monotonic() - t0, 1e-3)
    finally:
        storm.stop()
    return {"probes": tallies, "reconnects_per_s": round(rps, 1), "conns": conns, "addrs": addrs, "rate": rate}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(binary, metrics, extra):
    port = free_port()
    args = [binary, "serve", "--backend", "cpu", "--host", "127.0.0.1", "--port", str(port)] + extra
    mport = None
    if metrics:
        mport = free_port()
        args += ["--metrics-listen", "127.0.0.1:%d" % mport]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    until = time.time() + 20
    while probe("127.0.0.1", port, "/readyz", 1.0) != "ok":
        if proc.poll() is not None or time.time() > until:
            proc.kill()
            sys.exit("edged did not start: " + " ".join(args))
        time.sleep(0.05)
    return proc, port, mport


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", help="start this edged binary (CPU backend) on free loopback ports")
    ap.add_argument("--url", help="or storm a running server: http://127.0.0.1:PORT")
    ap.add_argument("--metrics", action="store_true", help="with --bin: also --metrics-listen, and probe it")
    ap.add_argument("--metrics-url", help="with --url: the --metrics-listen address to probe as well")
    ap.add_argument("--serve-flag", action="append", default=[], help="extra flag for `edged serve` (repeat)")
    ap.add_argument("--conns", type=int, default=320)
    ap.add_argument("--addrs", type=int, default=8)
    ap.add_argument("--rate", type=float, default=50, help="replacements a second, at most")
    ap.add_argument("--probes", type=int, default=60)
    ap.add_argument("--every", type=float, default=0.25)
    ap.add_argument("--timeout", type=float, default=2.0)
    ap.add_argument("--path", default="/healthz")
    ap.add_argument("--json")
    a = ap.parse_args()
    proc = None
    if a.bin:
        proc, port, mport = start_server(a.bin, a.metrics, a.serve_flag)
        host = "127.0.0.1"
    elif a.url:
        u = urllib.parse.urlsplit(a.url)
        host, port, mport = u.hostname, u.port, None
        if a.metrics_url:
            mport = urllib.parse.urlsplit(a.metrics_url).port
    else:
        ap.error("give --bin or --url")
    targets = [(host, port, a.path)] + ([(host, mport, a.path)] if mport else [])
    try:
        res = storm_and_probe(host, port, targets, a.conns, a.addrs, a.rate, a.probes, a.every, a.timeout)
    finally:
        if proc:
            proc.terminate()
            proc.wait(30)
    for label, tally in res["probes"].items():
        fails = {k: v for k, v in tally.items() if k != "ok"}
        print("%-28s %d of %d probes 200; failed: %s" % (label, tally.get("ok", 0), a.probes,
                                                          ", ".join("%s %d" % kv for kv in sorted(fails.items()))
                                                          or "none"))
    print("storm: %d connections from %d addresses, %.1f reconnects/s (limit %g)" %
          (a.conns, a.addrs, res["reconnects_per_s"], a.rate))
    print(json.dumps(res))
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
