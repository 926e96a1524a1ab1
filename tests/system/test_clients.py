"""test_clients.py — the example clients of docs/clients.md (docs/clients/edged_client.py with
requests, docs/clients/edged_client.mjs with fetch under node) run as programs against a real
`edged serve`, once without API keys and once with EDGED_API_KEYS: the PNG they write is the
server's answer byte for byte (and the JPEG, for a JPEG sent with format=jpeg), the JSON they write
is the result with its params echo, a missing or
wrong key and a bad parameter end in exit status 1 naming the error's status and code, and with the
queue held full they report the 429 when told not to retry, or retry (honouring Retry-After) until
the server takes the job. --help and -h print the usage and exit 0. The code docs/clients.md quotes
is the code in the files. The JavaScript client is skipped, visibly, where node is not installed.
Backend from EDGED_TEST_BACKEND (cpu by default); binary EDGED_BIN."""
import concurrent.futures as cf
import json
import os
import re
import shutil
import subprocess
import sys
import time

import cv2
import pytest
import requests

from conftest import BACKEND, ROOT, free_port, png_bytes, random_image
from helpers import metrics, total

CLIENTS = os.path.join(ROOT, "docs", "clients")
KEYS = "first-key,client.Key_2"
KEY = "client.Key_2"
SLOW = {"filter": "gaussian", "size": 63, "color": "gray", "variant": "cpu_serial"}  # ~1 s on 640x640


def client_cmd(lang):
    if lang == "js":
        if not shutil.which("node"):
            pytest.skip("node is not installed: the JavaScript client is not run")
        return ["node", os.path.join(CLIENTS, "edged_client.mjs")]
    return [sys.executable, os.path.join(CLIENTS, "edged_client.py")]


def run(lang, url, src, dst, *args, key=None, timeout=120):
    env = {k: v for k, v in os.environ.items() if k != "EDGED_API_KEY"}
    if key:
        env["EDGED_API_KEY"] = key
    return subprocess.run(client_cmd(lang) + [url, str(src), str(dst)] + list(args), capture_output=True,
                          text=True, env=env, timeout=timeout)


@pytest.fixture(scope="module")
def png():
    return png_bytes(random_image(48, 64, 3, seed=21))


@pytest.fixture
def src(tmp_path, png):
    path = tmp_path / "in.png"
    path.write_bytes(png)
    return path


@pytest.fixture(params=["no-keys", "keys"])
def keyed(request, make_server):
    """(server, key the clients send): a server without keys, and one with EDGED_API_KEYS."""
    if request.param == "no-keys":
        return make_server(), None
    return make_server(env=dict(os.environ, EDGED_API_KEYS=KEYS)), KEY


def direct(url, png, params, key=None):
    headers = {"Authorization": "Bearer " + key} if key else {}
    r = requests.post(url + "/v1/filter", files={"image": ("x.png", png, "image/png")},
                      data={"params": json.dumps(params)}, headers=headers, timeout=60)
    assert r.status_code == 200, r.text
    return r


@pytest.mark.parametrize("lang", ["py", "js"])
def test_png_output(keyed, lang, src, png, tmp_path):
    s, key = keyed
    dst = tmp_path / "out.png"
    p = run(lang, s.url, src, dst, "--param", "filter=sobel", "--param", "border=reflect", key=key)
    assert p.returncode == 0, p.stderr
    assert dst.read_bytes() == direct(s.url, png, {"filter": "sobel", "border": "reflect"}, key).content


@pytest.mark.parametrize("lang", ["py", "js"])
def test_jpeg_in_jpeg_out(keyed, lang, tmp_path):
    """A JPEG is sent as it is (the server tells it from its bytes); format=jpeg brings a JPEG back."""
    s, key = keyed
    ok, enc = cv2.imencode(".jpg", random_image(48, 64, 3, seed=22), [cv2.IMWRITE_JPEG_QUALITY, 90])
    assert ok
    src, dst = tmp_path / "in.jpg", tmp_path / "out.jpg"
    src.write_bytes(enc.tobytes())
    p = run(lang, s.url, src, dst, "--param", "filter=gaussian", "--param", "format=jpeg", key=key)
    assert p.returncode == 0, p.stderr
    got = dst.read_bytes()
    assert got[:3] == b"\xff\xd8\xff", "not a JPEG: %r" % got[:8]
    assert got == direct(s.url, enc.tobytes(), {"filter": "gaussian", "format": "jpeg"}, key).content


