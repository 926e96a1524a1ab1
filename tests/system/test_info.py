"""test_info.py — POST /v1/info: what an image is, from its header alone, for PNG, JPEG and WebP.

Outcomes asserted: format, size, channels (as the decode gives them), bit depth, EXIF orientation,
progressive and animated as the header says, the JPEG frame (colour model, sampling, scans) and the
WebP kind; an image over the limits is described (200, within_limits false, the error /v1/filter
gives) without pixel memory (peak RSS); corrupt headers are 422, other formats 415, any parameter
400, GET 405. The server is the CPU backend's (the endpoint runs no job)."""
import struct
import zlib

import cv2
import numpy as np
import pytest
import requests

from conftest import png_bytes
from helpers import (chunk, cjpeg, cpu_seconds, error_of, ihdr, proc_status, progressive_jpeg, sanitized, solid_png,
                     SIG)
from test_jpeg_webp import BGR, RGB, cv_jpeg, cv_webp, pil_jpeg, sof_bomb, with_exif


def info(url, data, ctype="image/png", params=None, multipart=False):
    if multipart:
        return requests.post(url + "/v1/info", params=params, files={"file": ("x.bin", data, ctype)}, timeout=30)
    return requests.post(url + "/v1/info", params=params, data=data, headers={"Content-Type": ctype}, timeout=30)


def described(url, data, **kw):
    r = info(url, data, **kw)
    assert r.status_code == 200 and r.headers["Content-Type"] == "application/json", r.text
    j = r.json()
    assert j["request_id"] == r.headers["X-Request-ID"] and j["bytes"] == len(data)
    return j


