"""test_gpu_png.py — PNG decoded on the device, over HTTP: the counters exist (zero where nothing ran
on the device); on a GPU backend of a CUDA build (EDGED_TEST_BACKEND=gpu), PNG requests of every kind
the device takes answer the pixels a server with --gpu-png 0 answers (the decode is bit-exact and
the filter the same; the answer's PNG bytes may differ, as the device encodes it with its own
deflate), also many at once (batched decodes); a PNG whose zlib stream is
damaged under right CRCs is declined on the device and answers the CPU decoder's 422; an interlaced
PNG (PngSuite's basi2c08) stays on the CPU. The streams taken for the device wait in pinned memory
(edged_png_stream_total{memory="pinned"}), whose buffers are back in the pool once the answers are
out; so do the pixels of PNGs the CPU decodes for a GPU job (edged_pixel_input_total), which answer
what the device decode answers. `edged bench --codec` times the host's pass of a device decode
beside the device rows. Skipped elsewhere."""
import concurrent.futures
import io
import json
import os
import re
import struct
import subprocess
import time
import zlib

import cv2
import numpy as np
import pytest
import requests
from PIL import Image

from conftest import BACKEND, BIN, PNGSUITE, png_bytes

GAUSS = {"filter": "gaussian", "size": "5"}


def metrics(url):
    text = requests.get(url + "/metrics", timeout=10).text
    out = {}
    for m in re.finditer(r'^(edged_p(?:ng|inned|ixel)_\w+?)(?:\{(?:reason|op|memory|state)="(\w+)"\})? (\d+)', text, re.M):
        out[(m.group(1), m.group(2) or "")] = int(m.group(3))
    return out


def device_png():
    v = subprocess.run([BIN, "version"], capture_output=True, text=True, timeout=30).stdout
    return "built without CUDA" not in v and BACKEND == "gpu"


STREAM_KEYS = [("edged_png_stream_total", "pinned"), ("edged_png_stream_total", "pageable")]
PIXEL_KEYS = [("edged_pixel_input_total", "pinned"), ("edged_pixel_input_total", "pageable")]
PINNED_IN_USE = ("edged_pinned_host_bytes", "in_use")
DECODE_KEYS = [("edged_png_gpu_total", "decode"), ("edged_png_cpu_fallback_total", "decode_refused"),
               ("edged_png_cpu_fallback_total", "decode_declined"), ("edged_png_cpu_fallback_total", "decode_busy")]


def pixels(png):
    """The decoded pixels of an answer (PNG bytes), as the client reads them."""
    a = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_UNCHANGED)
    assert a is not None, png[:64]
    return a


def post(url, data, params):
    return requests.post(url + "/v1/filter", params=params, data=data, headers={"Content-Type": "image/png"},
                         timeout=60)


def noisy(h, w, ch, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, size=(h, w, ch) if ch > 1 else (h, w), dtype=np.uint8)
    return cv2.GaussianBlur(a, (5, 5), 1)


def pil_png(a, mode=None, **kw):
    buf = io.BytesIO()
    im = Image.fromarray(a) if mode is None else Image.fromarray(a).convert(mode, **kw)
    im.save(buf, format="PNG", **({"transparency": 3} if mode == "P" else {}))
    return buf.getvalue()


def damaged_stream(png):
    """The file with its Adler-32 flipped and every CRC recomputed: only an inflate can tell."""
    pos, out = 8, bytearray(png[:8])
    while pos < len(png):
        n = struct.unpack(">I", png[pos:pos + 4])[0]
        kind, data = png[pos + 4:pos + 8], bytearray(png[pos + 8:pos + 8 + n])
        if kind == b"IDAT":
            data[-1] ^= 0x5A
        out += struct.pack(">I", n) + kind + data + struct.pack(">I", zlib.crc32(kind + bytes(data)))
        pos += 12 + n
    return bytes(out)