@pytest.mark.parametrize("lang", ["py", "js"])
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help(lang, flag):
    """Usage on stdout, exit 0, before any other argument is looked at; it names the input formats."""
    p = subprocess.run(client_cmd(lang) + [flag], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("usage: edged_client.") and not p.stderr, (p.stdout, p.stderr)
    assert "PNG, JPEG or WebP" in p.stdout and "--retries" in p.stdout, p.stdout


@pytest.mark.parametrize("lang", ["py", "js"])
def test_json_output(keyed, lang, src, tmp_path):
    s, key = keyed
    dst = tmp_path / "out.json"
    p = run(lang, s.url, src, dst, "--json", "--param", "filter=gaussian", "--param", "size=9", key=key)
    assert p.returncode == 0, p.stderr
    got = json.loads(dst.read_text())
    assert (got["filter"], got["width"], got["height"], got["backend"]) == ("gaussian", 64, 48, BACKEND)
    assert got["params"]["size"] == 9 and got["params"]["sigma"] == 1.7 and got["params"]["output"] == "json"
    p = run(lang, s.url, src, "-", "--json", "--param", "taps=[[1,2,1]]", "--param", "filter=custom",
            "--param", "normalize=true", key=key)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert got["params"]["taps"] == [[1, 2, 1]] and got["params"]["normalize"] is True


@pytest.mark.parametrize("lang", ["py", "js"])
def test_errors_reported(keyed, lang, src, tmp_path):
    s, key = keyed
    dst = tmp_path / "never.png"
    p = run(lang, s.url, src, dst, "--param", "filter=gaussian", "--param", "size=4", key=key)
    assert p.returncode == 1 and not dst.exists()
    assert re.search(r"^edged: 400 invalid_parameter: size: 4 is even.*\(request [0-9a-f]{16}\)$", p.stderr, re.M), \
        p.stderr
    if key:
        for wrong in (None, "not-a-key"):
            p = run(lang, s.url, src, dst, key=wrong)
            assert p.returncode == 1 and "edged: 401 unauthorized: " in p.stderr and not dst.exists(), p.stderr
            assert "retry" not in p.stderr
    p = run(lang, "http://127.0.0.1:%d" % free_port(), src, dst, key=key)  # nothing listens there
    assert p.returncode == 1 and p.stderr.startswith("edged: no answer from "), p.stderr
    p = run(lang, s.url, src, dst, "--retries", "x")
    assert p.returncode == 2, p.stderr


def hold_queue_full(s, slow_png, ex, key):
    """Starts two jobs of ~1 s on a server with one CPU worker and --queue-depth 1: one runs, one
    waits, so that the queue is full until the first ends. Returns their futures."""
    futs = [ex.submit(direct, s.url, slow_png, SLOW, key)]
    until = time.time() + 10
    while total(metrics(s.url), "edged_requests_in_flight") < 2 and time.time() < until:
        time.sleep(0.01)  # the first job and this /metrics request
    time.sleep(0.05)
    futs.append(ex.submit(direct, s.url, slow_png, SLOW, key))
    while total(metrics(s.url), "edged_queue_depth") < 1 and time.time() < until:
        time.sleep(0.01)
    assert total(metrics(s.url), "edged_queue_depth") == 1
    return futs


@pytest.mark.parametrize("lang", ["py", "js"])
@pytest.mark.parametrize("keys", [None, KEYS], ids=["no-keys", "keys"])
def test_retry_on_queue_full(make_server, lang, keys, src, png, tmp_path):
    env = dict(os.environ, EDGED_API_KEYS=keys) if keys else None
    key = KEY if keys else None
    s = make_server("--queue-depth", "1", "--cpu-workers", "1", "--threads", "2", env=env)
    slow_png = png_bytes(random_image(640, 640, 3, seed=3))
    client_cmd(lang)  # skips before the server is loaded when node is missing
    with cf.ThreadPoolExecutor(2) as ex:
        futs = hold_queue_full(s, slow_png, ex, key)
        refused = run(lang, s.url, src, tmp_path / "refused.png", "--retries", "0", key=key)
        p = run(lang, s.url, src, tmp_path / "out.png", "--retries", "6", "--param", "filter=box", key=key)
        assert [f.result().status_code for f in futs] == [200, 200]
    assert refused.returncode == 1 and "edged: 429 queue_full: " in refused.stderr, refused.stderr
    assert "retry" not in refused.stderr and not (tmp_path / "refused.png").exists()
    assert p.returncode == 0, p.stderr
    retries = re.findall(r"^edged: 429 queue_full: .*; retry (\d) of 6 in (\d+\.\d) s$", p.stderr, re.M)
    assert retries and retries[0] == ("1", "1.0"), p.stderr  # Retry-After: 1 over the 0.5 s base
    assert (tmp_path / "out.png").read_bytes() == direct(s.url, png, {"filter": "box"}, key).content


@pytest.mark.parametrize("lang", ["py", "js"])
def test_unavailable_reported(make_server, lang, src, tmp_path):
    if BACKEND == "gpu":
        pytest.skip("GPU backend: a device is present")
    s = make_server("--backend", "gpu", wait_ready=False)
    t0 = time.time()
    p = run(lang, s.url, src, tmp_path / "out.png", "--retries", "0")
    assert p.returncode == 1 and "edged: 503 unavailable: " in p.stderr and time.time() - t0 < 10, p.stderr


def quoted_blocks(lang):
    with open(os.path.join(ROOT, "docs", "clients.md"), encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"```%s\n(.*?)```" % lang, text, re.S)


def test_docs_quote_the_files():
    for lang, name in (("python", "edged_client.py"), ("js", "edged_client.mjs")):
        with open(os.path.join(CLIENTS, name), encoding="utf-8") as f:
            source = f.read()
        quotes = [b for b in quoted_blocks(lang) if "import " not in b.splitlines()[0]]
        assert quotes, lang
        for b in quotes:
            assert b in source, "docs/clients.md quotes code that is not in %s:\n%s" % (name, b[:300])
        assert any("Retry-After" in b for b in quotes) and any("Bearer" in b for b in quotes), lang