def png_with(w, h, depth, color, interlace=0, extra=b""):
    """A PNG whose IHDR says depth/color/interlace; the IDAT is a valid zero image of any kind."""
    bits = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[color] * depth
    raw = (b"\0" + bytes((w * bits + 7) // 8)) * h  # not interlaced: enough for the header tests
    plte = chunk(b"PLTE", b"\0\0\0") if color == 3 else b""
    return SIG + ihdr(w, h, depth, color, interlace) + extra + plte + chunk(b"IDAT", zlib.compress(raw)) + \
        chunk(b"IEND", b"")


@pytest.mark.parametrize("depth,color,ch", [(8, 0, 1), (16, 0, 1), (1, 0, 1), (4, 3, 3), (8, 4, 2), (8, 2, 3),
                                            (16, 6, 4)])
def test_png(server, depth, color, ch):
    j = described(server.url, png_with(37, 21, depth, color))
    assert (j["format"], j["width"], j["height"], j["channels"], j["bit_depth"]) == ("png", 37, 21, ch, depth), j
    assert (j["orientation"], j["progressive"], j["animated"], j["within_limits"]) == (1, False, False, True), j
    assert "jpeg" not in j and "webp" not in j and "limit_error" not in j


def test_png_interlaced_trns_and_apng(server):
    assert described(server.url, png_with(9, 9, 8, 2, interlace=1))["progressive"] is True
    trns = chunk(b"tRNS", b"\0\1\0\2\0\3")
    assert described(server.url, png_with(9, 9, 8, 2, extra=trns))["channels"] == 4  # tRNS: alpha
    actl = chunk(b"acTL", struct.pack(">II", 2, 0))
    j = described(server.url, png_with(9, 9, 8, 0, extra=actl))
    assert j["animated"] is True and j["channels"] == 1


def test_jpeg(server):
    j = described(server.url, with_exif(cv_jpeg(BGR), 6), ctype="image/jpeg")
    assert (j["format"], j["width"], j["height"], j["channels"], j["bit_depth"], j["orientation"]) == \
        ("jpeg", RGB.shape[1], RGB.shape[0], 3, 8, 6), j
    assert j["progressive"] is False and j["jpeg"] == {"colorspace": "YCbCr", "subsampling": "4:2:0",
                                                       "sampling_factors": "2x2,1x1,1x1", "components": 3,
                                                       "scans": 1, "arithmetic": False}
    j = described(server.url, cv_jpeg(cv2.cvtColor(BGR, cv2.COLOR_BGR2GRAY), cv2.IMWRITE_JPEG_PROGRESSIVE, 1))
    assert j["progressive"] is True and j["channels"] == 1 and j["jpeg"]["scans"] > 1
    assert j["jpeg"]["colorspace"] == "gray" and j["jpeg"]["sampling_factors"] == "1x1"
    j = described(server.url, pil_jpeg(RGB, "CMYK"), multipart=True)
    assert j["channels"] == 3 and j["jpeg"]["components"] == 4 and j["jpeg"]["colorspace"] == "CMYK"
    data = cjpeg(RGB, "4x2,1x1,1x1")
    if data is None:
        pytest.skip("cjpeg missing (Debian package libjpeg-turbo-progs)")
    j = described(server.url, data)
    assert j["jpeg"]["sampling_factors"] == "4x2,1x1,1x1" and j["jpeg"]["subsampling"] == "other"


def test_webp(server):
    j = described(server.url, cv_webp(BGR, 80), ctype="image/webp")
    assert (j["format"], j["channels"], j["bit_depth"], j["webp"]) == ("webp", 3, 8, {"lossless": False}), j
    alpha = np.dstack([BGR, np.full(BGR.shape[:2], 7, np.uint8)])
    j = described(server.url, cv_webp(alpha, 101))
    assert j["channels"] == 4 and j["webp"]["lossless"] is True and j["progressive"] is False


def test_over_the_limits_described_without_pixels(server):
    """A 20000x20000 PNG (400 megapixels, a few hundred KB) and a 505-scan JPEG: described, with
    the error /v1/filter gives them, and neither costs pixel memory or decode time."""
    big = solid_png(20000, 20000)
    pid = server.proc.pid
    hwm0, cpu0 = proc_status(pid, "VmHWM"), cpu_seconds(pid)
    j = described(server.url, big)
    assert (j["width"], j["height"], j["within_limits"]) == (20000, 20000, False), j
    assert j["limit_error"]["code"] == "image_too_large" and "max-pixels" in j["limit_error"]["message"]
    bomb = progressive_jpeg(7070, 7070, 505)
    j = described(server.url, bomb)
    assert j["jpeg"]["scans"] == 505 and not j["within_limits"] and j["limit_error"]["code"] == "bad_image"
    assert "505 scans" in j["limit_error"]["message"]
    assert cpu_seconds(pid) - cpu0 < 1.0
    if not sanitized():  # 400 MP of gray would be 400 MB; the body buffers are a few MB
        assert proc_status(pid, "VmHWM") - hwm0 < 64 * 1024, (hwm0, proc_status(pid, "VmHWM"))


def test_limits_are_the_servers(make_server):
    s = make_server("--max-side", "50")
    j = described(s.url, cv_jpeg(BGR))
    assert not j["within_limits"] and "max-side 50" in j["limit_error"]["message"]
    assert described(s.url, png_bytes(RGB[:40, :40]))["within_limits"] is True


@pytest.mark.parametrize("data,status,code", [
    (b"GIF89a" + b"\0" * 64, 415, "unsupported_media_type"),
    (b"", 415, "unsupported_media_type"),
    (sof_bomb(8, 8, b"\xff\xc3"), 415, "unsupported_media_type"),   # lossless JPEG
    (png_with(9, 9, 8, 0)[:20], 422, "bad_png"),                        # cut inside IHDR
    (cv_jpeg(BGR)[:40], 422, "bad_image"),                              # cut before the frame header
    (b"RIFF\x20\0\0\0WEBPVP8 " + b"\0" * 20, 422, "bad_image"),          # a VP8 header of zeros
])
def test_refusals(server, data, status, code):
    r = info(server.url, data)
    assert r.status_code == status and error_of(r)["code"] == code, r.text


def test_animated_webp_is_415(server):
    vp8x = b"VP8X" + struct.pack("<I", 10) + bytes([0x02, 0, 0, 0]) + (7).to_bytes(3, "little") * 2
    body = b"WEBP" + vp8x + b"ANIM" + struct.pack("<I", 6) + b"\0" * 6
    r = info(server.url, b"RIFF" + struct.pack("<I", len(body)) + body, "image/webp")
    assert r.status_code == 415 and "animated WebP" in error_of(r)["message"]


def test_parameters_refused_and_post_only(server):
    png = png_bytes(RGB)
    for kw in ({"params": {"filter": "edge"}}, {"params": {"orientation": "ignore"}, "multipart": True}):
        r = info(server.url, png, **kw)
        assert r.status_code == 400 and "takes no parameters" in error_of(r)["message"], r.text
    r = requests.post(server.url + "/v1/info", files={"image": ("x.png", png), "filter": (None, "edge")}, timeout=30)
    assert r.status_code == 400 and error_of(r)["message"].startswith("filter:"), r.text
    r = requests.get(server.url + "/v1/info", timeout=30)
    assert r.status_code == 405 and r.headers["Allow"] == "POST"
