"""test_api.py — integration tests of `edged serve` over real HTTP on a loopback port: every
endpoint, every error status with its code, limits, concurrency, queue full, deadline, drain,
metrics. Backend from EDGED_TEST_BACKEND (cpu by default; tests/gpu_host/gpu_service.sh runs them with gpu on the GPU host)."""
import concurrent.futures as cf
import glob
import json
import os
import re
import socket
import subprocess
import threading
import time

import numpy as np
import pytest
import requests

from conftest import BACKEND, BIN, OPENAPI, PNGSUITE, ROOT, free_port, oracle, png_bytes, png_decode, random_image

FILTERS = {
    "edge": {"filter": "edge", "threshold": 8},
    "gaussian5": {"filter": "gaussian5"},
    "gaussian": {"filter": "gaussian", "size": 7, "sigma": 1.5, "border": "reflect"},
    "laplacian3": {"filter": "laplacian3"},
    "laplacian8": {"filter": "laplacian8", "border": "replicate"},
    "sobel_x": {"filter": "sobel_x"},
    "sobel_y": {"filter": "sobel_y", "post": "offset"},
    "sobel": {"filter": "sobel"},
    "scharr_x": {"filter": "scharr_x"},
    "scharr_y": {"filter": "scharr_y", "post": "offset"},
    "scharr": {"filter": "scharr", "border": "replicate"},
    "prewitt_x": {"filter": "prewitt_x", "border": "zero"},
    "prewitt_y": {"filter": "prewitt_y"},
    "prewitt": {"filter": "prewitt", "color": "rgb"},
    "sharpen": {"filter": "sharpen"},
    "emboss": {"filter": "emboss", "color": "gray"},
    "box": {"filter": "box", "size": 5},
    "custom": {"filter": "custom", "taps": [[0, -1, 0], [-1, 5, -1], [0, -1, 0]]},
    "canny": {"filter": "canny", "low": 30, "high": 90.5, "aperture": 5, "l2gradient": True},
    "threshold": {"filter": "threshold", "value": 100},
}
PIPELINE = [{"filter": "gaussian", "size": 7}, {"filter": "sobel"}, {"filter": "threshold", "value": 40}]
# A job of ~0.3-0.5 s on one core of the CI machine: the serial reference with a 63x63 kernel.
SLOW = {"filter": "gaussian", "size": 63, "color": "gray", "variant": "cpu_serial"}
TIMING_KEYS = {"queue", "decode", "upload", "kernel", "download", "encode", "total"}


@pytest.fixture(scope="module")
def image():
    return png_bytes(random_image(72, 96, 3, seed=7))


@pytest.fixture(scope="module")
def slow_png():
    return png_bytes(random_image(384, 384, 3, seed=3))


def post(url, png, params=None, form=None, query=None, headers=None, path="/v1/filter", timeout=120):
    files = {"image": ("x.png", png, "image/png")}
    if params is not None:
        files["params"] = (None, params if isinstance(params, str) else json.dumps(params))
    return requests.post(url + path, files=files, data=form or {}, params=query or {}, headers=headers or {},
                         timeout=timeout)


def assert_error(r, status, code, words=()):
    assert r.status_code == status, r.text
    assert r.headers["Content-Type"].startswith("application/json")
    err = r.json()["error"]
    assert err["code"] == code, err
    assert err["request_id"] == r.headers["X-Request-ID"]
    for w in words:
        assert w in err["message"], err
    return err


