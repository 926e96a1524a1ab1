#!/usr/bin/env python3
"""host_watch.py — what the machine does while a soak runs, for reading its latency bursts.

Every --period seconds it writes one JSON line to --out:
  cpu       /proc/stat ticks of the period (user, nice, sys, idle, iowait, irq, softirq, steal)
  vm        the /proc/vmstat counters below that moved (page faults, compaction, reclaim, THP)
  psi_cpu   /proc/pressure/cpu "some avg10" (percent of time a task waited for a core), -1 if absent
  top       the four processes that used the most CPU in the period: [name, pid, cores]
  probe     a fixed piece of work and the thread CPU time it took (ms): alu, SHA-256 of 64 KiB
            32 times (in cache); mem, a copy of 32 MiB into a new buffer (its own 8192 page faults
            a period are in vm). If the cores ran slower (a shared host, a lower clock) these
            grow; waiting for a core only shows in their wall times.

  python3 tests/bench/host_watch.py --seconds 660 --out /tmp/watch.jsonl &
  python3 tests/bench/soak.py --bin build/edged --rate 237 --minutes 10 --segment-s 30
"""
import argparse
import hashlib
import json
import os
import time

VM_KEYS = ["pgfault", "pgmajfault", "compact_stall", "compact_fail", "thp_fault_alloc", "thp_fault_fallback",
           "pgscan_direct", "pgscan_kswapd", "pswpin", "pswpout"]
CPU_KEYS = ["user", "nice", "sys", "idle", "iowait", "irq", "softirq", "steal"]


def cpu_ticks():
    with open("/proc/stat") as f:
        return [int(x) for x in f.readline().split()[1:9]]


def vmstat():
    out = {}
    with open("/proc/vmstat") as f:
        for line in f:
            k, v = line.split()
            if k in VM_KEYS:
                out[k] = int(v)
    return out


def proc_ticks():
    """{pid: (name, utime + stime ticks)} of every process."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                s = f.read()
        except OSError:
            continue
        rest = s[s.rindex(")") + 2:].split()
        out[int(pid)] = (s[s.index("(") + 1:s.rindex(")")], int(rest[11]) + int(rest[12]))
    return out


def psi_cpu():
    try:
        with open("/proc/pressure/cpu") as f:
            return float(f.readline().split()[1].split("=")[1])
    except (OSError, IndexError, ValueError):
        return -1.0


def probe(small, big):
    """Thread CPU and wall ms of the two fixed pieces of work."""
    c0, w0 = time.thread_time(), time.perf_counter()
    for _ in range(32):
        hashlib.sha256(small).digest()
    c1, w1 = time.thread_time(), time.perf_counter()
    copy = bytes(big)
    c2, w2 = time.thread_time(), time.perf_counter()
    del copy
    return {"alu_cpu_ms": round((c1 - c0) * 1e3, 3), "alu_wall_ms": round((w1 - w0) * 1e3, 3),
            "mem_cpu_ms": round((c2 - c1) * 1e3, 3), "mem_wall_ms": round((w2 - w1) * 1e3, 3)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=660)
    ap.add_argument("--period", type=float, default=2.0)
    ap.add_argument("--out", default="/tmp/edged-host-watch.jsonl")
    args = ap.parse_args()
    hz = os.sysconf("SC_CLK_TCK")
    small, big = os.urandom(65536), bytearray(os.urandom(32 << 20))
    c0, v0, p0 = cpu_ticks(), vmstat(), proc_ticks()
    end = time.time() + args.seconds
    with open(args.out, "w") as out:
        while time.time() < end:
            time.sleep(args.period)
            work = probe(small, big)
            c1, v1, p1 = cpu_ticks(), vmstat(), proc_ticks()
            used = sorted(((p1[k][1] - p0[k][1], p1[k][0], k) for k in p1 if k in p0), reverse=True)[:4]
            rec = {"t": round(time.time(), 1), "cpu": dict(zip(CPU_KEYS, (b - a for a, b in zip(c0, c1)))),
                   "vm": {k: v1[k] - v0.get(k, 0) for k in v1 if v1[k] != v0.get(k, 0)}, "psi_cpu": psi_cpu(),
                   "top": [[name, pid, round(d / hz / args.period, 2)] for d, name, pid in used if d > 0],
                   "probe": work}
            out.write(json.dumps(rec) + "\n")
            out.flush()
            c0, v0, p0 = c1, v1, p1


if __name__ == "__main__":
    main()
