"""test_input.py — docs/reliability.md, B. Multipart, C. JSON parameters, D. PNG input and
E. Output: hostile and broken uploads get the documented 4xx, never a 5xx or a partial
image; PNG bombs are decided from IHDR or skipped unbuffered, with memory measured; the same
input gives the same bytes, in any delivery and under concurrency."""
import concurrent.futures as cf
import glob
import json
import os
import struct
import time
import zlib

import numpy as np
import pytest
import requests

from conftest import PNGSUITE, png_bytes, png_decode, random_image
from helpers import (SIG, assert_balanced, chunk, error_of, exchange, ihdr, join_chunks, metrics, multipart,
                     post_head, proc_status, sanitized, slowdown, solid_png, split_chunks,
                     total)

K = slowdown()  # timing limits scale with it (sanitizers, valgrind)

IDENTITY = {"filter": "custom", "taps": [[1]], "color": "rgb", "variant": "cpu_serial"}


@pytest.fixture(scope="module")
def small():
    return png_bytes(random_image(40, 56, 3, seed=11))


def send(url, body, ctype, query="", timeout=30):
    return requests.post(url + "/v1/filter" + query, data=body, headers={"Content-Type": ctype}, timeout=timeout)


def upload(url, png, params=None, timeout=30, **kw):
    files = {"image": ("x.png", png, "image/png")}
    if params is not None:
        files["params"] = (None, params if isinstance(params, str) else json.dumps(params))
    return requests.post(url + "/v1/filter", files=files, timeout=timeout, **kw)


# ---- B. multipart ----------------------------------------------------------------------------

def test_multipart_boundaries_and_parts(server, small):
    body, ctype = multipart([("image", small, "")])
    bad_types = ["multipart/form-data", "multipart/form-data; boundary=", "multipart/form-data; boundary=\"\"",
                 "multipart/form-data; boundary=" + "b" * 71, "multipart/form-data; boundary=other",
                 "multipart/form-data; boundary=\"relB0undary"]
    for c in bad_types:
        r = send(server.url, body, c)
        assert r.status_code == 400 and error_of(r)["code"] == "bad_multipart", (c, r.text)
    cases = {
        "no image part": multipart([("params", b"{}", "")]),
        "two image parts": multipart([("image", small, ""), ("image", small, "")]),
        "two params parts": multipart([("image", small, ""), ("params", b"{}", ""), ("params", b"{}", "")]),
        "part without a name": (b"--relB0undary\r\nContent-Disposition: form-data\r\n\r\nx\r\n--relB0undary--\r\n",
                                ctype),
        "no parts": (b"--relB0undary--\r\n", ctype),
        "headers never end": (b"--relB0undary\r\nContent-Disposition: form-data; name=\"image\"\r\n" + small,
                              ctype),
        "33 parts": multipart([("image", small, "")] + [("x%d" % i, b"1", "") for i in range(32)]),
    }
    for what, (b, c) in cases.items():
        r = send(server.url, b, c)
        assert r.status_code == 400 and error_of(r)["code"] == "bad_multipart", (what, r.text)


def test_truncated_multipart_never_processed(server, small):
    body, ctype = multipart([("image", small, "; filename=\"x.png\""), ("params", b'{"filter":"sobel"}', "")])
    close = body.rindex(b"\r\n--relB0undary--")
    rng = np.random.default_rng(17)
    cuts = sorted(set(rng.integers(0, close, 40).tolist()) | {0, 1, close - 1, close})
    before = total(metrics(server.url), "edged_queue_wait_seconds_count")
    for n in cuts:
        r = send(server.url, body[:n], ctype)
        assert r.status_code == 400, (n, r.status_code, r.text)
        assert error_of(r)["code"] == "bad_multipart", (n, r.text)
    assert total(metrics(server.url), "edged_queue_wait_seconds_count") == before  # nothing reached the queue
    assert send(server.url, body, ctype).status_code == 200