CASES = {
    "gray": lambda: png_bytes(noisy(97, 131, 1, 1)),
    "rgb": lambda: png_bytes(noisy(203, 301, 3, 2)),
    "rgba": lambda: png_bytes(noisy(64, 67, 4, 3)),
    "gray_alpha": lambda: png_bytes(noisy(33, 45, 2, 4)),
    "rgb_adaptive": lambda: cv2.imencode(".png", noisy(120, 77, 3, 5))[1].tobytes(),
    "palette_trns": lambda: pil_png(noisy(50, 70, 3, 6), "P", palette=Image.Palette.ADAPTIVE, colors=16),
}


def test_counters_exist(server):
    before = metrics(server.url)  # the shared server: other tests may have decoded on the device
    r = post(server.url, png_bytes(noisy(31, 45, 3, 1)), dict(GAUSS, variant="cpu"))
    assert r.status_code == 200, r.text
    m = metrics(server.url)
    for key in DECODE_KEYS + STREAM_KEYS + PIXEL_KEYS + [PINNED_IN_USE, ("edged_pinned_host_bytes", "free"),
                                            ("edged_pinned_host_refused_total", "")]:
        assert key in m, key
    # variant cpu never decodes on the device
    assert m[("edged_png_gpu_total", "decode")] == before[("edged_png_gpu_total", "decode")]


@pytest.mark.parametrize("name", sorted(CASES))
def test_device_decode_equals_cpu_decode(make_server, name):
    if not device_png():
        pytest.skip("needs a GPU backend of a CUDA build (EDGED_TEST_BACKEND=gpu)")
    on, off = make_server("--gpu-png", "1"), make_server("--gpu-png", "0")
    data = CASES[name]()
    before = metrics(on.url)
    g, c = post(on.url, data, GAUSS), post(off.url, data, GAUSS)
    assert g.status_code == 200 and c.status_code == 200, (g.text, c.text)
    assert np.array_equal(pixels(g.content), pixels(c.content))
    after = metrics(on.url)
    moved = sum(after[k] - before.get(k, 0) for k in DECODE_KEYS)
    assert moved == 1  # decoded on the device, or refused or declined there and counted
    # its stream waited in pinned memory for the upload, not in the worker's staging
    assert [after[k] - before[k] for k in STREAM_KEYS] == [1, 0]
    assert metrics(off.url)[("edged_png_gpu_total", "decode")] == 0


def test_many_at_once_batched(make_server):
    if not device_png():
        pytest.skip("needs a GPU backend of a CUDA build (EDGED_TEST_BACKEND=gpu)")
    on, off = make_server("--gpu-png", "1"), make_server("--gpu-png", "0")
    datas = [png_bytes(noisy(65 + i, 97, 3, 10 + i)) for i in range(24)]
    refs = [pixels(post(off.url, d, GAUSS).content) for d in datas]
    with concurrent.futures.ThreadPoolExecutor(24) as ex:
        outs = list(ex.map(lambda d: post(on.url, d, GAUSS), datas))
    for r, ref in zip(outs, refs):
        assert r.status_code == 200, r.text
        assert np.array_equal(pixels(r.content), ref)
    print("PNG counters after 24 at once:", metrics(on.url))
    # every pinned buffer is back once the jobs are freed (just after their answers)
    deadline = time.monotonic() + 5
    while metrics(on.url)[PINNED_IN_USE] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert metrics(on.url)[PINNED_IN_USE] == 0