def raw(port, data, chunks=(), pause=0.0, timeout=10):
    """Sends data (and then chunks) on a fresh connection; returns (status, headers, body)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
        for c in chunks:
            try:
                s.sendall(c)
            except OSError:
                break
            time.sleep(pause)
        buf = b""
        while True:
            try:
                got = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not got:
                break
            buf += got
            head, _, body = buf.partition(b"\r\n\r\n")
            m = re.search(rb"content-length: *(\d+)", head, re.I)
            if m and len(body) >= int(m.group(1)):
                break
    finally:
        s.close()
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1]) if lines and lines[0].startswith("HTTP/") else 0
    hdrs = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    return status, hdrs, body, lines[0]


def metrics(url):
    """Samples of /metrics as {(name, frozenset(labels)): value}, checking every line parses."""
    text = requests.get(url + "/metrics", timeout=10).text
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            assert re.match(r"# (HELP|TYPE) (edged|process)_\w+ ", line) or not line, line
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? (\S+)$', line)
        assert m, "unparsable metrics line: %r" % line
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        samples[(m.group(1), labels)] = float(m.group(4))
    return samples


def total(samples, name):
    return sum(v for (n, _), v in samples.items() if n == name)


# ---- GET endpoints ------------------------------------------------------------------------------

def test_health_ready_version(server):
    r = requests.get(server.url + "/healthz")
    assert r.status_code == 200 and r.json()["status"] == "ok"
    assert re.fullmatch(r"[0-9a-f]{16}", r.headers["X-Request-ID"])
    assert "total;dur=" in r.headers["Server-Timing"]
    r = requests.get(server.url + "/readyz")
    assert r.status_code == 200 and r.json()["backend"] == BACKEND
    v = requests.get(server.url + "/version").json()
    assert v["backend"] == BACKEND and v["version"] and v["limits"]["max_pixels"] == 50000000
    assert v["limits"]["max_side"] == 32768 and v["limits"]["max_body_bytes"] == 64 << 20
    if BACKEND == "gpu":
        assert re.fullmatch(r"\d+\.\d+", v["compute_capability"]) and v["driver_version"] > 0
    else:
        assert v["compute_capability"] is None
    assert requests.head(server.url + "/healthz").status_code == 200


def test_request_id_echo(server):
    r = requests.get(server.url + "/healthz", headers={"X-Request-ID": "client-42.a:b_c"})
    assert r.headers["X-Request-ID"] == "client-42.a:b_c"
    for bad in ("has space", "x" * 65, "semi;colon"):
        r = requests.get(server.url + "/healthz", headers={"X-Request-ID": bad})
        assert re.fullmatch(r"[0-9a-f]{16}", r.headers["X-Request-ID"]), bad


def test_catalogues(server):
    f = requests.get(server.url + "/v1/filters").json()
    assert [x["name"] for x in f["filters"]] == list(FILTERS)
    edge = f["filters"][0]
    assert "threshold" in edge["params"] and edge["color"] == "gray" and edge["post"] == "threshold"
    v = requests.get(server.url + "/v1/variants").json()
    by = {x["name"]: x for x in v["variants"]}
    assert by["cpu_serial"]["available"] and by["cpu"]["available"] and by["auto"]["kind"] == "auto"
    assert by["naive"]["kind"] == "gpu" and by["naive"]["available"] == (BACKEND == "gpu")
    assert by["naive"]["block_sides"] == [8, 16, 24, 32]
    assert v["limits"]["max_kernel_side"] == 63


def test_openapi(server):
    r = requests.get(server.url + "/openapi.yaml")
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("application/yaml")
    assert r.text.startswith("openapi: 3") and "/v1/filter" in r.text and "/v1/compare" in r.text



def test_embedded_files_from_any_directory(tmp_path):
    """openapi.yaml and the web page come from the binary: started in /tmp (no api/ or server/http/web
    beside it), it serves them byte for byte, and the page shows the version /version gives."""
    port = free_port()
    url = "http://127.0.0.1:%d" % port
    with open(tmp_path / "edged.log", "wb") as log:
        proc = subprocess.Popen([os.path.abspath(BIN), "serve", "--host", "127.0.0.1", "--port", str(port),
                                 "--backend", BACKEND], cwd="/tmp", stdout=subprocess.DEVNULL, stderr=log)
    try:
        until = time.time() + 20
        while time.time() < until and proc.poll() is None:
            try:
                if requests.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except requests.ConnectionError:
                time.sleep(0.05)
        for path, file in (("/openapi.yaml", OPENAPI), ("/", "server/http/web/index.html"),
                           ("/web/app.js", "server/http/web/app.js")):
            r = requests.get(url + path, timeout=10)
            with open(os.path.join(ROOT, file), "rb") as f:
                want = f.read()
            assert r.status_code == 200 and r.content == want, (path, r.status_code, r.text[:200])
        assert requests.get(url + "/openapi.yaml").headers["Content-Type"].startswith("application/yaml")
        assert 'href="openapi.yaml"' in requests.get(url + "/").text  # the footer link resolves to it
        v = requests.get(url + "/version").json()["version"]
        assert re.fullmatch(r"\d+\.\d+\.\d+\S*", v), v
        page = requests.get(url + "/web/app.js").text
        assert "getJson('version')" in page and "v.version" in page  # the page shows /version's string
    finally:
        proc.terminate()
        assert proc.wait(30) == 0, (tmp_path / "edged.log").read_text()

# ---- POST /v1/filter: success paths ---------------------------------------------------------------

@pytest.mark.parametrize("name", list(FILTERS))
def test_every_filter_matches_cli(server, image, name):
    params = FILTERS[name]
    r = post(server.url, image, params)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "image/png"
    variant = r.headers["X-Edged-Variant"]
    got, want = png_decode(r.content), oracle(image, params, variant)
    assert got.shape == want.shape and got.shape[:2] == (72, 96)
    assert np.array_equal(got, want), "%s: %d pixels differ" % (name, int((got != want).sum()))


def box3_gray_reflect(y):
    """3x3 mean of a float32 plane with reflect-101 borders, as edged's box 3 (taps (1/3)*(1/3))."""
    p = np.pad(y, 1, mode="reflect")
    t, acc = np.float32(1.0 / 3.0) * np.float32(1.0 / 3.0), np.zeros_like(y)
    for i in range(3):
        for j in range(3):
            acc = acc + t * p[i:i + y.shape[0], j:j + y.shape[1]]
    return acc


