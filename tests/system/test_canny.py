"""test_canny.py — the canny filter pixel for pixel against OpenCV's cv2.Canny: 0 differing pixels
on photographs, random and synthetic images (steps, ramps, thin lines, plateaus of equal magnitude),
for apertures 3, 5, 7 and both norms, through the CLI (variants cpu and cpu_serial) and through HTTP
on the CPU backend. RGB input is compared with cv2.Canny of edged's gray (float32 BT.601 luma,
rounded to nearest even); the optional pre-blur with cv2.Canny of edged's own blurred gray (the
gaussian filter with the same size, sigma and border, variant cpu_serial). Skipped, visibly,
without cv2."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest
import requests

from conftest import BIN, ROOT, png_bytes, png_decode

cv2 = pytest.importorskip("cv2")
sys.path.insert(0, os.path.join(ROOT, "tests", "bench"))
import photos  # noqa: E402  (the benchmarks' inputs: the synthetic image here)

# (aperture, l2gradient, low, high): thresholds on each scale (aperture 5 and 7 gradients are
# larger; aperture 7 thresholds are divided by 16 as cv::Canny does), fractional ones, low == high.
CASES = [(3, False, 50, 150), (3, True, 37.5, 112.25), (3, False, 100, 100), (5, False, 300, 900),
         (5, True, 200.5, 700), (7, False, 3000, 9000), (7, True, 2500, 2500.75), (3, True, 0, 0)]


def luma_u8(a):
    """edged's gray of an image: the sample, or rint(float32 0.299 R + 0.587 G + 0.114 B)."""
    if a.ndim == 2:
        return a
    f = a.astype(np.float32)
    y = np.float32(0.299) * f[..., 0] + np.float32(0.587) * f[..., 1] + np.float32(0.114) * f[..., 2]
    return np.clip(np.rint(y), 0, 255).astype(np.uint8)


