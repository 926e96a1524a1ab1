#!/usr/bin/python3
"""photos.py — the input images of the benchmarks: photographs composed from scikit-image's bundled
sample photographs (skimage/data: astronaut, coffee, chelsea, rocket, motorcycle, IHC, retina,
Hubble deep field, camera, coins, grass, gravel; each loader's docstring in skimage.data gives the
source and licence), written as PNG the way libpng writes them (adaptive row filters, zlib level
6), as JPEG or WebP at quality 90, in colour or as gray (BT.601 luma, rounded as edged does).

The square is cut at random into rectangles of at most TILE_MAX pixels a side (about a dozen at
2048²: the photographs keep about their own scale, so larger sides hold more of them); each gets a
crop of one photograph, scaled by 0.6 to 1.25 where that covers it (more where a small photograph
must fill a large rectangle), mirrored at random, the photographs taken in shuffled rounds so that
neighbours differ. Then sensor-like noise: Gaussian read noise of READ_NOISE levels plus shot noise
whose variance grows with the signal (SHOT_GAIN). The same side and seed give the same pixels
wherever scikit-image's data, Pillow's decoders and OpenCV's resampling agree (compare the hashes
printed); `--sizes` takes any side. The synthetic image of earlier
benchmarks (smooth waves, shapes, fractal texture, noise; far fewer edges than a photograph) stays
as an option: --synthetic.

    /usr/bin/python3 tests/bench/photos.py --out DIR --sizes 2048,8192           # DIR/photo_<side>.png
    /usr/bin/python3 tests/bench/photos.py --out DIR --format jpeg               # DIR/photo_<side>.jpg, q90
    /usr/bin/python3 tests/bench/photos.py --out DIR --gray                      # DIR/photo_<side>_gray.png
    /usr/bin/python3 tests/bench/photos.py --out DIR --synthetic                 # DIR/synthetic_<side>.png
Each file written is reported on stderr with its bytes, a hash of its pixels (compare hosts) and,
for PNG, how many rows use each filter type.
"""
import argparse
import hashlib
import os
import struct
import sys
import zlib

import numpy as np

GRAIN = 12.0  # texture amplitude of the synthetic image, in grey levels
# scikit-image's sample photographs used, by file name in its data folder (bundled, no download)
SOURCES = ["astronaut.png", "coffee.png", "chelsea.png", "rocket.jpg", "motorcycle_left.png", "ihc.png",
           "retina.jpg", "hubble_deep_field.jpg", "camera.png", "coins.png", "grass.png", "gravel.png"]
TILE_MAX = 900      # longest side of a rectangle of the mosaic
READ_NOISE = 1.5    # sensor read noise, grey levels (standard deviation)
SHOT_GAIN = 0.02    # shot noise: variance SHOT_GAIN * level, so about 2.3 levels at 255
NOISE_ROWS = 512    # rows of noise drawn at a time (memory), each band from its own seeded stream
EXT = {"png": "png", "jpeg": "jpg", "webp": "webp"}


# ---- the photographs ------------------------------------------------------------------------------

def sources():
    """The sample photographs as RGB uint8 arrays (gray ones repeated into three channels), in
    SOURCES order, read from scikit-image's data folder."""
    import skimage.data
    from PIL import Image
    folder = os.path.dirname(skimage.data.__file__)
    out = []
    for name in SOURCES:
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            sys.exit("photos.py: %s is not bundled with scikit-image %s (%s)" % (name, skimage.__version__, folder))
        with Image.open(path) as im:
            out.append(np.asarray(im.convert("RGB")))
    return out


def layout(side, rng):
    """Rectangles (y, x, h, w) covering side x side: each longer than TILE_MAX is cut across its
    longer side at 35-65 %."""
    todo, out = [(0, 0, side, side)], []
    while todo:
        y, x, h, w = todo.pop()
        if max(h, w) <= TILE_MAX:
            out.append((y, x, h, w))
        elif w >= h:
            c = int(w * rng.uniform(0.35, 0.65))
            todo += [(y, x, h, c), (y, x + c, h, w - c)]
        else:
            c = int(h * rng.uniform(0.35, 0.65))
            todo += [(y, x, c, w), (y + c, x, h - c, w)]
    return out


def tile(src, h, w, rng):
    """An h x w crop of src scaled by 0.6-1.25 (at least enough to cover h x w), mirrored at random."""
    import cv2
    sh, sw = src.shape[:2]
    scale = max(h / sh, w / sw, rng.uniform(0.6, 1.25)) * 1.0001  # the float guard keeps the cover
    th, tw = max(h, round(sh * scale)), max(w, round(sw * scale))
    img = cv2.resize(src, (tw, th), interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_CUBIC)
    y, x = int(rng.integers(0, th - h + 1)), int(rng.integers(0, tw - w + 1))
    img = img[y:y + h, x:x + w]
    return img[:, ::-1] if rng.random() < 0.5 else img


def add_noise(img, seed, side):
    """Read plus shot noise, in place, band by band (each band's stream seeded by its index)."""
    for b, y in enumerate(range(0, img.shape[0], NOISE_ROWS)):
        rng = np.random.default_rng([seed, side, 1, b])
        band = img[y:y + NOISE_ROWS].astype(np.float32)
        sigma = np.sqrt(READ_NOISE ** 2 + SHOT_GAIN * band)
        band += sigma * rng.standard_normal(band.shape, dtype=np.float32)
        img[y:y + NOISE_ROWS] = np.rint(band).clip(0, 255).astype(np.uint8)