@pytest.mark.parametrize("variant", ["auto", "cpu_serial", "cpu"])
def test_pipeline_matches_cli_and_numpy(server, variant):
    """ops: the API's answer is the CLI's (--ops); a 2-step pipeline box 3 -> threshold on a gray
    image is the numpy composition in float (the mean is never rounded before the cut), except
    where the mean is within 1e-3 of the cut; the 3-step gaussian -> sobel -> threshold map is
    binary and one-channel."""
    gray = random_image(40, 56, 1, seed=11)
    png = png_bytes(gray)
    params = {"ops": [{"filter": "box", "size": 3}, {"filter": "threshold", "value": 100.2}], "variant": variant}
    r = post(server.url, png, params)
    assert r.status_code == 200, r.text
    got = png_decode(r.content)
    assert np.array_equal(got, oracle(png, params, r.headers["X-Edged-Variant"]))
    mean = box3_gray_reflect(gray.astype(np.float32).reshape(gray.shape[:2]))
    want = np.where(mean >= np.float32(100.2), 255, 0).astype(np.uint8)
    near = np.abs(mean - np.float32(100.2)) < 1e-3
    assert np.array_equal(got.reshape(want.shape)[~near], want[~near])
    rgb = png_bytes(random_image(40, 56, 3, seed=12))
    r = post(server.url, rgb, {"ops": PIPELINE, "variant": variant})
    assert r.status_code == 200, r.text
    got = png_decode(r.content)
    assert got.ndim == 2 or got.shape[2] == 1, got.shape
    assert set(np.unique(got)) <= {0, 255}
    assert np.array_equal(got, oracle(rgb, {"ops": PIPELINE}, r.headers["X-Edged-Variant"]))


def test_pipeline_report_and_refusals(server, image):
    r = post(server.url, image, {"ops": PIPELINE, "output": "json"})
    assert r.status_code == 200, r.text
    j = r.json()
    assert j["filter"] == "pipeline" and j["channels"] == 1
    ops = j["params"]["ops"]
    assert [s["filter"] for s in ops] == ["gaussian", "sobel", "threshold"]
    assert ops[0]["size"] == 7 and ops[2]["value"] == 40 and "post" not in ops[0] and ops[1]["border"] == "reflect"
    for params, words in [
        ({"ops": []}, ["ops", "0 steps"]),
        ({"ops": [{"filter": "box"}] * 9}, ["ops", "1..8"]),
        ({"ops": {"filter": "box"}}, ["ops", "array"]),
        ({"ops": [{"filter": "box", "ops": []}]}, ["ops[0].ops"]),
        ({"ops": [{"filter": "box"}, {"filter": "nope"}]}, ["ops[1].filter", "nope"]),
        ({"ops": [{"filter": "box"}, {"filter": "gaussian", "size": 4}]}, ["ops[1].size"]),
        ({"ops": [{"filter": "canny"}]}, ["ops[0]", "canny"]),
        ({"ops": [{"filter": "box"}], "filter": "sobel"}, ["filter", "inside each step"]),
    ]:
        assert_error(post(server.url, image, params), 400, "invalid_parameter", words)
    r = post(server.url, image, {"ops": PIPELINE, "variants": ["cpu_serial", "cpu"]}, path="/v1/compare")
    assert r.status_code == 200, r.text
    assert r.json()["filter"] == "pipeline" and len(r.json()["rows"]) == 2


def test_json_output_and_accept(server, image):
    r = post(server.url, image, {"filter": "sobel", "output": "json"})
    assert r.status_code == 200 and r.headers["Content-Type"] == "application/json"
    j = r.json()
    assert j["request_id"] == r.headers["X-Request-ID"]
    assert (j["filter"], j["width"], j["height"], j["channels"]) == ("sobel", 96, 72, 1)
    assert j["backend"] == BACKEND and j["variant"] == r.headers["X-Edged-Variant"] and j["device"]
    assert set(j["timings_ms"]) == TIMING_KEYS and j["timings_ms"]["total"] > 0
    assert set(j["kernel"]) == {"gflops", "effective_gbps", "bandwidth_fraction", "block"}
    assert j["output"]["bytes"] > 0
    for stage in TIMING_KEYS:
        assert stage + ";dur=" in r.headers["Server-Timing"]
    r = post(server.url, image, headers={"Accept": "application/json"})
    assert r.headers["Content-Type"] == "application/json" and r.json()["filter"] == "edge"
    r = post(server.url, image, headers={"Accept": "image/png, application/json;q=0.5"})
    assert r.headers["Content-Type"] == "image/png"
    r = post(server.url, image, {"output": "png"}, headers={"Accept": "application/json"})
    assert r.headers["Content-Type"] == "image/png"


def test_cpu_job_reports_its_threads(make_server, image):
    """A CPU job alone takes every compute thread (--threads); cpu_serial runs on one. The result's
    device names the threads the job ran on."""
    s = make_server("--threads", "3")
    for variant, want in (("cpu", "cpu (3 threads)"), ("cpu_serial", "cpu (1 thread)")):
        r = post(s.url, image, {"filter": "sobel", "variant": variant, "output": "json"})
        assert r.status_code == 200, r.text
        assert r.json()["device"] == want, r.json()