def synthetic():
    """Images made to hit the rules: steps (ties between two equal magnitudes), ramps, thin lines,
    plateaus of a few levels, a checkerboard, diagonal edges, noise, tall/thin and tiny shapes."""
    rng = np.random.default_rng(7)
    y, x = np.mgrid[0:96, 0:128]
    out = {
        "step_v": np.where(x >= 64, 255, 0),
        "step_h": np.where(y >= 40, 200, 20),
        "ramp": (x * 2 + y) % 256,
        "ramp_steps": ((x // 8) * 23 + (y // 5) * 11) % 256,
        "lines": np.where((x % 9 == 0) | (y % 13 == 0) | (x == y), 255, 30),
        "plateaus": np.array([0, 60, 120, 255])[((x // 7) * 3 + (y // 5)) % 4],
        "checker": np.where(((x // 4) + (y // 4)) % 2 == 0, 255, 0),
        "diagonal": np.where(x + 2 * y > 150, 180, 40),
        "noise": rng.integers(0, 256, (96, 128)),
        "tall": rng.integers(0, 256, (301, 3)),
        "thin": np.tile(np.where(np.arange(257) % 11 < 5, 250, 10), (2, 1)),
        "tiny": rng.integers(0, 256, (1, 1)),
        # widths off the 16-byte rows of the GPU map writer: its misaligned heads and ragged tails
        "w15": rng.integers(0, 256, (40, 15)),
        "w17": np.where((np.mgrid[0:33, 0:17][1] * 3 + np.mgrid[0:33, 0:17][0]) % 11 < 5, 230, 20),
        "wide_7001": (np.mgrid[0:20, 0:7001][1] // 13 * 37 + rng.integers(0, 40, (20, 7001))) % 256,
        "wide_8191": (np.mgrid[0:9, 0:8191][1] // 7 * 53 + rng.integers(0, 30, (9, 8191))) % 256,
    }
    return {k: v.astype(np.uint8) for k, v in out.items()}


def photographs():
    """Synthetic photo-like images (tests/bench/photos.py) and scikit-image's real ones when installed."""
    out = {"photo_a": photos.synthetic(256, seed=3, grain=photos.GRAIN), "photo_b": photos.synthetic(193, seed=5)}
    try:
        import skimage.data as sd
        out["camera"] = sd.camera()
        out["astronaut"] = sd.astronaut()[::2, ::2]
    except ImportError:
        print("scikit-image not installed: real photographs skipped (synthetic ones still run)")
    return out


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    d = tmp_path_factory.mktemp("canny")
    imgs = dict(synthetic(), **photographs())
    imgs["random_rgb"] = np.random.default_rng(11).integers(0, 256, (67, 45, 3)).astype(np.uint8)
    imgs["random_rgba"] = np.random.default_rng(12).integers(0, 256, (33, 70, 4)).astype(np.uint8)
    paths = {}
    for name, a in imgs.items():
        paths[name] = str(d / (name + ".png"))
        with open(paths[name], "wb") as f:
            f.write(png_bytes(a))
    return imgs, paths, d


def canny_args(ap, l2, low, high):
    return ["--filter", "canny", "--aperture", str(ap), "--low", str(low), "--high", str(high)] + \
        (["--l2gradient"] if l2 else [])


def run_cli(pairs, *args):
    """One `edged filter` process over many INPUT OUTPUT pairs."""
    cmd = [BIN, "filter"] + [p for pair in pairs for p in pair] + list(args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr


def read_map(path):
    with open(path, "rb") as f:
        return png_decode(f.read())


@pytest.mark.parametrize("variant", ["cpu", "cpu_serial"])
@pytest.mark.parametrize("ap,l2,low,high", CASES)
def test_cli_equals_cv2_canny(images, variant, ap, l2, low, high):
    imgs, paths, d = images
    outs = {n: str(d / ("%s_%s_%d_%d_%s_%s.png" % (n, variant, ap, l2, low, high))) for n in imgs}
    run_cli([(paths[n], outs[n]) for n in imgs], "--variant", variant, *canny_args(ap, l2, low, high))
    bad = {}
    for n, a in imgs.items():
        got = read_map(outs[n])
        want = cv2.Canny(luma_u8(a), low, high, apertureSize=ap, L2gradient=l2)
        assert got.shape == want.shape, n
        if (got != want).any():
            bad[n] = int((got != want).sum())
    assert not bad, "pixels differing from cv2.Canny: %s" % bad


def test_cli_one_bit_output(images):
    imgs, paths, d = images
    out = str(d / "camera_1bit.png")
    name = "camera" if "camera" in imgs else "photo_a"
    run_cli([(paths[name], out)], "--filter", "canny", "--bit-depth", "1", "--variant", "cpu")
    with open(out, "rb") as f:
        assert f.read(26)[24] == 1, "not a 1-bit PNG"
    assert (read_map(out) == cv2.Canny(luma_u8(imgs[name]), 50, 150)).all()


@pytest.mark.parametrize("sigma,size,border", [(1.4, None, "replicate"), (None, 5, "reflect"), (2.0, 7, "zero")])
def test_pre_blur_is_canny_of_the_blurred_gray(images, sigma, size, border):
    """The pre-blur: cv2.Canny of the gray that the gaussian filter makes with the same knobs."""
    imgs, paths, d = images
    blur = (["--sigma", str(sigma)] if sigma else []) + (["--size", str(size)] if size else [])
    for name in ("photo_a", "random_rgb", "plateaus"):
        gray, edges = str(d / (name + "_g.png")), str(d / (name + "_c.png"))
        side = size or (int(np.rint(6 * sigma + 1)) | 1)
        run_cli([(paths[name], gray)], "--filter", "gaussian", "--color", "gray", "--size", str(side),
                "--border", border, "--variant", "cpu_serial", *(["--sigma", str(sigma)] if sigma else []))
        for variant in ("cpu", "cpu_serial"):
            run_cli([(paths[name], edges)], "--filter", "canny", "--border", border, "--variant", variant, *blur)
            want = cv2.Canny(read_map(gray), 50, 150)
            assert (read_map(edges) == want).all(), (name, variant, int((read_map(edges) != want).sum()))


@pytest.mark.parametrize("ap,l2,low,high", [CASES[0], CASES[1], CASES[4], CASES[6]])
def test_http_equals_cv2_canny(server, images, ap, l2, low, high):
    imgs, _, _ = images
    for name in ("photo_a", "random_rgba", "plateaus", "camera"):
        if name not in imgs:
            continue
        for variant in ("cpu", "cpu_serial", "auto"):
            params = {"filter": "canny", "aperture": ap, "l2gradient": l2, "low": low, "high": high,
                      "variant": variant}
            r = requests.post(server.url + "/v1/filter", files={"image": png_bytes(imgs[name])},
                              data={"params": json.dumps(params)}, timeout=60)
            assert r.status_code == 200, r.text
            got = png_decode(r.content)
            assert got.ndim == 2, "canny's output is one channel (alpha is not carried)"
            want = cv2.Canny(luma_u8(imgs[name][..., :3] if imgs[name].ndim == 3 else imgs[name]), low, high,
                             apertureSize=ap, L2gradient=l2)
            assert (got == want).all(), (name, variant, int((got != want).sum()))


def test_http_json_report_and_refusals(server, images):
    imgs, _, _ = images
    png = png_bytes(imgs["photo_b"])
    r = requests.post(server.url + "/v1/filter?filter=canny&low=20&high=80&aperture=5&l2gradient=true&output=json",
                      data=png, headers={"Content-Type": "image/png"}, timeout=60)
    assert r.status_code == 200, r.text
    p = r.json()["params"]
    assert (p["low"], p["high"], p["aperture"], p["l2gradient"], p["size"], p["sigma"]) == (20, 80, 5, True, None, None)
    for query, code in [("low=200&high=100", 400), ("aperture=4", 400), ("low=-1", 400), ("l2gradient=maybe", 400),
                        ("threshold=3", 400), ("post=clamp", 400), ("color=rgb", 400), ("variant=naive", 422),
                        ("variant=tiled", 422)]:
        r = requests.post(server.url + "/v1/filter?filter=canny&" + query, data=png,
                          headers={"Content-Type": "image/png"}, timeout=60)
        assert r.status_code == code, (query, r.status_code, r.text)
        if code == 422:
            assert "fast" in r.json()["error"]["message"], r.text
    r = requests.post(server.url + "/v1/filter?filter=edge&low=3", data=png, headers={"Content-Type": "image/png"},
                      timeout=60)
    assert r.status_code == 400 and "canny" in r.text


def test_compare_rows_agree(server, images):
    """/v1/compare on a binary map: max_abs_diff is 0 (equal maps) or 255 (a differing pixel)."""
    imgs, _, _ = images
    r = requests.post(server.url + "/v1/compare", files={"image": png_bytes(imgs["photo_a"])},
                      data={"params": json.dumps({"filter": "canny", "aperture": 5, "low": 100, "high": 400})},
                      timeout=60)
    assert r.status_code == 200, r.text
    body = r.json()
    rows = {row["variant"]: row for row in body["rows"]}
    assert {"cpu_serial", "cpu"} <= set(rows), body
    assert rows["cpu"]["max_abs_diff_vs_cpu_serial"] == 0


def test_catalogue_lists_canny(server):
    cat = requests.get(server.url + "/v1/filters", timeout=10).json()
    canny = next(f for f in cat["filters"] if f["name"] == "canny")
    assert set(canny["params"]) >= {"low", "high", "aperture", "l2gradient", "sigma", "size", "bit_depth"}
    assert canny["variants"] == ["auto", "cpu_serial", "cpu", "fast"]
    assert canny["color"] == "gray" and "kernel_side" not in canny
    edge = next(f for f in cat["filters"] if f["name"] == "edge")
    assert "naive" in edge["variants"]
    out = subprocess.run([BIN, "filters"], capture_output=True, text=True, timeout=10).stdout
    assert any(line.startswith("canny ") for line in out.splitlines()), out
