"""test_cli_vs_opencv.py — `edged filter` on real photographs checked against an independent
reference (OpenCV's filter2D / sepFilter2D on the same float32 input), plus the CLI's exit codes.

Photographs: scikit-image's bundled sample images (Debian package python3-skimage).
Tolerance: u8 results may differ by 1 where float rounding lands on the other side of .5
(at most 0.5% of samples); edge maps must match exactly except where |L| is within 1e-3 of the
threshold.
"""
import glob
import json
import os
import subprocess

import numpy as np
import pytest

cv2 = pytest.importorskip("cv2")
skdata = pytest.importorskip("skimage.data")

EDGED = os.environ.get("EDGED_BIN", "build/edged")
OUT = os.path.join("tests", "out", "reference")
PNGSUITE = os.environ.get("EDGED_PNGSUITE", "../shared/pngsuite")
PHOTOS = ["astronaut.png", "camera.png", "coffee.png", "chelsea.png"]

BORDERS = {"zero": cv2.BORDER_CONSTANT, "replicate": cv2.BORDER_REPLICATE, "reflect": cv2.BORDER_REFLECT_101}
# edged's default border is OpenCV's: without --border the results compare with cv2's defaults
DEFAULT = "reflect"
assert cv2.BORDER_DEFAULT == BORDERS[DEFAULT]
G5 = np.outer([2, 4, 5, 4, 2], [2, 4, 5, 4, 2]).astype(np.float32) / 289.0
LAP3 = np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], np.float32)
SOBEL_X = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], np.float32)
SCHARR_X = np.array([[-3, 0, 3], [-10, 0, 10], [-3, 0, 3]], np.float32)
PREWITT_X = np.array([[-1, 0, 1], [-1, 0, 1], [-1, 0, 1]], np.float32)
SHARPEN = np.array([[-1] * 5, [-1, 2, 2, 2, -1], [-1, 2, 8, 2, -1], [-1, 2, 2, 2, -1], [-1] * 5], np.float32) / 8
EMBOSS = np.array([[-1, -1, -1, -1, 0], [-1, -1, -1, 0, 1], [-1, -1, 0, 1, 1], [-1, 0, 1, 1, 1], [0, 1, 1, 1, 1]],
                  np.float32)


def photo_path(name):
    path = os.path.join(os.path.dirname(skdata.__file__), name)
    if not os.path.exists(path):
        pytest.skip("scikit-image sample %s not installed at %s" % (name, path))
    return path


def read_png(path):
    """RGB(A) or gray uint8 array, as edged decodes it (8-bit files only)."""
    im = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    assert im is not None and im.dtype == np.uint8, path
    if im.ndim == 3:
        im = cv2.cvtColor(im, cv2.COLOR_BGRA2RGBA if im.shape[2] == 4 else cv2.COLOR_BGR2RGB)
    return im