def test_cpu_jobs_share_the_threads(make_server, image):
    """A CPU job that starts while another runs takes half of --threads: the pool runs about as many
    threads as there are, not cpu-workers times as many. The long job (a 63x63 kernel on 4000x3000,
    over a second on two cores) holds the four threads it took alone."""
    s = make_server("--threads", "4", "--cpu-workers", "2")
    ramp = png_bytes(np.tile(np.linspace(0, 255, 4000).astype(np.uint8), (3000, 1)))
    taps = (np.random.RandomState(1).rand(63, 63) - 0.5).round(3).tolist()
    long_params = {"filter": "custom", "taps": taps, "variant": "cpu", "output": "json"}
    with cf.ThreadPoolExecutor(1) as ex:
        long_job = ex.submit(post, s.url, ramp, long_params)
        time.sleep(0.3)
        r = post(s.url, image, {"filter": "sobel", "variant": "cpu", "output": "json"})
        assert not long_job.done(), "the long job ended before the second one ran: make it longer"
        first = long_job.result()
    assert r.status_code == 200 and first.status_code == 200, (r.text, first.text)
    assert (first.json()["device"], r.json()["device"]) == ("cpu (4 threads)", "cpu (2 threads)")


def test_query_form_and_json_precedence(server, image):
    sobel = oracle(image, {"filter": "sobel"}, "cpu_serial")
    g5 = oracle(image, {"filter": "gaussian5"}, "cpu_serial")
    r = post(server.url, image, query={"filter": "sobel", "variant": "cpu_serial"})
    assert r.status_code == 200 and np.array_equal(png_decode(r.content), sobel)
    r = post(server.url, image, form={"filter": "sobel", "variant": "cpu_serial"})
    assert r.status_code == 200 and np.array_equal(png_decode(r.content), sobel)
    # JSON wins over form and query, field by field
    r = post(server.url, image, {"filter": "gaussian5"}, form={"filter": "sobel", "variant": "cpu_serial"},
             query={"filter": "laplacian3"})
    assert r.status_code == 200 and np.array_equal(png_decode(r.content), g5)
    # form wins over query
    r = post(server.url, image, form={"filter": "sobel"}, query={"filter": "gaussian5", "variant": "cpu_serial"})
    assert np.array_equal(png_decode(r.content), sobel)


def test_raw_png_body(server, image):
    r = requests.post(server.url + "/v1/filter?filter=sobel&variant=cpu_serial", data=image,
                      headers={"Content-Type": "image/png"})
    assert r.status_code == 200, r.text
    assert np.array_equal(png_decode(r.content), oracle(image, {"filter": "sobel"}, "cpu_serial"))


def test_bit_depth_1_and_level(server, image):
    r8 = post(server.url, image, {"variant": "cpu_serial"})
    r1 = post(server.url, image, {"variant": "cpu_serial", "bit_depth": 1, "png_level": 9})
    assert r1.status_code == 200 and r1.content[24] == 1, "IHDR bit depth %d" % r1.content[24]
    assert np.array_equal(png_decode(r1.content), png_decode(r8.content))
    assert len(r1.content) < len(r8.content)
    rgba = png_bytes(random_image(20, 20, 4, seed=1))
    assert_error(post(server.url, rgba, {"bit_depth": 1}), 400, "invalid_parameter", ["bit_depth", "alpha"])


@pytest.mark.parametrize("w,ch", [(72, 1), (72, 3), (70, 1), (70, 3)])
def test_bit_depth_1_same_map(server, w, ch):
    # the default variant's 1-bit answer is its 8-bit map; on the GPU backend (fast) a width that is
    # a multiple of 8 comes back from the device packed, others are packed by the encoder
    png = png_bytes(random_image(40, w, ch, seed=w + ch))
    r8 = post(server.url, png, {"threshold": 3})
    r1 = post(server.url, png, {"threshold": 3, "bit_depth": 1})
    assert r8.status_code == 200 and r1.status_code == 200, r1.text
    assert r1.content[24] == 1 and r1.headers["X-Edged-Variant"] == r8.headers["X-Edged-Variant"]
    assert np.array_equal(png_decode(r1.content), png_decode(r8.content))


def test_compare_refuses_bit_depth(server):
    # compare encodes no image, so an output option such as bit_depth is refused, not ignored
    png = png_bytes(random_image(40, 72, 1, seed=5))
    r = post(server.url, png, {"threshold": 3, "bit_depth": 1}, path="/v1/compare")
    assert r.status_code == 400 and r.json()["error"]["message"].startswith("bit_depth:"), r.text
    rows = post(server.url, png, {"threshold": 3}, path="/v1/compare").json()["rows"]
    assert {x["variant"]: x["max_abs_diff_vs_cpu_serial"] for x in rows}["cpu_serial"] == 0, rows


def test_same_input_same_bytes(server, image):
    with cf.ThreadPoolExecutor(4) as ex:
        bodies = list(ex.map(lambda _: post(server.url, image, {"filter": "gaussian", "size": 5}).content, range(6)))
    assert len(set(bodies)) == 1


