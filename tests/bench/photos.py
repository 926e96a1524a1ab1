#!/usr/bin/python3
"""photos.py — synthetic photographs as PNG files, encoded the way cameras' and editors' libpng
writes them (adaptive row filters, zlib level 6), or as JPEG/WebP (--format, --quality), so that
body sizes and decode times in the load benchmarks resemble real uploads. An image is smooth colour structure (low-frequency waves), shapes
with hard edges, fractal texture and sensor noise.

    /usr/bin/python3 tests/bench/photos.py --out DIR --sizes 512,2048,4096   # DIR/photo_<side>.png
    /usr/bin/python3 tests/bench/photos.py --out DIR --format jpeg        # DIR/photo_<side>.jpg, quality 90
"""
import argparse
import os
import sys

import numpy as np

GRAIN = 12.0  # texture amplitude of the benchmark inputs, in grey levels


def _value_noise(side, cells, rng):
    """side x side bilinear interpolation of a (cells+1)^2 grid of N(0, 1) values."""
    grid = rng.normal(0, 1, (cells + 1, cells + 1)).astype(np.float32)
    t = np.arange(side, dtype=np.float32) * cells / side
    i = t.astype(np.int64)
    f = t - i
    f = f * f * (3 - 2 * f)  # smoothstep: no visible grid lines
    rows = grid[i] * (1 - f)[:, None] + grid[i + 1] * f[:, None]
    return rows[:, i] * (1 - f)[None, :] + rows[:, i + 1] * f[None, :]


def texture(side, rng):
    """Fractal texture of unit scale: octaves from 1/64 of the side down to 3-pixel grain."""
    out = np.zeros((side, side), np.float32)
    amp, cells = 1.0, max(2, side // 64)
    while cells <= side // 3:
        out += amp * _value_noise(side, cells, rng)
        amp, cells = amp * 0.7, cells * 2
    return out / max(1e-6, float(out.std()))


def photo(side, seed=1, grain=0.0):
    """A side x side RGB uint8 image that compresses like a photograph; grain is the amplitude of
    the fractal texture in grey levels (0: waves, shapes and noise only)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:side, 0:side].astype(np.float32) / side
    img = np.zeros((side, side, 3), np.float32)
    for c in range(3):
        for _ in range(4):
            fx, fy, ph = rng.uniform(0.5, 4, 2).tolist() + [rng.uniform(0, 6.28)]
            img[..., c] += 40 * np.sin(2 * np.pi * (fx * x + fy * y) + ph)
        img[..., c] += 128
    for _ in range(12):  # shapes give edges
        cx, cy, r = rng.uniform(0, 1, 3)
        mask = (x - cx) ** 2 + (y - cy) ** 2 < (0.05 + 0.15 * r) ** 2
        img[mask] = rng.uniform(0, 255, 3)
    del x, y
    if grain:
        t = texture(side, rng)
        for c in range(3):  # mostly luminance, a little colour
            img[..., c] += grain * (0.8 * t + 0.2 * texture(side, rng))
    img += rng.normal(0, 3, img.shape)
    return img.clip(0, 255).astype(np.uint8)


def write_png(path, rgb, level=6):
    """Writes rgb (h x w x 3 uint8) through libpng (OpenCV), else Pillow: both use adaptive filters."""
    try:
        import cv2
        if not cv2.imwrite(path, rgb[..., ::-1], [cv2.IMWRITE_PNG_COMPRESSION, level]):
            raise OSError("cv2.imwrite failed: " + path)
    except ImportError:
        from PIL import Image
        Image.fromarray(rgb).save(path, compress_level=level)


def write_lossy(path, rgb, fmt, quality=90):
    """Writes rgb as JPEG (libjpeg-turbo through OpenCV: 4:2:0, baseline) or WebP at quality."""
    import cv2
    flag = cv2.IMWRITE_JPEG_QUALITY if fmt == "jpeg" else cv2.IMWRITE_WEBP_QUALITY
    if not cv2.imwrite(path, rgb[..., ::-1], [flag, quality]):
        raise OSError("cv2.imwrite failed: " + path)


def write_photo(path, side, seed=1, grain=GRAIN, level=6, fmt="png", quality=90):
    """Writes photo(side, seed, grain) to path as PNG at zlib level, or as JPEG/WebP at quality (fmt);
    the file appears whole or not at all."""
    ext = {"png": ".png", "jpeg": ".jpg", "webp": ".webp"}[fmt]
    tmp = path + ".tmp" + ext
    if fmt == "png":
        write_png(tmp, photo(side, seed, grain), level)
    else:
        write_lossy(tmp, photo(side, seed, grain), fmt, quality)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="directory for photo_<side>.png")
    ap.add_argument("--sizes", default="512,2048,4096")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--grain", type=float, default=GRAIN, help="texture amplitude in grey levels")
    ap.add_argument("--level", type=int, default=6, help="zlib level")
    ap.add_argument("--format", default="png", choices=["png", "jpeg", "webp"])
    ap.add_argument("--quality", type=int, default=90, help="JPEG/WebP quality")
    ap.add_argument("--force", action="store_true", help="rewrite files that exist")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for side in [int(s) for s in args.sizes.split(",") if s]:
        path = os.path.join(args.out, "photo_%d.%s" % (side, {"jpeg": "jpg"}.get(args.format, args.format)))
        if args.force or not os.path.exists(path):
            write_photo(path, side, args.seed, args.grain, args.level, args.format, args.quality)
        print("%s %d bytes" % (path, os.path.getsize(path)), file=sys.stderr)


if __name__ == "__main__":
    main()