def run_edged(src, *args):
    os.makedirs(OUT, exist_ok=True)
    dst = os.path.join(OUT, "%s_%s.png" % (os.path.basename(src)[:-4], "_".join(a.strip("-") for a in args)))
    p = subprocess.run([EDGED, "filter", src, dst, "--json", *args], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    meta = json.loads(p.stdout)
    return read_png(dst), meta


def luma(im):
    f = im.astype(np.float32)
    if im.ndim == 2:
        return f
    return np.float32(0.299) * f[..., 0] + np.float32(0.587) * f[..., 1] + np.float32(0.114) * f[..., 2]


def corr(plane, k, border=None):
    # cv2.filter2D is a correlation with the anchor at the centre, as edged; no border: cv2's default.
    if border is None:
        return cv2.filter2D(plane.astype(np.float32), cv2.CV_32F, k)
    return cv2.filter2D(plane.astype(np.float32), cv2.CV_32F, k, borderType=BORDERS[border])


def to_u8(v):
    return np.clip(np.rint(v), 0, 255).astype(np.uint8)


def assert_close_u8(got, want):
    diff = np.abs(got.astype(int) - want.astype(int))
    assert diff.max() <= 1, "max diff %d" % diff.max()
    assert (diff > 0).mean() <= 0.005, "%.3f%% samples differ" % (100 * (diff > 0).mean())


def per_channel(im, fn):
    if im.ndim == 2:
        return fn(im)
    return np.dstack([fn(im[..., c]) for c in range(3)])


@pytest.mark.parametrize("photo", PHOTOS)
@pytest.mark.parametrize("border", list(BORDERS))
def test_edge_matches_opencv(photo, border):
    src = photo_path(photo)
    got, meta = run_edged(src, "--filter", "edge", "--border", border, "--variant", "cpu")
    im = read_png(src)
    lap = corr(corr(luma(im), G5, border), LAP3, border)
    want = np.where(np.abs(lap) > 5.0, 255, 0)
    assert got.shape == lap.shape and meta["width"] == im.shape[1] and meta["height"] == im.shape[0]
    near = np.abs(np.abs(lap) - 5.0) <= 1e-3
    bad = (got != want) & ~near
    assert bad.sum() == 0, "%d edge pixels differ away from the threshold" % bad.sum()
    assert 0.01 < (got == 255).mean() < 0.9, "edge map is degenerate"


@pytest.mark.parametrize("photo", ["astronaut.png", "camera.png"])
@pytest.mark.parametrize("name,kernel,post", [("gaussian5", G5, "clamp"), ("sharpen", SHARPEN, "clamp"),
                                              ("emboss", EMBOSS, "offset")])
def test_colour_filters_match_opencv(photo, name, kernel, post):
    src = photo_path(photo)
    got, _ = run_edged(src, "--filter", name)  # the default border, as OpenCV's
    im = read_png(src)
    off = 128.0 if post == "offset" else 0.0
    want = per_channel(im, lambda p: to_u8(corr(p, kernel) + off))
    assert_close_u8(got, want)


@pytest.mark.parametrize("variant", ["cpu_serial", "cpu"])
def test_sobel_and_laplacian_match_opencv(variant):
    src = photo_path("coffee.png")
    im = read_png(src)
    y = luma(im)
    got, meta = run_edged(src, "--filter", "sobel", "--variant", variant)  # the default border, as OpenCV's
    gx, gy = corr(y, SOBEL_X), corr(y, SOBEL_X.T.copy())
    assert meta["variant"] == variant
    assert_close_u8(got, to_u8(np.sqrt(gx * gx + gy * gy)))
    got, _ = run_edged(src, "--filter", "sobel", "--variant", variant, "--border", "zero")  # the reports' padding
    gx, gy = corr(y, SOBEL_X, "zero"), corr(y, SOBEL_X.T.copy(), "zero")
    assert_close_u8(got, to_u8(np.sqrt(gx * gx + gy * gy)))
    got, _ = run_edged(src, "--filter", "laplacian3", "--variant", variant, "--border", "replicate")
    assert_close_u8(got, to_u8(np.abs(corr(y, LAP3, "replicate"))))


@pytest.mark.parametrize("variant", ["cpu_serial", "cpu"])
@pytest.mark.parametrize("name,kx", [("scharr", SCHARR_X), ("prewitt", PREWITT_X)])
def test_scharr_and_prewitt_match_opencv(variant, name, kx):
    src = photo_path("coffee.png")
    y = luma(read_png(src))
    gx, gy = corr(y, kx), corr(y, kx.T.copy())
    got, _ = run_edged(src, "--filter", name, "--variant", variant)
    assert_close_u8(got, to_u8(np.sqrt(gx * gx + gy * gy)))
    got, _ = run_edged(src, "--filter", name + "_x", "--variant", variant, "--border", "replicate")
    assert_close_u8(got, to_u8(np.abs(corr(y, kx, "replicate"))))
    got, _ = run_edged(src, "--filter", name + "_y", "--variant", variant, "--post", "offset")
    assert_close_u8(got, to_u8(gy + 128.0))


@pytest.mark.parametrize("size,sigma", [(3, None), (7, None), (15, "2.5"), (31, None)])
def test_gaussian_matches_opencv(size, sigma):
    src = photo_path("chelsea.png")
    args = ["--filter", "gaussian", "--size", str(size), "--border", "replicate"]
    got, _ = run_edged(src, *(args + (["--sigma", sigma] if sigma else [])))
    g = cv2.getGaussianKernel(size, float(sigma) if sigma else -1, cv2.CV_64F)
    if size <= 7 and not sigma:  # OpenCV uses fixed tables for small sizes; edged always uses the formula
        s = 0.3 * ((size - 1) * 0.5 - 1) + 0.8
        g = cv2.getGaussianKernel(size, s, cv2.CV_64F)
    g = g.astype(np.float32)
    im = read_png(src)
    want = per_channel(im, lambda p: to_u8(cv2.sepFilter2D(p.astype(np.float32), cv2.CV_32F, g, g,
                                                           borderType=cv2.BORDER_REPLICATE)))
    assert_close_u8(got, want)


def test_box_and_custom_match_opencv():
    src = photo_path("astronaut.png")
    im = read_png(src)
    got, _ = run_edged(src, "--filter", "box", "--size", "9", "--border", "zero")
    want = per_channel(im, lambda p: to_u8(corr(p, np.full((9, 9), 1 / 81.0, np.float32), "zero")))
    assert_close_u8(got, want)
    taps = "0,1,2;-1,0,1;-2,-1,0;3,0,-3;1,1,1"  # 5x3, asymmetric: catches a flipped kernel
    k = np.array([[float(v) for v in r.split(",")] for r in taps.split(";")], np.float32)
    got, _ = run_edged(src, "--filter", "custom", "--taps", taps, "--color", "gray", "--post", "abs")
    assert_close_u8(got, to_u8(np.abs(corr(luma(im), k))))


def test_alpha_passes_through():
    src = os.path.join(PNGSUITE, "basn6a08.png")  # RGBA
    if not os.path.exists(src):
        pytest.skip("PngSuite not found at %s" % PNGSUITE)
    got, meta = run_edged(src, "--filter", "box", "--size", "3")
    im = read_png(src)
    assert meta["out_channels"] == 4 and got.shape == im.shape
    assert np.array_equal(got[..., 3], im[..., 3])


def test_corrupt_pngs_exit_3():
    bad = sorted(glob.glob(os.path.join(PNGSUITE, "x*.png")))
    if not bad:
        pytest.skip("PngSuite not found at %s" % PNGSUITE)
    os.makedirs(OUT, exist_ok=True)
    for path in bad:
        p = subprocess.run([EDGED, "filter", path, os.path.join(OUT, "never.png")], capture_output=True, text=True)
        assert p.returncode == 3, "%s: exit %d %s" % (path, p.returncode, p.stderr)
        assert "png" in p.stderr.lower(), p.stderr


@pytest.mark.parametrize("args,code", [
    ([], 2), (["--filter", "nope"], 2), (["--size", "4", "--filter", "box"], 2),
    (["--filter", "sobel", "--size", "5"], 2), (["--threshold", "abc"], 2), (["--block", "12"], 2),
    (["--filter", "custom"], 2), (["--png-level", "10"], 2), (["--bogus"], 2),
])
def test_usage_errors_exit_2(args, code):
    src = photo_path("camera.png")
    argv = [EDGED, "filter"] + ([src, os.path.join(OUT, "u.png")] if args else []) + args
    p = subprocess.run(argv, capture_output=True, text=True)
    assert p.returncode == code, p.stderr
    assert p.stderr.strip(), "no message on stderr"


def test_missing_input_exits_3():
    p = subprocess.run([EDGED, "filter", "/nonexistent.png", "/tmp/x.png"], capture_output=True, text=True)
    assert p.returncode == 3 and "nonexistent" in p.stderr


def test_lists_and_help():
    for cmd, must in (("variants", ["cpu_serial", "naive", "texture2d"]), ("filters", ["edge", "gaussian5", "custom"])):
        p = subprocess.run([EDGED, cmd], capture_output=True, text=True)
        assert p.returncode == 0 and all(m in p.stdout for m in must)
    for argv in ([EDGED, "--help"], [EDGED, "filter", "--help"], [EDGED, "variants", "--help"]):
        p = subprocess.run(argv, capture_output=True, text=True)
        assert p.returncode == 0 and "usage" in p.stdout
