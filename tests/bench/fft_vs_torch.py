"""fft_vs_torch.py — the comparators of edged's fft variant on the same GPU: cuDNN conv2d (fp32,
cudnn.benchmark on) and torch's FFT convolution, of the whole image (padded to a multiple of 256,
the taps' spectrum computed beforehand) and by overlap-save tiles (the valid part of each tile's
circular convolution; padding, tiling, both transforms and reassembly timed together). One float
plane of random values and random taps; CUDA events, the median of --reps after --warmup.

usage: python3 tests/bench/fft_vs_torch.py [--size 8192] [--ksizes 31,63] [--tiles 512,1024]
Needs torch with CUDA; edged's own rows come from `edged bench --filter custom --variants fast,fft`
in the same run (tests/gpu_host/gpu_host.sh fft does both)."""
import argparse
import statistics
import sys


def median_ms(torch, fn, reps, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def whole(torch, x, w, n, k):
    """Correlation of the whole plane by one padded transform."""
    p = (n + k - 1 + 255) // 256 * 256
    kf = torch.fft.rfft2(torch.flip(w, (0, 1)), s=(p, p))
    return lambda: torch.fft.irfft2(torch.fft.rfft2(x, s=(p, p)) * kf, s=(p, p))


def tiled(torch, x, w, n, k, t):
    """Overlap-save tiles of side t: each gives t - k + 1 valid outputs a side."""
    v = t - k + 1
    nt = (n + v - 1) // v
    size = nt * v + k - 1
    kf = torch.fft.rfft2(torch.flip(w, (0, 1)), s=(t, t))
    lo, hi = k // 2, size - n - k // 2

    def run():
        xp = torch.nn.functional.pad(x, (lo, hi, lo, hi))
        tiles = xp.unfold(0, t, v).unfold(1, t, v)
        y = torch.fft.irfft2(torch.fft.rfft2(tiles) * kf, s=(t, t))[..., k - 1:, k - 1:]
        return y.permute(0, 2, 1, 3).reshape(nt * v, nt * v)[:n, :n]

    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--ksizes", default="31,63")
    ap.add_argument("--tiles", default="512,1024")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--cudnn-reps", type=int, default=5, help="cuDNN is slow at these sizes")
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("fft_vs_torch: torch is not installed", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("fft_vs_torch: torch sees no CUDA device", file=sys.stderr)
        return 2
    torch.backends.cudnn.benchmark = True
    n = a.size
    x = torch.rand(n, n, device="cuda")
    print("torch %s, cuDNN %s, %s, %d x %d fp32" % (torch.__version__, torch.backends.cudnn.version(),
                                                     torch.cuda.get_device_name(), n, n))
    print("ksize,method,ms")
    for k in (int(s) for s in a.ksizes.split(",")):
        w = torch.rand(k, k, device="cuda")
        conv = lambda: torch.nn.functional.conv2d(x[None, None], w[None, None], padding=k // 2)
        print("%d,cudnn_conv2d,%.3f" % (k, median_ms(torch, conv, a.cudnn_reps, 2)))
        print("%d,torch_fft_whole,%.3f" % (k, median_ms(torch, whole(torch, x, w, n, k), a.reps, a.warmup)))
        for t in (int(s) for s in a.tiles.split(",")):
            if t > k:
                ms = median_ms(torch, tiled(torch, x, w, n, k, t), a.reps, a.warmup)
                print("%d,torch_fft_tiles_%d,%.3f" % (k, t, ms))
    return 0


if __name__ == "__main__":
    sys.exit(main())
