"""test_jpeg_webp.py — JPEG and WebP input, EXIF orientation, JPEG and WebP output, the output format
rules (format, Accept, quality, what /v1/compare refuses) and the JPEG scan limit, over HTTP and the
CLI.

The corpus is made here: cv2 writes baseline, progressive and gray JPEG and lossy/lossless WebP;
PIL writes the 4:4:4 / 4:2:2 / 4:2:0 JPEGs (this cv2 has no IMWRITE_JPEG_SAMPLING_FACTOR) and a
CMYK one; cjpeg (libjpeg-turbo-progs) the uncommon sampling factors (4:1:0, 1x3, 1x4, 2x4, 3x1,
chroma 2x1); helpers.progressive_jpeg a progressive file of any number of scans. Decoded pixels
must equal cv2.imdecode's exactly: both decode with the system libjpeg-turbo and libwebp, islow
IDCT and fancy upsampling. The identity filter (custom taps [[1]]) returns the decoded image as a
PNG."""
import io
import json
import os
import struct
import subprocess

import cv2
import numpy as np
import pytest
import requests
from PIL import Image

from conftest import BIN, Server, png_bytes, png_decode
from helpers import cjpeg, cpu_seconds, error_of, progressive_jpeg, slowdown

IDENTITY = {"filter": "custom", "taps": "[[1]]", "post": "clamp"}
H, W = 47, 61  # odd sides: partial MCUs on both axes


@pytest.fixture(scope="module")
def server():
    """A server on the CPU codec whatever the backend (EDGED_GPU_JPEG=0): these tests hold decoded
    pixels to libjpeg-turbo's exactly, and nvJPEG's differ by a few levels (test_nvjpeg.py covers
    the device decoder against these bounds)."""
    s = Server([], env=dict(os.environ, EDGED_GPU_JPEG="0"))
    yield s
    s.stop()


def smooth_rgb(seed=7):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, size=(H, W, 3), dtype=np.uint8)
    return cv2.GaussianBlur(a, (9, 9), 3)


def cv_jpeg(a, *flags):
    ok, buf = cv2.imencode(".jpg", a, [cv2.IMWRITE_JPEG_QUALITY, 90, *flags])
    assert ok
    return buf.tobytes()


def pil_jpeg(a, mode="RGB", **kw):
    f = io.BytesIO()
    Image.fromarray(a).convert(mode).save(f, "JPEG", quality=90, **kw)
    return f.getvalue()


def cv_webp(a, quality):
    ok, buf = cv2.imencode(".webp", a, [cv2.IMWRITE_WEBP_QUALITY, quality])
    assert ok
    return buf.tobytes()


def exif_app1(orientation, big_endian=False):
    """An APP1 Exif segment whose IFD0 holds only the orientation tag."""
    e = ">" if big_endian else "<"
    tiff = (b"MM\0*" if big_endian else b"II*\0") + struct.pack(e + "I", 8) + struct.pack(e + "H", 1)
    tiff += struct.pack(e + "HHI", 0x0112, 3, 1) + struct.pack(e + "HH", orientation, 0) + struct.pack(e + "I", 0)
    payload = b"Exif\0\0" + tiff
    return b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload


def with_exif(jpg, orientation, big_endian=False):
    return jpg[:2] + exif_app1(orientation, big_endian) + jpg[2:]


def cv_decode_rgb(data, flags=cv2.IMREAD_UNCHANGED):
    im = cv2.imdecode(np.frombuffer(data, np.uint8), flags)
    assert im is not None
    if im.ndim == 3:
        im = cv2.cvtColor(im, cv2.COLOR_BGRA2RGBA if im.shape[2] == 4 else cv2.COLOR_BGR2RGB)
    return im


def post(url, data, params, ctype="image/jpeg", headers=None):
    h = {"Content-Type": ctype}
    h.update(headers or {})
    return requests.post(url + "/v1/filter", params=params, data=data, headers=h, timeout=30)


def decoded(server, data, extra=None):
    """The image edged decoded, through the identity filter."""
    r = post(server.url, data, dict(IDENTITY, **(extra or {})), "image/webp")
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "image/png"
    return png_decode(r.content)