def test_cpu_decoded_pixels_wait_pinned(make_server):
    """With --gpu-png 0 the request threads decode every PNG and move the pixels into the pinned pool,
    from which the device uploads them: 24 at once answer what the device decode answers (which
    test_device_decode_equals_cpu_decode holds to the CPU's pixels), each counted pinned, and every
    buffer is back once the answers are out."""
    if not device_png():
        pytest.skip("needs a GPU backend of a CUDA build (EDGED_TEST_BACKEND=gpu)")
    on, off = make_server("--gpu-png", "1"), make_server("--gpu-png", "0")
    datas = [png_bytes(noisy(65 + i, 97 + 2 * i, 1 + i % 4, 40 + i)) for i in range(24)]
    refs = [pixels(post(on.url, d, GAUSS).content) for d in datas]
    before = metrics(off.url)
    with concurrent.futures.ThreadPoolExecutor(24) as ex:
        outs = list(ex.map(lambda d: post(off.url, d, GAUSS), datas))
    for r, ref in zip(outs, refs):
        assert r.status_code == 200, r.text
        assert np.array_equal(pixels(r.content), ref)
    after = metrics(off.url)
    assert [after[k] - before[k] for k in PIXEL_KEYS] == [24, 0]
    deadline = time.monotonic() + 5
    while metrics(off.url)[PINNED_IN_USE] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert metrics(off.url)[PINNED_IN_USE] == 0


def test_damaged_stream_gets_the_cpu_verdict(make_server):
    if not device_png():
        pytest.skip("needs a GPU backend of a CUDA build (EDGED_TEST_BACKEND=gpu)")
    on, off = make_server("--gpu-png", "1"), make_server("--gpu-png", "0")
    data = damaged_stream(png_bytes(noisy(40, 50, 3, 7)))
    g, c = post(on.url, data, GAUSS), post(off.url, data, GAUSS)
    assert g.status_code == c.status_code == 422, (g.text, c.text)
    ge, ce = g.json()["error"], c.json()["error"]
    assert (ge["code"], ge["message"]) == (ce["code"], ce["message"])
    m = metrics(on.url)
    assert m[("edged_png_cpu_fallback_total", "decode_declined")] == 1
    assert m[("edged_png_gpu_total", "decode")] == 0


def test_interlaced_stays_on_the_cpu(make_server):
    if not device_png():
        pytest.skip("needs a GPU backend of a CUDA build (EDGED_TEST_BACKEND=gpu)")
    path = os.path.join(PNGSUITE, "basi2c08.png")  # Adam7 RGB
    if not os.path.exists(path):
        pytest.skip("PngSuite not found at %s (EDGED_PNGSUITE)" % PNGSUITE)
    on = make_server("--gpu-png", "1")
    data = open(path, "rb").read()
    assert data[28] == 1
    r = post(on.url, data, GAUSS)
    assert r.status_code == 200, r.text
    m = metrics(on.url)
    assert sum(m[k] for k in DECODE_KEYS) == 0  # never offered to the device


def idat_length(png):
    """The zlib stream's length: the IDAT chunks' data, joined."""
    pos, n = 8, 0
    while pos < len(png):
        size = struct.unpack(">I", png[pos:pos + 4])[0]
        n += size if png[pos + 4:pos + 8] == b"IDAT" else 0
        pos += 12 + size
    return n


def test_bench_codec_device_rows(tmp_path):
    """`bench --codec` on a PNG the device takes: first the host's pass of a device decode
    (gpu-png-host: the CRCs checked and the stream copied, its bytes the stream's length, no
    encode), then the device rows, one image and batches, each with its decode and encode."""
    if not device_png():
        pytest.skip("needs a GPU backend of a CUDA build (EDGED_TEST_BACKEND=gpu)")
    path = tmp_path / "in.png"
    path.write_bytes(png_bytes(noisy(300, 257, 3, 7)))
    p = subprocess.run([BIN, "bench", "--codec", "--json", "--reps", "1", str(path)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    rows = {r["codec"]: r for r in map(json.loads, p.stdout.splitlines())}
    host = rows["gpu-png-host"]
    assert host["decode_ms"] > 0 and host["encode_ms"] == 0
    assert host["bytes"] == idat_length(path.read_bytes())
    names = [name for name in rows if name.startswith("gpu-png")]
    assert names == ["gpu-png-host", "gpu-png"] + ["gpu-png-batch%d" % b for b in (4, 8, 16, 32)], names
    assert all(rows[n]["decode_ms"] > 0 and rows[n]["encode_ms"] > 0 for n in names[1:])