def test_split_delivery_identical(server, small):
    """Content-Length body in 1-byte writes, in random pieces, and chunked: the same bytes back."""
    body, ctype = multipart([("image", small, ""), ("params", b'{"filter":"gaussian","size":5}', "")])
    whole = send(server.url, body, ctype)
    assert whole.status_code == 200
    head = post_head("/v1/filter", ctype, len(body))
    one_byte = [head] + [body[i:i + 1] for i in range(len(body))]
    rng = np.random.default_rng(23)
    pieces, i = [head], 0
    while i < len(body):
        n = int(rng.integers(1, 700))
        pieces.append(body[i:i + n])
        i += n
    chunked = [post_head("/v1/filter", ctype, None, "Transfer-Encoding: chunked\r\n")]
    for p in pieces[1:]:
        chunked.append(b"%x\r\n%s\r\n" % (len(p), p))
    chunked.append(b"0\r\n\r\n")
    for how in (one_byte, pieces, chunked):
        status, _, got = exchange(server.port, None, how)
        assert status == 200 and got == whole.content


def test_image_sniffed_not_trusted(server, small):
    for data in (b"GIF89a" + b"\0" * 64, b"", SIG[:7], b"BM" + b"\0" * 64, b"<svg/>"):
        r = upload(server.url, data)
        assert r.status_code == 415 and error_of(r)["code"] == "unsupported_media_type", data[:8]
        r = send(server.url, data, "image/png")
        assert r.status_code == 415, data[:8]
    # a PNG under a JPEG name and part type is still a PNG
    body, ctype = multipart([("image", small, "; filename=\"photo.jpg\"\r\nContent-Type: image/jpeg")])
    assert send(server.url, body, ctype).status_code == 200


# ---- C. JSON parameters ----------------------------------------------------------------------

BAD_PARAMS = [
    ('{"filter":"edge"', "params"), ('{"filter":"edge",}', "params"), ('\ufeff{"filter":"edge"}', "byte-order"),
    ('', "params"), ('   ', "params"), ('null', "object"), ('[]', "object"), ('"edge"', "object"),
    ('{"filter":"edge"}{}', "params"), ('{"taps":[[[[[1]]]]]}', "deeper"), ('[' * 100000, "deeper"),
    ('{"filter":"edge","filter":"sobel"}', "duplicate"), ('{"Filter":"edge"}', "Filter"),
    ('{"treshold":5}', "treshold"), ('{"threshold":"5"}', "threshold"), ('{"threshold":true}', "threshold"),
    ('{"threshold":1e999}', "threshold"), ('{"threshold":-1e999}', "threshold"), ('{"threshold":NaN}', "params"),
    ('{"threshold":-1}', "threshold"), ('{"threshold":1000001}', "threshold"),
    ('{"filter":"gaussian","size":4}', "size"), ('{"filter":"gaussian","size":65}', "size"),
    ('{"filter":"gaussian","size":1e20}', "size"), ('{"filter":"gaussian","size":123456789012345678901}', "size"),
    ('{"filter":"gaussian","size":5.5}', "size"), ('{"filter":"gaussian","size":"5"}', "size"),
    ('{"filter":"gaussian","sigma":0}', "sigma"), ('{"filter":"gaussian","sigma":-2}', "sigma"),
    ('{"png_level":1.5}', "png_level"), ('{"png_level":10}', "png_level"), ('{"bit_depth":2}', "bit_depth"),
    ('{"variant":"tiled","block":12}', "block"), ('{"border":"wrap"}', "border"), ('{"color":1}', "color"),
    ('{"output":"jpeg"}', "output"), ('{"filter":"nope"}', "filter"), ('{"filter":null}', "filter"),
    ('{"filter":"custom"}', "taps"), ('{"filter":"custom","taps":[[1,2]]}', "taps"),
    ('{"filter":"custom","taps":[[1],[2,3],[4]]}', "taps"), ('{"filter":"custom","taps":[[1e999]]}', "taps"),
    ('{"filter":"custom","taps":[["1"]]}', "taps"), ('{"filter":"custom","taps":[[1]],"normalize":1}', "normalize"),
    ('{"filter":"sobel","threshold":3}', "threshold"), ('{"filter":"box","sigma":1}', "sigma"),
    ('{"variants":["cpu"]}', "variants"), ('{"filter":"sobel","post":"threshold"}', "post"),
]


def test_invalid_params_name_the_field(server, small):
    for text, word in BAD_PARAMS:
        r = upload(server.url, small, text)
        assert r.status_code == 400, (text[:60], r.status_code, r.text[:200])
        e = error_of(r)
        assert e["code"] == "invalid_parameter" and word in e["message"], (text[:60], e["message"])


