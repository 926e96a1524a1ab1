"""test_nvjpeg.py — JPEG on the GPU with nvJPEG, over HTTP: the counters exist (zero where nothing
ran on the device); on a GPU backend of a build with nvJPEG (EDGED_TEST_BACKEND=gpu, `edged version`
naming nvJPEG), JPEG requests decoded on the device match the CPU decode's (variant cpu) within
JPEG_TOL levels after a Gaussian, for baseline 4:2:0, gray, progressive and an EXIF orientation,
also when many arrive at once (batched decodes); format=jpeg is encoded on the device and decodes
back close to the CPU path's; --gpu-jpeg 0 turns the device codec off. Skipped elsewhere."""
import concurrent.futures
import re
import subprocess

import cv2
import numpy as np
import pytest
import requests

from conftest import BACKEND, BIN, png_decode

JPEG_TOL = 9  # gpu.md: 8 levels for subsampled chroma, plus 1 for the filter's rounding
GAUSS = {"filter": "gaussian", "size": "5"}


def metrics(url):
    text = requests.get(url + "/metrics", timeout=10).text
    out = {}
    for m in re.finditer(r'^(edged_jpeg_\w+)\{(\w+)="(\w+)"\} (\d+)', text, re.M):
        out[(m.group(1), m.group(3))] = int(m.group(4))
    return out


def has_nvjpeg():
    v = subprocess.run([BIN, "version"], capture_output=True, text=True, timeout=30).stdout
    return "nvJPEG" in v and BACKEND == "gpu"


def smooth(h, w, ch, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, size=(h, w, ch) if ch > 1 else (h, w), dtype=np.uint8)
    return cv2.GaussianBlur(a, (9, 9), 3)


def jpeg(a, *flags):
    ok, buf = cv2.imencode(".jpg", a, [cv2.IMWRITE_JPEG_QUALITY, 90, *flags])
    assert ok
    return buf.tobytes()


def with_orientation(jpg, o):
    """An APP1 Exif segment holding only the orientation, after SOI."""
    tiff = b"II*\0" + (8).to_bytes(4, "little") + (1).to_bytes(2, "little")
    tiff += (0x0112).to_bytes(2, "little") + (3).to_bytes(2, "little") + (1).to_bytes(4, "little")
    tiff += o.to_bytes(2, "little") + b"\0\0" + b"\0\0\0\0"
    payload = b"Exif\0\0" + tiff
    return jpg[:2] + b"\xff\xe1" + (len(payload) + 2).to_bytes(2, "big") + payload + jpg[2:]


def post(url, data, params):
    return requests.post(url + "/v1/filter", params=params, data=data, headers={"Content-Type": "image/jpeg"},
                         timeout=60)


def test_counters_exist(server):
    r = post(server.url, jpeg(smooth(31, 45, 3, 1)), dict(GAUSS, variant="cpu"))
    assert r.status_code == 200, r.text
    m = metrics(server.url)
    for key in [("edged_jpeg_gpu_total", "decode"), ("edged_jpeg_gpu_total", "encode"),
                ("edged_jpeg_cpu_fallback_total", "decode_refused"),
                ("edged_jpeg_cpu_fallback_total", "encode_refused")]:
        assert key in m, key
    assert m[("edged_jpeg_gpu_total", "decode")] == 0  # variant cpu never decodes on the device


