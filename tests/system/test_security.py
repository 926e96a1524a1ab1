"""test_security.py — security defaults: limits on by default, optional API keys
(EDGED_API_KEYS, Authorization: Bearer; health, readiness, metrics and the web page exempt), CORS
off unless --cors-origin / EDGED_CORS_ORIGIN, the per-IP connection cap, and no internal details
in error bodies (those stay in the log)."""
import os
import subprocess
import time

import pytest
import requests

from conftest import BIN, ROOT, png_bytes, random_image
from helpers import assert_balanced, connect, error_of, post_head, read_response, total

KEYS = "k1-abcdef,second.Key_2"


@pytest.fixture(scope="module")
def small():
    return png_bytes(random_image(24, 24, 3, seed=8))


def upload(url, png, headers=None, path="/v1/filter"):
    return requests.post(url + path, files={"image": ("x.png", png, "image/png")}, headers=headers or {}, timeout=30)


def test_limits_on_by_default(server):
    lim = requests.get(server.url + "/version").json()["limits"]
    assert lim == {"max_body_bytes": 64 << 20, "max_pixels": 50000000, "max_side": 32768, "max_kernel_side": 63,
                   "queue_depth": 64, "queue_deadline_ms": 30000}, lim
    cfg = [x for x in server.log_lines() if x.get("event") == "config"][0]["config"]
    assert cfg["conn-timeout-s"] == 30 and cfg["request-timeout-s"] == 60 and cfg["max-connections"] == 256
    assert cfg["max-conn-per-ip"] == 64 and cfg["cors-origin"] == "" and cfg["api-keys"] == 0
    h = subprocess.run([BIN, "serve", "--help"], capture_output=True, text=True).stdout
    for word in ("--max-conn-per-ip", "EDGED_MAX_CONN_PER_IP", "--cors-origin", "EDGED_CORS_ORIGIN",
                 "EDGED_API_KEYS", "--request-timeout-s"):
        assert word in h, word
    assert "--api-keys" not in h  # secrets come from the environment only


def test_api_keys(make_server, small):
    env = dict(os.environ, EDGED_API_KEYS=KEYS)
    s = make_server(env=env)
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "Bearer k1-abcde"},
                    {"Authorization": "Bearer k1-abcdefg"}, {"Authorization": "Basic azEtYWJjZGVm"},
                    {"Authorization": "k1-abcdef"}, {"Authorization": "Bearer "},
                    {"Authorization": "Bearer k1-abcdef,second.Key_2"}):
        r = upload(s.url, small, headers)
        assert r.status_code == 401, (headers, r.status_code)
        e = error_of(r)
        assert e["code"] == "unauthorized" and "Bearer" in e["message"]
        assert r.headers["WWW-Authenticate"] == 'Bearer realm="edged"'
        assert "k1-abcdef" not in r.text and "second.Key_2" not in r.text
    for key in ("k1-abcdef", "second.Key_2"):
        for scheme in ("Bearer", "bearer"):
            r = upload(s.url, small, {"Authorization": "%s %s" % (scheme, key)})
            assert r.status_code == 200, r.text
    for path in ("/v1/filters", "/v1/variants", "/version", "/openapi.yaml"):
        assert requests.get(s.url + path).status_code == 401, path
        assert requests.get(s.url + path, headers={"Authorization": "Bearer k1-abcdef"}).status_code == 200, path
    for path in ("/healthz", "/readyz", "/metrics"):  # probes and scrapes stay open
        assert requests.get(s.url + path).status_code == 200, path
    for path in ("/nowhere", "/v2/filter", "/web/../x"):  # which paths exist is no news without a key
        r = requests.get(s.url + path)
        assert r.status_code == 401 and r.headers["WWW-Authenticate"] == 'Bearer realm="edged"', (path, r.status_code)
        assert requests.get(s.url + path, headers={"Authorization": "Bearer k1-abcdef"}).status_code == 404, path
    # refused before the body: a large upload without a key gets 401 at once, no 100 Continue
    c = connect(s.port)
    c.sendall(post_head("/v1/filter", "image/png", 50 << 20, "Expect: 100-continue\r\n"))
    assert c.recv(12) == b"HTTP/1.1 401"
    c.close()
    m = assert_balanced(s.url)
    assert total(m, "edged_rejections_total", reason="unauthorized") >= 16
    log = s.log_text()
    assert "k1-abcdef" not in log and "second.Key_2" not in log  # never logged
    cfg = [x for x in s.log_lines() if x.get("event") == "config"][0]["config"]
    assert cfg["api-keys"] == 2


def test_api_keys_invalid_refused_at_start():
    for bad in ("a b", "ok,,two", "x" * 257, ",", "quo\"te", "é"):
        p = subprocess.run([BIN, "serve", "--port", "1"], capture_output=True, text=True,
                           env=dict(os.environ, EDGED_API_KEYS=bad))
        assert p.returncode == 2 and "EDGED_API_KEYS" in p.stderr, (bad, p.stderr)
        if len(bad) > 3:
            assert bad not in p.stderr  # the message never quotes a key


def test_cors_off_by_default(server, small):
    r = upload(server.url, small)
    assert "Access-Control-Allow-Origin" not in r.headers
    r = requests.options(server.url + "/v1/filter", headers={"Origin": "https://evil.example",
                                                              "Access-Control-Request-Method": "POST"})
    assert r.status_code == 405 and "Access-Control-Allow-Origin" not in r.headers