def test_params_bytes_and_size(server, small):
    # a NUL byte, invalid UTF-8 and a params text over 256 KiB
    for raw_params, word in ((b'{"filter":"ed\0ge"}', "NUL"), (b'{"filter":"\xff\xfe"}', "filter"),
                             (b'{"filter":"edge","x":"' + b"a" * (256 * 1024) + b'"}', "exceeds")):
        body, ctype = multipart([("image", small, ""), ("params", raw_params, "")])
        r = send(server.url, body, ctype)
        assert r.status_code == 400 and word in error_of(r)["message"], (word, r.text[:200])
    for q in ("?size=3&filter=gaussian&size=4", "?threshold=1e999", "?png_level=%00", "?filter=%00edge",
              "?taps=[[1]]&filter=edge", "?variant=", "?unknown=1"):
        r = send(server.url, small, "image/png", q)
        assert r.status_code == 400 and error_of(r)["code"] == "invalid_parameter", (q, r.text)


# ---- D. PNG input ----------------------------------------------------------------------------

def trns_alpha(path, gray):
    """Alpha from the tRNS chunk of a gray PNG (the documented tRNS -> alpha conversion)."""
    with open(path, "rb") as f:
        chunks = dict(split_chunks(f.read()))
    depth = chunks[b"IHDR"][8]
    key = struct.unpack(">H", chunks[b"tRNS"][:2])[0]
    sample = gray.astype(np.int64) * ((1 << depth) - 1) // 255 if depth < 16 else None
    if depth == 16:  # the 8-bit sample is round(v/257): compare in 16 bits through the file itself
        import cv2
        sample = cv2.imread(path, cv2.IMREAD_UNCHANGED).astype(np.int64)
    return np.where(sample == key, 0, 255).astype(np.uint8)


@pytest.mark.skipif(not os.path.isdir(PNGSUITE), reason="../shared/pngsuite not present")
def test_pngsuite_valid_pixels_vs_opencv(server):
    """Every valid PngSuite file: 200, and the identity filter's output equals an independent
    decode (OpenCV) after the documented conversion: 16 -> 8 bits by round(v/257), palette ->
    RGB, low-bit gray scaled to 0..255, tRNS -> alpha."""
    import cv2
    files = sorted(f for f in glob.glob(os.path.join(PNGSUITE, "*.png")) if not os.path.basename(f).startswith("x"))
    assert len(files) > 150

    def one(path):
        with open(path, "rb") as f:
            r = upload(server.url, f.read(), IDENTITY)
        assert r.status_code == 200, (path, r.text)
        got = png_decode(r.content)
        ref = cv2.imread(path, cv2.IMREAD_UNCHANGED)
        if ref.ndim == 3:
            ref = ref[..., [2, 1, 0, 3][:ref.shape[2]]]
        if ref.dtype != np.uint8:
            ref = (ref.astype(np.float64) / 257.0).round().astype(np.uint8)
        if ref.ndim == 2 and got.ndim == 3:  # gray + tRNS: we give gray+alpha, OpenCV ignores tRNS
            assert got.shape[2] == 4 and np.array_equal(got[..., 0], ref), path
            assert np.array_equal(got[..., 3], trns_alpha(path, ref)), path
            return
        assert got.shape == ref.shape and np.array_equal(got, ref), path

    with cf.ThreadPoolExecutor(4) as ex:
        list(ex.map(one, files))


@pytest.mark.skipif(not os.path.isdir(PNGSUITE), reason="../shared/pngsuite not present")
def test_pngsuite_corrupt_fast(server):
    for path in sorted(glob.glob(os.path.join(PNGSUITE, "x*.png"))):
        with open(path, "rb") as f:
            data = f.read()
        t0 = time.time()
        r = upload(server.url, data)
        assert r.status_code == 422 and error_of(r)["code"] == "bad_png", (path, r.text)
        assert time.time() - t0 < 0.5 * K, path