def rounds(n, rng):
    """0..n-1 in shuffled rounds, never the same index twice in a row."""
    last = None
    while True:
        order = [int(i) for i in rng.permutation(n)]
        if order[0] == last and n > 1:
            order[0], order[-1] = order[-1], order[0]
        yield from order
        last = order[-1]


def mosaic(side, seed=1):
    """A side x side RGB uint8 photograph composed of the sample photographs (module docstring)."""
    rng = np.random.default_rng([seed, side])
    srcs = sources()
    pick = rounds(len(srcs), rng)
    img = np.empty((side, side, 3), np.uint8)
    for y, x, h, w in layout(side, rng):
        img[y:y + h, x:x + w] = tile(srcs[next(pick)], h, w, rng)
    add_noise(img, seed, side)
    return img


def gray(rgb):
    """BT.601 luma rounded to u8 as edged computes it (api/pixel.h: pixel_clamp_u8 of pixel_luma,
    three float32 products summed in order), so that a gray file filters like its colour one."""
    f = rgb.astype(np.float32)
    luma = (np.float32(0.299) * f[..., 0] + np.float32(0.587) * f[..., 1]) + np.float32(0.114) * f[..., 2]
    return np.rint(luma).clip(0, 255).astype(np.uint8)


# ---- the synthetic image (--synthetic) ----------------------------------------------------------

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


def synthetic(side, seed=1, grain=0.0):
    """A side x side RGB uint8 synthetic image that compresses like a photograph (waves, shapes,
    noise); grain is the amplitude of the fractal texture in grey levels (0: none). Easier than
    a photograph: its edge map holds far fewer edge pixels."""
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


# ---- files --------------------------------------------------------------------------------------

def image(side, seed=1, kind="photo"):
    """The RGB image of one kind: "photo" (mosaic) or "synthetic" (with GRAIN texture)."""
    return mosaic(side, seed) if kind == "photo" else synthetic(side, seed, GRAIN)


def encode(px, fmt="png", level=6, quality=90):
    """px (h x w x 3 RGB or h x w gray, uint8) as file bytes: PNG through libpng (OpenCV: adaptive
    row filters) at zlib level, JPEG (libjpeg-turbo: 4:2:0, baseline) or WebP at quality."""
    import cv2
    flags = {"png": [cv2.IMWRITE_PNG_COMPRESSION, level], "jpeg": [cv2.IMWRITE_JPEG_QUALITY, quality],
             "webp": [cv2.IMWRITE_WEBP_QUALITY, quality]}[fmt]
    ok, buf = cv2.imencode("." + EXT[fmt], px[..., ::-1] if px.ndim == 3 else px, flags)
    if not ok:
        raise OSError("cv2.imencode failed (%s)" % fmt)
    return buf.tobytes()


def file_name(side, fmt="png", kind="photo", is_gray=False):
    """photo_<side>.png, photo_<side>_gray.jpg, synthetic_<side>.webp, ..."""
    return "%s_%d%s.%s" % (kind, side, "_gray" if is_gray else "", EXT[fmt])


def write_photo(path, side, seed=1, level=6, fmt="png", quality=90, kind="photo", is_gray=False):
    """Writes image(side, seed, kind) (its gray when is_gray) to path in fmt; the file appears whole
    or not at all. Returns the pixels written."""
    px = image(side, seed, kind)
    if is_gray:
        px = gray(px)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(encode(px, fmt, level, quality))
    os.replace(tmp, path)
    return px


def png_filters(data):
    """{filter type: rows} of a non-interlaced 8-bit PNG's IDAT stream."""
    pos, idat, hdr = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBB", data[pos + 8:pos + 18])
        elif kind == b"IDAT":
            idat.append(data[pos + 8:pos + 8 + n])
        pos += 12 + n
    w, h, depth, ctype = hdr
    row = 1 + w * {0: 1, 2: 3, 4: 2, 6: 4}[ctype] * depth // 8
    raw = zlib.decompress(b"".join(idat))
    types = np.frombuffer(raw, np.uint8)[::row][:h]
    return {int(t): int(c) for t, c in zip(*np.unique(types, return_counts=True))}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="directory for the files")
    ap.add_argument("--sizes", default="2048,4096,8192", help="sides, comma-separated")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--level", type=int, default=6, help="zlib level of PNG")
    ap.add_argument("--format", default="png", choices=sorted(EXT))
    ap.add_argument("--quality", type=int, default=90, help="JPEG/WebP quality")
    ap.add_argument("--gray", action="store_true", help="write the gray image (photo_<side>_gray.*)")
    ap.add_argument("--synthetic", action="store_true",
                    help="the synthetic image instead of the photographs (synthetic_<side>.*)")
    ap.add_argument("--force", action="store_true", help="rewrite files that exist")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    kind = "synthetic" if args.synthetic else "photo"
    for side in [int(s) for s in args.sizes.split(",") if s]:
        path = os.path.join(args.out, file_name(side, args.format, kind, args.gray))
        if args.force or not os.path.exists(path):
            px = write_photo(path, side, args.seed, args.level, args.format, args.quality, kind, args.gray)
            with open(path, "rb") as f:
                data = f.read()
            note = " filters %s" % png_filters(data) if args.format == "png" else ""
            print("%s %d bytes, pixels sha256 %s%s" % (path, len(data), hashlib.sha256(px.tobytes()).hexdigest()[:16],
                                                       note), file=sys.stderr)
        else:
            print("%s %d bytes (kept)" % (path, os.path.getsize(path)), file=sys.stderr)


if __name__ == "__main__":
    main()