def test_split_delivery_same_result(server, image):
    """The same multipart body sent in 1-byte and random pieces (chunked) gives the same bytes."""
    req = requests.Request("POST", server.url + "/v1/filter", files={"image": ("x.png", image, "image/png")},
                           data={"filter": "sobel"}).prepare()
    whole = requests.post(server.url + "/v1/filter", data=req.body, headers={"Content-Type": req.headers["Content-Type"]})
    assert whole.status_code == 200
    rng = np.random.default_rng(5)
    body, pieces, i = req.body, [], 0
    while i < len(body):
        n = 1 if len(pieces) < 300 else int(rng.integers(1, 2000))
        pieces.append(body[i:i + n])
        i += n
    head = ("POST /v1/filter HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\n"
            "Connection: close\r\n\r\n" % req.headers["Content-Type"]).encode()
    chunks = [b"%x\r\n%s\r\n" % (len(p), p) for p in pieces] + [b"0\r\n\r\n"]
    status, _, got, _ = raw(server.port, head, chunks)
    assert status == 200 and got == whole.content


def test_compare(server, image):
    r = post(server.url, image, {"filter": "gaussian", "size": 5}, path="/v1/compare")
    assert r.status_code == 200, r.text
    j = r.json()
    rows = {x["variant"]: x for x in j["rows"]}
    expect = {"cpu_serial", "cpu"} | ({"naive"} if BACKEND == "gpu" else set())
    assert expect <= set(rows)
    assert rows["cpu_serial"]["max_abs_diff_vs_cpu_serial"] == 0
    for row in j["rows"]:
        assert row["kernel_ms"] >= 0 and row["gflops"] >= 0 and row["max_abs_diff_vs_cpu_serial"] <= 1, row
    r = post(server.url, image, query={"variants": "cpu,naive"}, path="/v1/compare")
    j = r.json()
    assert [x["variant"] for x in j["rows"]][:2] == ["cpu_serial", "cpu"]
    if BACKEND != "gpu":
        assert j["skipped"] == [{"variant": "naive", "code": "variant_unavailable", "message": j["skipped"][0]["message"]}]
    assert_error(post(server.url, image, {"variant": "cpu"}, path="/v1/compare"), 400, "invalid_parameter",
                 ["variants"])


@pytest.mark.skipif(not os.path.isdir(PNGSUITE), reason="../shared/pngsuite not present")
def test_pngsuite_valid(server):
    """Every valid PngSuite file: 200, and the identity filter gives the CLI's decoded pixels."""
    params = {"filter": "custom", "taps": [[1]], "color": "rgb", "variant": "cpu_serial"}
    files = sorted(f for f in glob.glob(os.path.join(PNGSUITE, "*.png")) if not os.path.basename(f).startswith("x"))
    assert len(files) > 150

    def one(path):
        with open(path, "rb") as f:
            png = f.read()
        r = post(server.url, png, params)
        assert r.status_code == 200, (path, r.text)
        assert np.array_equal(png_decode(r.content), oracle(png, params, "cpu_serial")), path

    with cf.ThreadPoolExecutor(4) as ex:
        list(ex.map(one, files))


@pytest.mark.skipif(not os.path.isdir(PNGSUITE), reason="../shared/pngsuite not present")
def test_pngsuite_corrupt(server):
    files = sorted(glob.glob(os.path.join(PNGSUITE, "x*.png")))
    assert len(files) >= 14
    for path in files:
        with open(path, "rb") as f:
            r = post(server.url, f.read())
        assert_error(r, 422, "bad_png")


# ---- errors -------------------------------------------------------------------------------------

@pytest.mark.parametrize("params,field", [
    ({"treshold": 5}, "treshold"),
    ({"threshold": "5"}, "threshold"),
    ({"png_level": 12}, "png_level"),
    ('{"threshold": 1e999}', "threshold"),
    ('{"filter": "gaussian", "size": 123456789012345678901234567890}', "size"),
    ({"filter": "gaussian", "size": 4}, "size"),
    ({"filter": "sobel", "threshold": 3}, "threshold"),
    ('{"filter": "edge",}', "params"),
    ('{"taps": [[[[[[1]]]]]]}', "deeper"),
])
def test_400_params(server, image, params, field):
    assert_error(post(server.url, image, params), 400, "invalid_parameter", [field])


def test_400_params_query_and_form(server, image):
    assert_error(post(server.url, image, query={"fliter": "edge"}), 400, "invalid_parameter", ["fliter"])
    assert_error(post(server.url, image, form={"size": "abc"}), 400, "invalid_parameter", ["size"])