def test_truncated_and_damaged_png_never_partial(server):
    png = png_bytes(random_image(64, 64, 3, seed=5), level=0)  # stored: IDAT spans most of the file
    chunks = split_chunks(png)
    idat_at = png.index(b"IDAT")
    no_iend = join_chunks([c for c in chunks if c[0] != b"IEND"])
    bad_crc = bytearray(png)
    bad_crc[idat_at + 200] ^= 1
    cases = {"no IEND": no_iend, "IDAT CRC": bytes(bad_crc), "IHDR only": SIG + chunk(b"IHDR", chunks[0][1])}
    for n in (idat_at + 4, idat_at + 100, len(png) // 2, len(png) - 30, len(png) - 13, len(png) - 1):
        cases["cut at %d" % n] = png[:n]
    split = [(b"IDAT", chunks[1][1][:100]), (b"IDAT", chunks[1][1][100:len(chunks[1][1]) // 2])]
    cases["IDAT data short"] = join_chunks([chunks[0]] + split + [(b"IEND", b"")])
    for what, data in cases.items():
        r = upload(server.url, data)
        assert r.status_code == 422 and error_of(r)["code"] == "bad_png", (what, r.status_code, r.text)


def measure(s, fn):
    """Runs fn against server s; returns (result, growth of the peak RSS in kB)."""
    hwm0 = proc_status(s.proc.pid, "VmHWM")
    out = fn()
    return out, proc_status(s.proc.pid, "VmHWM") - hwm0


@pytest.fixture(scope="module")
def huge_solid():
    return solid_png(20000, 20000, color=2)  # 1.2 GB of pixels in ~1.2 MB


def test_huge_dimensions_refused_from_ihdr(make_server, huge_solid):
    s = make_server("--threads", "1")
    upload(s.url, png_bytes(random_image(16, 16, 1, 1)))  # warm: first-use allocations out of the way
    r, grew = measure(s, lambda: upload(s.url, huge_solid))
    assert r.status_code == 422 and error_of(r)["code"] == "image_too_large", r.text
    assert "20000x20000" in error_of(r)["message"]
    if not sanitized():
        assert grew < 8 * 1024, "peak RSS grew %d kB for a refused image" % grew
    # a side over --max-side, with pixels under the cap, from IHDR alone (no IDAT at all)
    r = upload(s.url, SIG + ihdr(40000, 1) + chunk(b"IEND", b""))
    assert r.status_code == 422 and "max-side" in error_of(r)["message"]
    # 65535 x 65535 and 0 x 5
    assert upload(s.url, SIG + ihdr(65535, 65535) + chunk(b"IEND", b"")).status_code == 422
    assert error_of(upload(s.url, SIG + ihdr(0, 5) + chunk(b"IEND", b"")))["code"] == "bad_png"


def text_bomb():
    """A zTXt chunk that inflates to 1 GiB, an iCCP bomb, 20000 tEXt and 20000 private chunks."""
    z = zlib.compressobj(9)
    zeros = b"\0" * (1 << 20)
    data = b"".join(z.compress(zeros) for _ in range(1024)) + z.flush()
    extra = chunk(b"zTXt", b"Comment\0\0" + data) + chunk(b"iCCP", b"icc\0\0" + data)
    extra += b"".join(chunk(b"tEXt", b"k%d\0value" % i) for i in range(20000))
    extra += b"".join(chunk(b"prIv", b"x" * 16) for _ in range(20000))
    return solid_png(64, 48, color=2, value=90, extra=extra)


def test_text_bombs_bounded_memory(make_server):
    s = make_server("--threads", "1")
    bomb = text_bomb()
    assert len(bomb) < 4 << 20
    upload(s.url, png_bytes(random_image(16, 16, 1, 1)))
    t0 = time.time()
    r, grew = measure(s, lambda: upload(s.url, bomb, IDENTITY))
    assert r.status_code == 200, r.text
    assert time.time() - t0 < 10 * K
    got = png_decode(r.content)
    assert got.shape == (48, 64, 3) and (got == 90).all()
    if not sanitized():
        # the body itself (~3 MB) is buffered once; nothing of the 2 GiB the bombs inflate to
        assert grew < 16 * 1024, "peak RSS grew %d kB" % grew
    # many tiny IDAT chunks
    raw = b"".join(b"\x00" + bytes([7]) * 64 for _ in range(64))
    comp = zlib.compress(raw, 9)
    many = SIG + ihdr(64, 64) + b"".join(chunk(b"IDAT", comp[i:i + 1]) for i in range(len(comp))) + \
        chunk(b"IEND", b"")
    r = upload(s.url, many, IDENTITY)
    assert r.status_code == 200 and (png_decode(r.content) == 7).all()


def fix_crcs(data):
    """The same bytes with every whole chunk's CRC recomputed (so that a flip reaches the decoder)."""
    b, pos = bytearray(data), 8
    while pos + 12 <= len(b):
        n = struct.unpack(">I", bytes(b[pos:pos + 4]))[0]
        if n > len(b) - pos - 12:
            break
        b[pos + 8 + n:pos + 12 + n] = struct.pack(">I", zlib.crc32(bytes(b[pos + 4:pos + 8 + n])))
        pos += 12 + n
    return bytes(b)


@pytest.mark.skipif(not os.path.isdir(PNGSUITE), reason="../shared/pngsuite not present")
def test_bit_flipped_pngsuite_only_200_or_422(server):
    """Seeded random single-bit flips anywhere in valid PngSuite files, as they are (the CRCs
    catch them) and with the CRCs recomputed (the decoder sees them): 200 or 422, never a 5xx or
    a hang."""
    rng = np.random.default_rng(2026)
    print("seed 2026")
    files = sorted(f for f in glob.glob(os.path.join(PNGSUITE, "*.png")) if not os.path.basename(f).startswith("x"))
    jobs = []
    for path in files:
        with open(path, "rb") as f:
            data = f.read()
        for k in range(3):
            b = bytearray(data)
            at = int(rng.integers(0, len(b)))
            b[at] ^= 1 << int(rng.integers(0, 8))
            jobs.append((os.path.basename(path), at, fix_crcs(bytes(b)) if k else bytes(b)))

    def one(job):
        name, at, data = job
        t0 = time.time()
        r = upload(server.url, data, timeout=20 * K)
        return name, at, r.status_code, time.time() - t0, r.text[:200]

    with cf.ThreadPoolExecutor(4) as ex:
        results = list(ex.map(one, jobs))
    for name, at, status, took, text in results:
        assert status in (200, 422), (name, at, status, text)
        assert took < 5.0 * K, (name, at, took)
    assert {r[2] for r in results} == {200, 422}
    assert_balanced(server.url)


# ---- E. output -------------------------------------------------------------------------------

ACCEPT = [
    (None, "image/png"), ("image/png", "image/png"), ("application/json", "application/json"),
    ("*/*", "image/png"), ("application/*", "application/json"), ("image/*", "image/png"),
    ("application/json;q=0.9, image/png", "image/png"), ("image/png;q=0.1, application/json", "application/json"),
    ("image/*;q=0.5, application/json;q=0.4", "image/png"), ("text/html", "image/png"),
    ("application/json;q=0", "image/png"), ("*/*;q=0.1, application/json;q=0.2", "application/json"),
]


def test_accept_and_output_negotiation(server, small):
    for accept, want in ACCEPT:
        headers = {"Accept": accept} if accept else {}
        r = upload(server.url, small, headers=headers)
        assert r.status_code == 200 and r.headers["Content-Type"] == want, (accept, r.headers["Content-Type"])
        if want == "image/png":
            assert r.content[:8] == SIG
        else:
            assert r.json()["width"] == 56
    for output, want in (("png", "image/png"), ("json", "application/json")):
        for accept in ("application/json", "image/png"):
            r = upload(server.url, small, {"output": output}, headers={"Accept": accept})
            assert r.headers["Content-Type"] == want, (output, accept)
    # errors are JSON whatever the client accepts
    r = upload(server.url, small, {"nope": 1}, headers={"Accept": "image/png"})
    assert r.status_code == 400 and r.headers["Content-Type"].startswith("application/json")


def test_byte_identical_under_concurrency(server):
    pngs = [png_bytes(random_image(96, 80, 3, seed=40 + i)) for i in range(3)]
    params = [{"filter": "sobel"}, {"filter": "gaussian", "size": 9, "border": "reflect"}, {"filter": "edge"}]
    serial = {(i, j): upload(server.url, pngs[i], params[j]).content for i in range(3) for j in range(3)}
    jobs = [(i, j) for i in range(3) for j in range(3)] * 4

    def one(ij):
        return ij, upload(server.url, pngs[ij[0]], params[ij[1]]).content

    with cf.ThreadPoolExecutor(8) as ex:
        for ij, body in ex.map(one, jobs):
            assert body == serial[ij], ij
    assert len(set(serial.values())) == 9