def test_cors_origin(make_server, small):
    origin = "https://app.example"
    s = make_server("--cors-origin", origin, env=dict(os.environ, EDGED_API_KEYS=KEYS))
    r = requests.options(s.url + "/v1/filter", headers={"Origin": origin, "Access-Control-Request-Method": "POST",
                                                         "Access-Control-Request-Headers": "authorization"})
    assert r.status_code == 204, r.text  # preflight needs no key
    assert r.headers["Access-Control-Allow-Origin"] == origin
    assert "POST" in r.headers["Access-Control-Allow-Methods"]
    assert "Authorization" in r.headers["Access-Control-Allow-Headers"]
    assert int(r.headers["Access-Control-Max-Age"]) > 0
    r = requests.options(s.url + "/healthz")
    assert r.status_code == 204 and "GET" in r.headers["Access-Control-Allow-Methods"]
    auth = {"Authorization": "Bearer k1-abcdef"}
    assert requests.options(s.url + "/nowhere").status_code == 401  # with keys on, no path is told
    assert requests.options(s.url + "/nowhere", headers=auth).status_code == 404
    for r in (upload(s.url, small, auth), upload(s.url, small), requests.get(s.url + "/healthz")):
        assert r.headers["Access-Control-Allow-Origin"] == origin
        assert "X-Request-ID" in r.headers["Access-Control-Expose-Headers"]
    # the raw 413 written mid-stream carries it too
    s2 = make_server("--cors-origin", origin, "--max-body-mb", "1")
    c = connect(s2.port)
    c.sendall(post_head("/v1/filter", "image/png", None, "Transfer-Encoding: chunked\r\n"))
    try:
        for _ in range(40):
            c.sendall(b"ffff\r\n" + b"\0" * 0xffff + b"\r\n")
    except OSError:
        pass
    status, hdrs, body = read_response(c)
    c.close()
    assert status == 413 and hdrs["access-control-allow-origin"] == origin
    env = dict(os.environ, EDGED_CORS_ORIGIN="https://a.example https://b.example")
    p = subprocess.run([BIN, "serve", "--port", "1"], capture_output=True, text=True, env=env)
    assert p.returncode == 2 and "cors-origin" in p.stderr


def test_per_ip_connection_cap(make_server):
    s = make_server("--max-conn-per-ip", "3")
    # an address of their own: the fixture's readiness probes come from 127.0.0.1 and may still be open
    held = [connect(s.port, source="127.0.0.7") for _ in range(3)]
    for c in held:  # answered, so all three are counted before the 4th arrives (threads start in any order)
        c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(c, timeout=5)[0] == 200
    # a 4th connection from one address is answered, not reset: probes served, work refused 429
    extra = connect(s.port, source="127.0.0.7")
    extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    status, _, _ = read_response(extra, timeout=3)
    assert status == 200, "health not answered on a connection past the address's cap"
    extra.sendall(b"POST /v1/filter HTTP/1.1\r\nHost: x\r\nContent-Type: image/png\r\nContent-Length: 0\r\n\r\n")
    status, hdrs, body = read_response(extra, timeout=3)
    assert status == 429 and b"max-conn-per-ip" in body and hdrs.get("connection") == "close", (status, body)
    extra.close()
    other = connect(s.port, source="127.0.0.2")  # another address still gets in
    other.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert read_response(other)[0] == 200
    other.close()
    for c in held:
        c.close()
    time.sleep(0.2)
    assert requests.get(s.url + "/healthz").status_code == 200


def test_no_internal_details_in_error_bodies(make_server, small):
    s = make_server("--openapi", "/nonexistent/secret-dir/openapi.yaml")
    r = requests.get(s.url + "/openapi.yaml")
    assert r.status_code == 404 and "secret-dir" not in r.text
    assert "secret-dir" in s.log_text()  # where it looked is in the log
    g = make_server("--backend", "gpu", wait_ready=False) if not os.environ.get("EDGED_TEST_BACKEND") == "gpu" else None
    if g:
        r = requests.get(g.url + "/readyz")
        msg = error_of(r)["message"]
        assert r.status_code == 503 and "CUDA" not in msg and "cuda" not in msg, msg
    # every error body is the one shape, with no stack, path or pointer
    for r in (requests.get(s.url + "/nope"), upload(s.url, b"GIF89a"), upload(s.url, small[:60])):
        e = error_of(r)
        assert "/work" not in e["message"] and "0x" not in e["message"] and ".c:" not in e["message"], e


DEBUG_BIN = os.environ.get("EDGED_DEBUG_BIN", os.path.join(ROOT, "build-debug", "edged"))


@pytest.mark.skipif(not os.path.exists(DEBUG_BIN), reason="needs a `make debug` build (EDGED_DEBUG_BIN)")
def test_500_generic_message_detail_in_log(small):
    """Debug builds only: EDGED_FAULT=internal fails CPU job 1 with an internal error whose
    message names a file and an address; the answer is 500 with the generic message."""
    import conftest
    old = conftest.BIN
    conftest.BIN = DEBUG_BIN
    try:
        s = conftest.Server([], env=dict(os.environ, EDGED_FAULT="internal"))
    finally:
        conftest.BIN = old
    try:
        r = upload(s.url, small)
        assert r.status_code == 500, r.text
        e = error_of(r)
        assert e["code"] == "internal" and e["message"] == "internal error", e
        time.sleep(0.1)
        assert "injected internal error" in s.log_text() and e["request_id"] in s.log_text()
        assert upload(s.url, small).status_code == 200  # only that job
    finally:
        s.stop()