CASES = {
    "420": lambda: jpeg(smooth(203, 301, 3, 2)),
    "gray": lambda: jpeg(smooth(97, 131, 1, 3)),
    "progressive": lambda: jpeg(smooth(120, 77, 3, 4), cv2.IMWRITE_JPEG_PROGRESSIVE, 1),
    "orientation6": lambda: with_orientation(jpeg(smooth(64, 90, 3, 5)), 6),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_device_decode_matches_cpu(make_server, name):
    if not has_nvjpeg():
        pytest.skip("needs a GPU backend of a build with nvJPEG (EDGED_TEST_BACKEND=gpu)")
    server = make_server("--gpu-jpeg", "1")  # the flag wins over an EDGED_GPU_JPEG=0 environment
    data = CASES[name]()
    before = metrics(server.url)
    g = post(server.url, data, GAUSS)
    c = post(server.url, data, dict(GAUSS, variant="cpu"))
    assert g.status_code == 200 and c.status_code == 200, (g.text, c.text)
    a, b = png_decode(g.content), png_decode(c.content)
    assert a.shape == b.shape
    diff = int(np.abs(a.astype(int) - b.astype(int)).max())
    print("%s: device decode vs CPU decode, max diff %d (bound %d)" % (name, diff, JPEG_TOL))
    assert diff <= JPEG_TOL
    after = metrics(server.url)
    moved = sum(after[k] - before.get(k, 0) for k in after if k[1] in ("decode", "decode_refused"))
    assert moved == 1  # decoded on the device, or refused and counted


def test_many_at_once_batched(make_server):
    if not has_nvjpeg():
        pytest.skip("needs a GPU backend of a build with nvJPEG (EDGED_TEST_BACKEND=gpu)")
    server = make_server("--gpu-jpeg", "1")
    datas = [jpeg(smooth(65 + i, 97, 3, 10 + i)) for i in range(24)]
    refs = [png_decode(post(server.url, d, dict(GAUSS, variant="cpu")).content) for d in datas]
    with concurrent.futures.ThreadPoolExecutor(24) as ex:
        outs = list(ex.map(lambda d: post(server.url, d, GAUSS), datas))
    for r, ref in zip(outs, refs):
        assert r.status_code == 200, r.text
        assert int(np.abs(png_decode(r.content).astype(int) - ref.astype(int)).max()) <= JPEG_TOL


def test_jpeg_output_encoded_on_device(make_server):
    if not has_nvjpeg():
        pytest.skip("needs a GPU backend of a build with nvJPEG (EDGED_TEST_BACKEND=gpu)")
    server = make_server("--gpu-jpeg", "1")
    data = jpeg(smooth(240, 320, 3, 6))
    before = metrics(server.url)
    g = post(server.url, data, dict(GAUSS, format="jpeg", quality="90"))
    c = post(server.url, data, dict(GAUSS, variant="cpu"))
    assert g.status_code == 200 and g.headers["Content-Type"] == "image/jpeg", g.text
    a = cv2.imdecode(np.frombuffer(g.content, np.uint8), cv2.IMREAD_UNCHANGED)
    b = png_decode(c.content)
    a = cv2.cvtColor(a, cv2.COLOR_BGR2RGB) if a.ndim == 3 else a
    mse = float(np.mean((a.astype(float) - b.astype(float)) ** 2))
    psnr = 99.0 if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)
    print("device JPEG output vs CPU path PNG: PSNR %.1f dB" % psnr)
    assert psnr >= 30
    assert metrics(server.url)[("edged_jpeg_gpu_total", "encode")] == before[("edged_jpeg_gpu_total", "encode")] + 1


def test_gpu_jpeg_off(make_server):
    if not has_nvjpeg():
        pytest.skip("needs a GPU backend of a build with nvJPEG (EDGED_TEST_BACKEND=gpu)")
    s = make_server("--gpu-jpeg", "0")
    data = jpeg(smooth(50, 70, 3, 8))
    g = post(s.url, data, GAUSS)
    c = post(s.url, data, dict(GAUSS, variant="cpu"))
    assert g.status_code == 200 and c.status_code == 200
    assert metrics(s.url)[("edged_jpeg_gpu_total", "decode")] == 0


def test_truncated_jpeg_is_422_on_the_gpu_backend(make_server):
    """nvJPEG decodes a truncated scan without an error: such a file never reaches the device and
    gets the CPU decoder's 422, as on the CPU backend; the complete file, with bytes after its EOI,
    still decodes on the device."""
    if not has_nvjpeg():
        pytest.skip("needs a GPU backend of a build with nvJPEG (EDGED_TEST_BACKEND=gpu)")
    server = make_server("--gpu-jpeg", "1")
    for flags in ((), (cv2.IMWRITE_JPEG_PROGRESSIVE, 1)):
        data = jpeg(smooth(120, 160, 3, 9), *flags)
        sos = data.index(b"\xff\xda")
        for cut in (sos + 30, (sos + len(data)) // 2, len(data) - 2, len(data) - 1):
            r = post(server.url, data[:cut], GAUSS)
            assert r.status_code == 422, (flags, cut, r.status_code)
            e = r.json()["error"]
            assert e["code"] == "bad_image" and "JPEG" in e["message"], (flags, cut, e)
        before = metrics(server.url)
        r = post(server.url, data + b"\xff\x12trailing", GAUSS)
        assert r.status_code == 200, r.text
        after = metrics(server.url)
        moved = sum(after[k] - before.get(k, 0) for k in after if k[1] in ("decode", "decode_refused"))
        assert moved == 1  # on the device, or refused there and counted