def test_400_multipart(server, image):
    req = requests.Request("POST", server.url + "/v1/filter", files={"image": ("x.png", image)}).prepare()
    ctype, body = req.headers["Content-Type"], req.body
    url = server.url + "/v1/filter"
    r = requests.post(url, data=body, headers={"Content-Type": "multipart/form-data"})
    assert_error(r, 400, "bad_multipart", ["boundary"])
    r = requests.post(url, data=body[:len(body) // 2], headers={"Content-Type": ctype})
    assert_error(r, 400, "bad_multipart", ["truncated"])
    r = requests.post(url, data=body[:-30], headers={"Content-Type": ctype})
    assert_error(r, 400, "bad_multipart")
    r = requests.post(url, files={"picture": ("x.png", image)})
    assert_error(r, 400, "invalid_parameter", ["picture"])  # an unknown field is an unknown parameter
    r = requests.post(url, files={"params": (None, "{}")})
    assert_error(r, 400, "bad_multipart", ["image"])
    r = requests.post(url, files=[("image", ("a.png", image)), ("image", ("b.png", image))])
    assert_error(r, 400, "bad_multipart", ["more than one"])
    r = requests.post(url, data=b"", headers={"Content-Type": ctype})
    assert_error(r, 400, "bad_multipart")


def test_file_part_is_the_image(server, image, tmp_path):
    """A part named `file` (imaginary's field, `curl -F file=@x.png`) is the image, as `image` is;
    an image sent under both names, or twice, stays 400; without one the message names both."""
    url = server.url + "/v1/filter"
    want = requests.post(url, files={"image": ("x.png", image, "image/png")}, data={"filter": "sobel"})
    path = tmp_path / "x.png"
    path.write_bytes(image)
    got = subprocess.run(["curl", "-s", "-S", "-o", "-", "-w", "\n%{http_code}", "-F", "file=@%s" % path,
                          "-F", "filter=sobel", url], capture_output=True, timeout=60)
    body, _, status = got.stdout.rpartition(b"\n")
    assert want.status_code == 200 and status == b"200", got
    assert body == want.content and png_decode(body).shape[:2] == (72, 96)
    r = requests.post(url, files={"file": ("x.png", image, "image/png")}, data={"filter": "sobel"})
    assert r.status_code == 200 and r.content == want.content
    for names in (("image", "file"), ("file", "image"), ("file", "file")):
        r = requests.post(url, files=[(names[0], ("a.png", image)), (names[1], ("b.png", image))])
        assert_error(r, 400, "bad_multipart", ["more than one image part"])
    r = requests.post(url, files={"params": (None, "{}")})
    assert_error(r, 400, "bad_multipart", ["no image part", "'image' or 'file'"])
    # curl -F img=@x.png: a file under a name that is neither the image's nor a parameter's
    r = requests.post(url, files={"img": ("x.png", image, "image/png")})
    assert_error(r, 400, "invalid_parameter", ["'img'", "a file", "'image' or 'file'", "'params'"])


def test_404_405(server):
    assert_error(requests.get(server.url + "/v2/filter"), 404, "not_found")
    r = requests.get(server.url + "/v1/filter")
    assert_error(r, 405, "method_not_allowed")
    assert r.headers["Allow"] == "POST"
    r = requests.post(server.url + "/healthz", data=b"x")
    assert_error(r, 405, "method_not_allowed")
    assert r.headers["Allow"] == "GET, HEAD"
    r = requests.put(server.url + "/v1/compare")
    assert r.status_code == 405 and r.headers["Allow"] == "POST"


def test_400_framing(server):
    for head in (b"Content-Length: 10\r\nContent-Length: 12\r\n", b"Content-Length: 10\r\nTransfer-Encoding: chunked\r\n"):
        status, _, body, _ = raw(server.port, b"POST /v1/filter HTTP/1.1\r\nHost: x\r\nContent-Type: image/png\r\n" +
                                 head + b"\r\n")
        assert status == 400, body


def test_413_content_length_before_body(make_server):
    s = make_server("--max-body-mb", "1")
    head = (b"POST /v1/filter HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"
            b"Content-Length: 2000000\r\nExpect: 100-continue\r\n\r\n")
    status, hdrs, body, first = raw(s.port, head)  # no body sent: the answer must come anyway
    assert status == 413, first
    err = json.loads(body)["error"]
    assert err["code"] == "body_too_large" and "max-body-mb" in err["message"]
    assert "X-Request-ID".lower() in hdrs


def test_413_chunked_streaming(make_server):
    s = make_server("--max-body-mb", "1")
    head = (b"POST /v1/filter HTTP/1.1\r\nHost: x\r\nContent-Type: image/png\r\nTransfer-Encoding: chunked\r\n\r\n")
    piece = b"\x89PNG" + b"\0" * 65532
    chunks = [b"%x\r\n%s\r\n" % (len(piece), piece)] * 40  # 2.5 MiB, never terminated
    status, hdrs, body, first = raw(s.port, head, chunks)
    assert status == 413, first
    assert json.loads(body)["error"]["code"] == "body_too_large"
    assert hdrs.get("connection") == "close"
    m = metrics(s.url)
    assert m[("edged_rejections_total", frozenset({("reason", "body_too_large")}))] == 1
    assert requests.get(s.url + "/healthz").status_code == 200


def test_415(server, image):
    gif = b"GIF89a" + b"\0" * 100
    for data in (gif, b"", image[:7]):
        assert_error(post(server.url, data), 415, "unsupported_media_type")
    # a JPEG header over zeros is a JPEG, corrupt
    assert_error(post(server.url, b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\0" * 100), 422, "bad_image")
    for ctype in ("text/plain", "application/json", "image/gif"):
        r = requests.post(server.url + "/v1/filter", data=image, headers={"Content-Type": ctype})
        assert_error(r, 415, "unsupported_media_type", [ctype])
    r = requests.post(server.url + "/v1/filter", data=image, headers={"Content-Type": ""})
    assert r.status_code == 415


def test_422(make_server, image):
    s = make_server("--max-pixels", "10000", "--max-side", "200")
    assert post(s.url, png_bytes(random_image(90, 100, 1, 1))).status_code == 200
    assert_error(post(s.url, png_bytes(random_image(101, 100, 1, 1))), 422, "image_too_large", ["max-pixels"])
    assert_error(post(s.url, png_bytes(random_image(10, 201, 1, 1))), 422, "image_too_large", ["max-side"])
    assert_error(post(s.url, image[:len(image) // 2]), 422, "bad_png")
    assert_error(post(s.url, image[:40] + b"\0" * 16 + image[56:]), 422, "bad_png")


def test_422_gpu_variant_without_gpu(server, image):
    if BACKEND == "gpu":
        pytest.skip("GPU backend: GPU variants are available")
    assert_error(post(server.url, image, {"variant": "shared"}), 422, "variant_unavailable", ["shared"])
    assert_error(post(server.url, image, {"filter": "box", "size": 31, "variant": "fft"}), 422,
                 "variant_unavailable", ["fft"])


def test_429_queue_full(make_server, slow_png):
    s = make_server("--queue-depth", "1", "--cpu-workers", "1", "--threads", "2")
    with cf.ThreadPoolExecutor(8) as ex:
        rs = list(ex.map(lambda _: post(s.url, slow_png, SLOW), range(8)))
    codes = sorted(r.status_code for r in rs)
    assert set(codes) == {200, 429}, codes
    assert codes.count(200) >= 2
    for r in rs:
        if r.status_code == 429:
            assert_error(r, 429, "queue_full", ["queue-depth 1"])
            assert r.headers["Retry-After"] == "1"
    m = metrics(s.url)
    assert m[("edged_rejections_total", frozenset({("reason", "queue_full")}))] == codes.count(429)


def deadline_exceeded(make_server, slow_png, image):
    """One worker, a 100 ms queue deadline: a slow job runs while a second one waits past its
    deadline. Returns the slow job's status and the late job's answer."""
    s = make_server("--queue-deadline-ms", "100", "--cpu-workers", "1")
    with cf.ThreadPoolExecutor(2) as ex:
        first = ex.submit(post, s.url, slow_png, SLOW)
        time.sleep(0.05)
        late = ex.submit(post, s.url, image, {"variant": "cpu_serial"})
        return first.result().status_code, late.result()


def test_504_deadline(make_server, slow_png, image):
    first, late = deadline_exceeded(make_server, slow_png, image)
    assert first == 200
    assert_error(late, 504, "deadline_exceeded", ["100 ms"])


def test_503_backend_gpu_without_device(make_server, image):
    if BACKEND == "gpu":
        pytest.skip("GPU backend: a device is present")
    s = make_server("--backend", "gpu", wait_ready=False)
    r = requests.get(s.url + "/readyz")
    assert_error(r, 503, "unavailable", ["backend"])
    assert_error(post(s.url, image), 503, "unavailable")
    assert any(x.get("event") == "backend" and x["level"] == "error" for x in s.log_lines())
    p = subprocess.run([BIN, "health", "--url", s.url], capture_output=True)
    assert p.returncode == 1


def test_health_command(server):
    assert subprocess.run([BIN, "health", "--url", server.url]).returncode == 0
    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    closed = "http://127.0.0.1:%d" % port.getsockname()[1]
    port.close()
    assert subprocess.run([BIN, "health", "--url", closed], capture_output=True).returncode == 1


# ---- concurrency, drain, metrics ---------------------------------------------------------------

def test_32_concurrent_all_correct(server):
    pngs = [png_bytes(random_image(64 + i, 80 + 2 * i, 3, seed=100 + i)) for i in range(32)]
    barrier = threading.Barrier(32)

    def one(png):
        barrier.wait()
        return post(server.url, png, {"filter": "edge"})

    with cf.ThreadPoolExecutor(32) as ex:
        rs = list(ex.map(one, pngs))
    ids = set()
    for i, (png, r) in enumerate(zip(pngs, rs)):
        assert r.status_code == 200, r.text
        got = png_decode(r.content)
        assert got.shape == (64 + i, 80 + 2 * i)
        assert np.array_equal(got, oracle(png, {"filter": "edge"}, r.headers["X-Edged-Variant"])), i
        ids.add(r.headers["X-Request-ID"])
    assert len(ids) == 32


def test_sigterm_drain_answers_everything(make_server, slow_png):
    s = make_server("--cpu-workers", "1", "--drain-grace-ms", "1500")
    with cf.ThreadPoolExecutor(4) as ex:
        futs = [ex.submit(post, s.url, slow_png, SLOW) for _ in range(3)]
        until = time.time() + 10
        while total(metrics(s.url), "edged_requests_in_flight") < 4 and time.time() < until:
            time.sleep(0.02)  # 3 jobs + this /metrics request
        s.signal()
        time.sleep(0.1)
        assert_error(requests.get(s.url + "/readyz"), 503, "unavailable", ["draining"])
        late = post(s.url, slow_png)
        assert_error(late, 503, "unavailable", ["draining"])
        assert late.headers["Retry-After"]
        assert [f.result().status_code for f in futs] == [200, 200, 200]
    assert s.proc.wait(30) == 0
    lines = s.log_lines()
    assert sum(1 for x in lines if x.get("event") == "request" and x["path"] == "/v1/filter" and
               x["status"] == 200) == 3
    assert lines[-1]["event"] == "exit"


def test_sigterm_under_load(make_server):
    s = make_server()
    pngs = [png_bytes(random_image(256, 256, 3, seed=i)) for i in range(12)]
    with cf.ThreadPoolExecutor(12) as ex:
        futs = [ex.submit(post, s.url, p, {"variant": "cpu_serial", "filter": "sharpen"}) for p in pngs]
        until = time.time() + 10
        while total(metrics(s.url), "edged_requests_in_flight") < 13 and time.time() < until:
            time.sleep(0.01)
        s.signal()
        codes = [f.result().status_code for f in futs]
    assert codes == [200] * 12
    assert s.proc.wait(30) == 0


def test_metrics_parse_and_balance(server, image):
    post(server.url, image)
    post(server.url, image, {"nope": 1})
    requests.get(server.url + "/nowhere")
    # a request leaves the in-flight gauge when the server's completion callback has run, which
    # can be a moment after the client has read its answer: wait until only this one is in flight
    until = time.time() + 5
    m = metrics(server.url)
    while total(m, "edged_requests_in_flight") > 1 and time.time() < until:
        time.sleep(0.01)
        m = metrics(server.url)
    names = {n for n, _ in m}
    for want in ("edged_requests_total", "edged_queue_depth", "edged_queue_wait_seconds_bucket",
                 "edged_queue_wait_seconds_sum", "edged_queue_wait_seconds_count", "edged_stage_seconds_bucket",
                 "edged_rejections_total", "edged_gpu_memory_used_bytes", "edged_build_info"):
        assert want in names, want
    stages = {dict(l)["stage"] for n, l in m if n == "edged_stage_seconds_count"}
    assert stages == TIMING_KEYS | {"receive", "codec_wait"}
    accepted = total(m, "edged_requests_accepted_total")
    ok, failed = total(m, "edged_requests_succeeded_total"), total(m, "edged_requests_failed_total")
    in_flight = total(m, "edged_requests_in_flight")
    assert in_flight == 1  # this /metrics request
    assert accepted == ok + failed + in_flight
    assert total(m, "edged_requests_total") == ok + failed
    ok_codes = sum(v for (n, l), v in m.items() if n == "edged_requests_total" and dict(l)["code"].startswith("2"))
    assert ok_codes == ok
    # histogram buckets are cumulative and end at the count
    for stage in TIMING_KEYS | {"receive", "codec_wait"}:
        b = sorted((float(dict(l)["le"]), v) for (n, l), v in m.items()
                   if n == "edged_stage_seconds_bucket" and dict(l)["stage"] == stage)
        assert [v for _, v in b] == sorted(v for _, v in b)
        assert b[-1][1] == m[("edged_stage_seconds_count", frozenset({("stage", stage)}))]
    assert m[("edged_queue_depth", frozenset())] == 0


def test_access_log(server, image):
    r = post(server.url, image, headers={"X-Request-ID": "log-check-1"})
    time.sleep(0.1)
    line = [x for x in server.log_lines() if x.get("request_id") == "log-check-1"]
    assert len(line) == 1
    x = line[0]
    assert x["status"] == 200 and x["bytes"] == len(r.content) and x["size"] == "96x72"
    assert x["filter"] == "edge" and x["variant"] == r.headers["X-Edged-Variant"]
    assert x["ms"]["total"] > 0 and x["ms"]["decode"] > 0
    cfg = [x for x in server.log_lines() if x.get("event") == "config"]
    assert len(cfg) == 1 and cfg[0]["config"]["port"] == server.port


def test_flags_and_env(make_server):
    env = dict(os.environ, EDGED_QUEUE_DEPTH="7", EDGED_MAX_SIDE="999")
    s = make_server("--max-side", "555", env=env)
    limits = requests.get(s.url + "/version").json()["limits"]
    assert limits["queue_depth"] == 7 and limits["max_side"] == 555  # env applies, flags win
    p = subprocess.run([BIN, "serve", "--queue-depth", "0"], capture_output=True, text=True)
    assert p.returncode == 2 and "queue-depth" in p.stderr