RGB = smooth_rgb()
BGR = cv2.cvtColor(RGB, cv2.COLOR_RGB2BGR)
CORPUS = {
    "baseline_420": lambda: cv_jpeg(BGR),
    "progressive": lambda: cv_jpeg(BGR, cv2.IMWRITE_JPEG_PROGRESSIVE, 1),
    "gray": lambda: cv_jpeg(cv2.cvtColor(BGR, cv2.COLOR_BGR2GRAY)),
    "gray_progressive": lambda: cv_jpeg(cv2.cvtColor(BGR, cv2.COLOR_BGR2GRAY), cv2.IMWRITE_JPEG_PROGRESSIVE, 1),
    "pil_444": lambda: pil_jpeg(RGB, subsampling=0),
    "pil_422": lambda: pil_jpeg(RGB, subsampling=1),
    "pil_420": lambda: pil_jpeg(RGB, subsampling=2),
    "pil_422_progressive": lambda: pil_jpeg(RGB, subsampling=1, progressive=True),
    "cmyk": lambda: pil_jpeg(RGB, "CMYK"),
    "webp_lossy": lambda: cv_webp(BGR, 80),
    "webp_lossless": lambda: cv_webp(BGR, 101),
    "webp_alpha": lambda: cv_webp(np.dstack([BGR, (np.arange(W)[None, :] * 4 % 256).repeat(H, 0).astype(np.uint8)]),
                                  101),
}


# luma, Cb, Cr sampling factors TurboJPEG 2.1's header call has no name for; libjpeg decodes them
SAMPLINGS = ["4x2,1x1,1x1", "1x3,1x1,1x1", "1x4,1x1,1x1", "2x4,1x1,1x1", "3x1,1x1,1x1", "2x2,2x1,1x1",
             "4x1,1x1,1x1"]


@pytest.mark.parametrize("progressive", [False, True])
@pytest.mark.parametrize("sample", SAMPLINGS)
def test_uncommon_sampling_equals_opencv(server, sample, progressive):
    data = cjpeg(RGB, sample, progressive=progressive)
    if data is None:
        pytest.skip("cjpeg missing (Debian package libjpeg-turbo-progs)")
    sof = data.index(b"\xff\xc2" if progressive else b"\xff\xc0")
    assert data[sof + 11] == int(sample[0]) << 4 | int(sample[2]), sample  # the factors are what we asked for
    want = cv_decode_rgb(data)
    got = decoded(server, data, {"color": "rgb"})
    assert got.shape == want.shape and np.array_equal(got, want), (sample, int(np.abs(got.astype(int) - want).max()))


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_decoded_pixels_equal_opencv(server, name):
    data = CORPUS[name]()
    want = cv_decode_rgb(data, cv2.IMREAD_COLOR if name == "cmyk" else cv2.IMREAD_UNCHANGED)
    got = decoded(server, data, {"color": "rgb"} if want.ndim == 3 else None)
    assert got.shape == want.shape, (name, got.shape, want.shape)
    assert np.array_equal(got, want), (name, int(np.abs(got.astype(int) - want).max()))


def test_subsampling_really_differs():
    """The PIL files carry the sampling factors they claim (component 0 of the SOF0)."""
    for name, hv in (("pil_444", 0x11), ("pil_422", 0x21), ("pil_420", 0x22)):
        data = CORPUS[name]()
        sof = data.index(b"\xff\xc0")
        assert data[sof + 11] == hv, name


def orient_np(a, o):
    """EXIF orientation o applied to a (as the EXIF spec and cv2 define it)."""
    return {1: a, 2: a[:, ::-1], 3: a[::-1, ::-1], 4: a[::-1], 5: a.swapaxes(0, 1),
            6: np.rot90(a, -1), 7: np.rot90(a, 1)[:, ::-1], 8: np.rot90(a, 1)}[o]


