#!/usr/bin/env python3
"""plots.py — turns `edged bench --csv` output into PNG charts (matplotlib, Agg backend).

usage: plots.py BENCH.csv [OUTDIR]   (make plots CSV=... PLOTS=...)
Writes OUTDIR/bench_time_vs_size.png (ms against image side per variant, one panel per kernel
size), bench_gbps_vs_ksize.png (effective GB/s against kernel side at the largest image) and
bench_roofline.png (GFLOP/s against arithmetic intensity 2k^2 flops / 8 bytes, under the measured
copy-bandwidth roof and the FP32 peak). One block size per variant: 16 when present.
"""
import csv
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def load(path):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(line for line in f if not line.startswith("#")):
            if num(r.get("ms")) is None:
                continue
            r["ms"], r["gb_s"], r["gflop_s"] = num(r["ms"]), num(r["gb_s"]), num(r["gflop_s"])
            r["width"], r["ksize"], r["block"] = int(r["width"]), int(r["ksize"]), int(r["block"])
            rows.append(r)
    return rows


def one_block(rows):
    """Keeps block 16 (or the smallest block measured) per variant; CPU/NPP rows have block 0."""
    blocks = defaultdict(set)
    for r in rows:
        blocks[r["variant"]].add(r["block"])
    keep = {v: (16 if 16 in b else min(b)) for v, b in blocks.items()}
    return [r for r in rows if r["block"] == keep[r["variant"]]]


def label(r):
    return r["variant"] if r["block"] == 0 else "%s/%d" % (r["variant"], r["block"])


def styles(variants):
    cmap = plt.get_cmap("tab20")
    marks = "os^vD<>ph*Xd"
    return {v: (cmap(i % 20), marks[i % len(marks)]) for i, v in enumerate(sorted(variants))}


def time_vs_size(rows, out, st):
    ks = sorted({r["ksize"] for r in rows})
    pick = sorted({ks[0], ks[len(ks) // 2], ks[-1]})
    fig, axes = plt.subplots(1, len(pick), figsize=(6 * len(pick), 5), squeeze=False)
    for ax, k in zip(axes[0], pick):
        series = defaultdict(list)
        for r in rows:
            if r["ksize"] == k:
                series[r["variant"]].append((r["width"], r["ms"]))
        for v, pts in sorted(series.items()):
            pts.sort()
            c, m = st[v]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=m, color=c, label=v)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("image side (pixels, square)")
        ax.set_ylabel("time per image (ms)")
        ax.set_title("%dx%d kernel" % (k, k))
        ax.grid(True, which="both", alpha=0.3)
    handles = {}
    for ax in axes[0]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    fig.legend(list(handles.values()), list(handles.keys()), loc="center right", fontsize=8)
    fig.tight_layout(rect=(0, 0, 0.9, 1))
    fig.savefig(os.path.join(out, "bench_time_vs_size.png"), dpi=110)
    plt.close(fig)


def gbps_vs_ksize(rows, out, st, copy_gbps):
    big = max(r["width"] for r in rows)
    fig, ax = plt.subplots(figsize=(10, 5))
    series = defaultdict(list)
    for r in rows:
        if r["width"] == big:
            series[r["variant"]].append((r["ksize"], r["gb_s"]))
    for v, pts in sorted(series.items()):
        pts.sort()
        c, m = st[v]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=m, color=c, label=v)
    if copy_gbps:
        ax.axhline(copy_gbps, color="k", ls="--", lw=1, label="measured copy %.0f GB/s" % copy_gbps)
    ax.set_yscale("log")
    ax.set_xlabel("kernel side k (k x k taps)")
    ax.set_ylabel("effective GB/s (8 bytes per pixel)")
    ax.set_title("bandwidth against kernel size, %dx%d image" % (big, big))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(os.path.join(out, "bench_gbps_vs_ksize.png"), dpi=110)
    plt.close(fig)


def roofline(rows, out, st, copy_gbps, peak):
    big = max(r["width"] for r in rows)
    fig, ax = plt.subplots(figsize=(10, 5.5))
    ais = [r["ksize"] ** 2 / 4.0 for r in rows]
    lo, hi = min(ais) / 2, max(ais) * 2
    if copy_gbps and peak:
        xs = [lo * (hi / lo) ** (i / 100.0) for i in range(101)]
        ax.plot(xs, [min(copy_gbps * x, peak) for x in xs], "k-", lw=1.5,
                label="roof: %.0f GB/s copy, %.1f TFLOP/s FP32" % (copy_gbps, peak / 1e3))
    series = defaultdict(list)
    for r in rows:
        if r["width"] == big:
            series[r["variant"]].append((r["ksize"] ** 2 / 4.0, r["gflop_s"]))
    for v, pts in sorted(series.items()):
        pts.sort()
        c, m = st[v]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=m, color=c, ls=":", label=v)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (flops per byte: 2k^2 / 8)")
    ax.set_ylabel("GFLOP/s (2k^2 per pixel; separable does fewer)")
    ax.set_title("roofline, %dx%d image" % (big, big))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(os.path.join(out, "bench_roofline.png"), dpi=110)
    plt.close(fig)


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    out = argv[2] if len(argv) > 2 else os.path.dirname(argv[1]) or "."
    rows = one_block(load(argv[1]))
    if not rows:
        sys.stderr.write("plots.py: no measured rows in %s\n" % argv[1])
        return 1
    os.makedirs(out, exist_ok=True)
    copy_gbps = max((num(r.get("copy_gbps")) or 0.0) for r in rows)
    peak = max((num(r.get("fp32_gflops")) or 0.0) for r in rows)
    st = styles({r["variant"] for r in rows})
    time_vs_size(rows, out, st)
    gbps_vs_ksize(rows, out, st, copy_gbps)
    roofline(rows, out, st, copy_gbps, peak)
    for name in ("bench_time_vs_size.png", "bench_gbps_vs_ksize.png", "bench_roofline.png"):
        print(os.path.join(out, name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