@pytest.mark.parametrize("o", range(1, 9))
def test_exif_orientation_applied(server, o):
    base = cv_jpeg(BGR)
    plain = cv_decode_rgb(base)
    data = with_exif(base, o, big_endian=o % 2 == 0)
    got = decoded(server, data, {"color": "rgb"})
    assert np.array_equal(got, orient_np(plain, o)), o
    # cv2.imdecode applies EXIF orientation too (IMREAD_COLOR)
    assert np.array_equal(got, cv_decode_rgb(data, cv2.IMREAD_COLOR)), o
    assert np.array_equal(decoded(server, data, {"color": "rgb", "orientation": "ignore"}), plain), o


def test_orientation_param_checked(server):
    r = post(server.url, cv_jpeg(BGR), {"orientation": "upright"})
    assert r.status_code == 400 and "orientation" in error_of(r)["message"]


def test_truncated_jpeg_is_422(server):
    data = cv_jpeg(BGR, cv2.IMWRITE_JPEG_PROGRESSIVE, 1)
    sos = data.index(b"\xff\xda")
    for cut in (3, 20, sos - 5, sos + 30, len(data) // 2, len(data) - 40, len(data) - 2):
        r = post(server.url, data[:cut], IDENTITY)
        assert r.status_code == 422, (cut, r.status_code)
        e = error_of(r)
        assert e["code"] == "bad_image" and "JPEG" in e["message"], (cut, e)
    base = cv_jpeg(BGR)
    sos = base.index(b"\xff\xda")
    r = post(server.url, base[:(sos + len(base)) // 2], IDENTITY)
    assert "Premature end" in error_of(r)["message"]


def test_corrupt_and_truncated_webp_is_422(server):
    data = cv_webp(BGR, 80)
    for cut in (20, 40, len(data) // 2, len(data) - 10):
        r = post(server.url, data[:cut], IDENTITY, "image/webp")
        assert r.status_code == 422, (cut, r.text)
        e = error_of(r)
        assert e["code"] == "bad_image" and "WebP" in e["message"], (cut, e)


def sof_bomb(w, h, marker=b"\xff\xc0", precision=8):
    """A tiny JPEG whose frame header declares w x h (no usable scan)."""
    sof = marker + struct.pack(">HBHHB", 11, precision, h, w, 1) + b"\x01\x11\x00"
    sos = b"\xff\xda" + struct.pack(">HB", 8, 1) + b"\x01\x00\x00\x3f\x00"
    return b"\xff\xd8" + sof + sos + b"\0" * 64 + b"\xff\xd9"


def test_jpeg_bomb_refused_from_header(server):
    r = post(server.url, sof_bomb(65535, 65535), IDENTITY)
    assert r.status_code == 422
    e = error_of(r)
    assert e["code"] == "image_too_large" and "max-" in e["message"], e


def test_limits_from_headers(make_server):
    s = make_server("--max-side", "50")
    for data, ctype in ((cv_jpeg(BGR), "image/jpeg"), (cv_webp(BGR, 80), "image/webp")):
        r = post(s.url, data, IDENTITY, ctype)
        assert r.status_code == 422 and error_of(r)["code"] == "image_too_large", r.text
        assert "max-side" in error_of(r)["message"]


@pytest.mark.parametrize("marker,precision,what", [(b"\xff\xc3", 8, "lossless"), (b"\xff\xc5", 8, "hierarchical"),
                                                   (b"\xff\xc1", 12, "12-bit")])
def test_unsupported_jpeg_kinds_are_415(server, marker, precision, what):
    r = post(server.url, sof_bomb(8, 8, marker, precision), IDENTITY)
    assert r.status_code == 415, r.text
    assert what in error_of(r)["message"]


@pytest.mark.parametrize("scans,code,words", [(505, "bad_image", ["505 scans", "500"]),
                                               (500, "job_too_costly", ["500 scans", "--max-job-cpu-s"])])
def test_costly_jpeg_refused_before_decoding(server, scans, code, words):
    """A 50-megapixel progressive JPEG (144 KB): over 500 scans the scans are counted from the
    markers and the file refused at once (decoding 505 cost 11-12 CPU seconds before this check,
    2-core VM); at 500, the scan limit, the decode's estimate (pixels x scans: 12.9-14.3 CPU s
    measured) is held to --max-job-cpu-s (10) before any pixel is decoded. The bound is generous."""
    data = progressive_jpeg(7070, 7070, scans)
    assert len(data) < 200_000 and data.count(b"\xff\xda") == scans
    pid = server.proc.pid
    c0 = cpu_seconds(pid)
    r = post(server.url, data, {})
    used = cpu_seconds(pid) - c0
    assert r.status_code == 422, r.text
    e = error_of(r)
    assert e["code"] == code and all(w in e["message"] for w in words), e
    assert used < 0.5 * slowdown(), used


def test_scans_under_the_limit_decode(server):
    data = progressive_jpeg(61, 47, 40)
    got = decoded(server, data)
    assert np.array_equal(got, cv_decode_rgb(data)) and set(np.unique(got)) == {128}


def test_animated_webp_is_415(server):
    vp8x = b"VP8X" + struct.pack("<I", 10) + bytes([0x02, 0, 0, 0]) + (7).to_bytes(3, "little") * 2
    anim = b"ANIM" + struct.pack("<I", 6) + b"\0" * 6
    body = b"WEBP" + vp8x + anim
    r = post(server.url, b"RIFF" + struct.pack("<I", len(body)) + body, IDENTITY, "image/webp")
    assert r.status_code == 415, r.text
    assert "animated WebP" in error_of(r)["message"]


def test_other_formats_415_name_the_accepted(server):
    for data in (b"GIF89a" + b"\0" * 64, b"BM" + b"\0" * 64, b"RIFF\0\0\0\0WAVEfmt " + b"\0" * 32):
        r = post(server.url, data, IDENTITY, "image/png")
        assert r.status_code == 415, data[:8]
        m = error_of(r)["message"]
        assert "PNG" in m and "JPEG" in m and "WebP" in m, m


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return 99.0 if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


def test_jpeg_output(server):
    data = cv_jpeg(BGR)
    params = {"filter": "gaussian", "size": 5, "color": "rgb"}
    png = post(server.url, data, params)
    assert png.status_code == 200 and png.headers["Content-Type"] == "image/png"
    ref = png_decode(png.content)
    for extra, headers in (({"format": "jpeg"}, None), ({}, {"Accept": "image/jpeg"}),
                           ({"quality": 95}, {"Accept": "image/png;q=0.5, image/jpeg"})):
        r = post(server.url, data, dict(params, **extra), headers=headers)
        assert r.status_code == 200 and r.headers["Content-Type"] == "image/jpeg", (extra, headers, r.text)
        got = cv_decode_rgb(r.content)
        # quality 90 4:2:0 of a smooth image: PSNR >= 35 dB and no sample off by more than 40
        assert psnr(got, ref) >= 35.0 and np.abs(got.astype(int) - ref).max() <= 40, (extra, psnr(got, ref))
    small = post(server.url, data, dict(params, format="jpeg", quality=10))
    assert len(small.content) < len(post(server.url, data, dict(params, format="jpeg")).content)


def test_output_format_choice(server):
    data = cv_jpeg(BGR)
    for headers in ({"Accept": "*/*"}, {"Accept": "image/png, image/jpeg"}, {"Accept": "image/*"}, {}):
        r = post(server.url, data, {}, headers=headers)  # an edge map
        assert r.status_code == 200 and r.headers["Content-Type"] == "image/png", headers
    r = post(server.url, data, {"format": "jpeg", "bit_depth": 1})
    assert r.status_code == 200 and r.headers["Content-Type"] == "image/jpeg"
    assert set(np.unique(cv_decode_rgb(r.content))) - set(range(0, 30)) - set(range(225, 256)) == set()
    for bad in ({"format": "gif"}, {"quality": 0}, {"quality": 101}, {"format": "png", "quality": 80}):
        r = post(server.url, data, bad)
        assert r.status_code == 400 and error_of(r)["code"] == "invalid_parameter", bad
    r = post(server.url, data, {"format": "jpeg", "output": "json"})
    assert r.status_code == 200 and r.json()["output"]["bytes"] > 0


def test_webp_output(server):
    """format=webp without quality is lossless: the pixels of the PNG answer exactly (gray maps
    expanded to RGB, alpha kept); with quality it is lossy within a PSNR bound."""
    data = cv_jpeg(BGR)
    for params in ({"filter": "gaussian", "size": 5, "color": "rgb"}, {}):  # RGB, and a gray edge map
        ref = png_decode(post(server.url, data, params).content)
        r = post(server.url, data, dict(params, format="webp"))
        assert r.status_code == 200 and r.headers["Content-Type"] == "image/webp", r.text
        assert r.content[:4] == b"RIFF" and r.content[8:12] == b"WEBP"
        got = cv_decode_rgb(r.content)
        want = ref if ref.ndim == 3 else np.dstack([ref] * 3)
        assert got.shape == want.shape and np.array_equal(got, want), params
        lossy = post(server.url, data, dict(params, format="webp", quality=80))
        assert lossy.status_code == 200 and lossy.headers["Content-Type"] == "image/webp"
        # quality 80 of a smooth image (and of a 0/255 map): PSNR >= 30 dB
        assert psnr(cv_decode_rgb(lossy.content), want) >= 30.0, (params, psnr(cv_decode_rgb(lossy.content), want))
    rgba = np.dstack([RGB, (np.arange(W)[None, :] * 4 % 256).repeat(H, 0).astype(np.uint8)])
    png = png_bytes(rgba)
    ident = dict(IDENTITY, color="rgb")
    r = post(server.url, png, dict(ident, format="webp"), "image/png")
    assert r.status_code == 200 and np.array_equal(cv_decode_rgb(r.content), rgba)
    j = post(server.url, data, {"format": "webp", "output": "json"}).json()
    assert j["output"]["format"] == "webp" and j["params"]["format"] == "webp" and "quality" not in j["params"]
    j = post(server.url, data, {"format": "webp", "quality": 70, "output": "json"}).json()
    assert (j["params"]["format"], j["params"]["quality"]) == ("webp", 70)


def test_format_names_and_accept(server):
    data = cv_jpeg(BGR)
    for fmt, ctype in (("jpg", "image/jpeg"), ("jpeg", "image/jpeg"), ("png", "image/png"), ("webp", "image/webp")):
        r = post(server.url, data, {"format": fmt})
        assert r.status_code == 200 and r.headers["Content-Type"] == ctype, (fmt, r.text)
    for accept, ctype in (("image/webp", "image/webp"), ("image/webp, image/png;q=0.9", "image/webp"),
                          ("image/jpeg, image/webp;q=0.5", "image/jpeg"), ("image/webp, image/jpeg", "image/jpeg"),
                          ("image/png, image/webp", "image/png"), ("image/jpeg;q=0.8, image/webp;q=0.9", "image/webp"),
                          ("text/html,application/xhtml+xml,image/avif,image/webp,*/*;q=0.8", "image/webp")):
        r = post(server.url, data, {}, headers={"Accept": accept})
        assert r.status_code == 200 and r.headers["Content-Type"] == ctype, (accept, r.headers["Content-Type"])
    r = post(server.url, data, {"quality": 60}, headers={"Accept": "image/webp"})
    assert r.status_code == 200 and r.headers["Content-Type"] == "image/webp"
    r = post(server.url, data, {"format": "gif"})
    assert r.status_code == 400 and "png, jpeg (or jpg), webp" in error_of(r)["message"]


def test_quality_without_a_lossy_format_is_400(server):
    data = cv_jpeg(BGR)
    for params, headers, words in (({"quality": 80}, None, ["format=jpeg or webp", "Accept", "PNG"]),
                                   ({"quality": 80}, {"Accept": "*/*"}, ["format=jpeg or webp", "Accept"]),
                                   ({"quality": 80, "format": "png"}, None, ["format=jpeg or webp", "not png"]),
                                   ({"quality": 80, "format": "png"}, {"Accept": "image/jpeg"}, ["not png"])):
        r = post(server.url, data, params, headers=headers)
        assert r.status_code == 400, (params, headers, r.status_code)
        e = error_of(r)
        assert e["code"] == "invalid_parameter" and all(w in e["message"] for w in words), e


def test_png_level_with_another_format_is_400(server):
    data = cv_jpeg(BGR)
    for params, headers, words in (({"png_level": 6, "format": "jpeg"}, None, ["png_level", "not jpeg"]),
                                   ({"png_level": 6, "format": "webp"}, None, ["png_level", "not webp"]),
                                   ({"png_level": 6}, {"Accept": "image/webp"}, ["png_level", "Accept", "webp"])):
        r = post(server.url, data, params, headers=headers)
        assert r.status_code == 400, (params, headers, r.status_code)
        e = error_of(r)
        assert e["code"] == "invalid_parameter" and all(w in e["message"] for w in words), e


def test_webp_side_limit(server):
    wide = png_bytes(np.zeros((1, 16384), np.uint8))
    r = post(server.url, wide, {"format": "webp"}, "image/png")
    assert r.status_code == 400 and "16383" in error_of(r)["message"], r.text
    assert post(server.url, wide, {"format": "png"}, "image/png").status_code == 200


@pytest.mark.parametrize("params,named", [({"format": "jpeg"}, "format"), ({"quality": 50}, "quality"),
                                          ({"png_level": 6}, "png_level"), ({"bit_depth": 8}, "bit_depth"),
                                          ({"output": "png"}, "output=png"),
                                          ({"format": "webp", "png_level": 1}, "png_level, format")])
def test_compare_refuses_image_output_options(server, params, named):
    r = requests.post(server.url + "/v1/compare", params=dict(params, variants="cpu_serial"), data=cv_jpeg(BGR),
                      headers={"Content-Type": "image/jpeg"}, timeout=30)
    assert r.status_code == 400, r.text
    e = error_of(r)
    assert e["code"] == "invalid_parameter" and e["message"].startswith(named + ":"), e
    assert "/v1/compare" in e["message"]


def test_compare_takes_output_json(server):
    r = requests.post(server.url + "/v1/compare", params={"output": "json", "variants": "cpu_serial"},
                      data=cv_jpeg(BGR), headers={"Content-Type": "image/jpeg"}, timeout=30)
    assert r.status_code == 200 and r.json()["rows"], r.text


def test_jpeg_in_multipart_and_json_params(server):
    files = {"image": ("x.png", cv_webp(BGR, 101), "image/png")}  # the name and part type are not trusted
    r = requests.post(server.url + "/v1/filter", files=files, data={"params": '{"format": "jpeg", "quality": 80}'},
                      timeout=30)
    assert r.status_code == 200 and r.headers["Content-Type"] == "image/jpeg", r.text


def run_cli(*args):
    return subprocess.run([BIN, "filter", *args], capture_output=True, text=True, timeout=60)


def test_cli_jpeg_webp(tmp_path):
    jpg, webp = tmp_path / "in.jpg", tmp_path / "in.webp"
    jpg.write_bytes(with_exif(cv_jpeg(BGR), 6))
    webp.write_bytes(cv_webp(BGR, 101))
    ident = ["--filter", "custom", "--taps", "1", "--post", "clamp", "--color", "rgb"]
    p = run_cli(str(jpg), str(tmp_path / "o.png"), *ident)
    assert p.returncode == 0, p.stderr
    got = cv_decode_rgb((tmp_path / "o.png").read_bytes())
    assert np.array_equal(got, orient_np(cv_decode_rgb(cv_jpeg(BGR)), 6))
    p = run_cli(str(jpg), str(tmp_path / "o2.png"), *ident, "--orientation", "ignore")
    assert p.returncode == 0 and cv_decode_rgb((tmp_path / "o2.png").read_bytes()).shape[:2] == (H, W)
    p = run_cli(str(webp), str(tmp_path / "o.jpg"), *ident, "--quality", "95")
    assert p.returncode == 0, p.stderr
    out = (tmp_path / "o.jpg").read_bytes()
    assert out[:2] == b"\xff\xd8" and psnr(cv_decode_rgb(out), RGB) >= 35.0
    p = run_cli(str(webp), str(tmp_path / "o3"), *ident, "--format", "jpeg")
    assert p.returncode == 0 and (tmp_path / "o3").read_bytes()[:2] == b"\xff\xd8"
    p = run_cli(str(webp), str(tmp_path / "o.jpg"), "--format", "png")
    assert p.returncode == 2 and "--format is png" in p.stderr
    p = run_cli(str(jpg), str(tmp_path / "o.gif"))
    assert p.returncode == 2 and "PNG, JPEG and WebP" in p.stderr
    p = run_cli("--out-dir", str(tmp_path / "d"), "--format", "jpeg", str(jpg))
    assert p.returncode == 0 and (tmp_path / "d" / "in.jpg").read_bytes()[:2] == b"\xff\xd8"
    trunc = tmp_path / "t.jpg"
    trunc.write_bytes(cv_jpeg(BGR)[:300])
    p = run_cli(str(trunc), str(tmp_path / "t.png"))
    assert p.returncode == 3 and "bad_image" in p.stderr and "JPEG" in p.stderr, p.stderr
    assert not (tmp_path / "t.png").exists()


def test_cli_webp_output(tmp_path):
    src = tmp_path / "in.png"
    src.write_bytes(png_bytes(RGB))
    ident = ["--filter", "custom", "--taps", "1", "--post", "clamp", "--color", "rgb"]
    p = run_cli(str(src), str(tmp_path / "o.webp"), *ident)
    out = (tmp_path / "o.webp").read_bytes()
    assert p.returncode == 0 and out[8:12] == b"WEBP" and np.array_equal(cv_decode_rgb(out), RGB), p.stderr
    p = run_cli(str(src), str(tmp_path / "o2.webp"), *ident, "--quality", "85")
    assert p.returncode == 0 and psnr(cv_decode_rgb((tmp_path / "o2.webp").read_bytes()), RGB) >= 30.0
    p = run_cli(str(src), str(tmp_path / "o3"), *ident, "--format", "webp")
    assert p.returncode == 0 and (tmp_path / "o3").read_bytes()[8:12] == b"WEBP"
    p = run_cli("--out-dir", str(tmp_path / "d"), "--format", "webp", str(src))
    assert p.returncode == 0 and (tmp_path / "d" / "in.webp").read_bytes()[8:12] == b"WEBP", p.stderr
    for args, words in (([str(tmp_path / "o.png"), "--quality", "80"], ["quality", "OUTPUT name"]),
                        ([str(tmp_path / "o4.png"), "--format", "jpeg"], ["png file", "--format is jpeg"]),
                        ([str(tmp_path / "o.webp"), "--format", "png"], ["webp file", "--format is png"])):
        p = run_cli(str(src), *args)
        assert p.returncode == 2 and all(w in p.stderr for w in words), (args, p.stderr)
    assert not (tmp_path / "o4.png").exists()


def test_bench_codec_rows(tmp_path):
    jpg, webp = tmp_path / "a.jpg", tmp_path / "a.webp"
    jpg.write_bytes(cv_jpeg(BGR))
    webp.write_bytes(cv_webp(BGR, 80))
    p = subprocess.run([BIN, "bench", "--codec", "--json", "--reps", "1", "--quality", "80", str(jpg), str(webp)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    # a build with nvJPEG adds its rows for the JPEG file; the CPU codecs come in this order always
    assert [r["codec"] for r in rows if not r["codec"].startswith("nvjpeg")] == ["libjpeg-turbo", "libwebp"]
    assert all(r["decode_ms"] >= 0 and r["encode_ms"] >= 0 and r["bytes"] > 0 for r in rows)


def test_json_report_names_the_output_format(server):
    data = cv_jpeg(BGR)
    j = post(server.url, data, {"format": "jpeg", "quality": 70, "output": "json", "orientation": "ignore"}).json()
    assert j["output"]["format"] == "jpeg"
    assert (j["params"]["format"], j["params"]["quality"], j["params"]["orientation"]) == ("jpeg", 70, "ignore")
    j = post(server.url, data, {"output": "json"}).json()
    assert j["output"]["format"] == "png" and "quality" not in j["params"] and j["params"]["orientation"] == "exif"
