"""test_transport.py — docs/reliability.md, A. HTTP transport: methods and paths, media
types, body limits decided before the body (no 100 Continue), chunked bodies past the cap,
malformed framing, slow clients cut by timeouts with nothing queued, disconnects with balanced
counters, and /healthz and /readyz fast under overload."""
import concurrent.futures as cf
import socket
import statistics
import threading
import time

import pytest
import requests

from conftest import png_bytes, random_image
from helpers import (assert_balanced, connect, error_of, exchange, is_closed, json_error, metrics, multipart,
                     post_head, read_response, slowdown, total)

K = slowdown()  # timing limits scale with it (sanitizers, valgrind)

# ~0.3-0.5 s of one core: the serial reference with a 63x63 kernel on a 384x384 image.
SLOW = '{"filter":"gaussian","size":63,"color":"gray","variant":"cpu_serial"}'


@pytest.fixture(scope="module")
def small():
    return png_bytes(random_image(40, 56, 3, seed=11))


@pytest.fixture(scope="module")
def slow_png():
    side = 384 if K < 20 else 96  # under valgrind a quarter of the side keeps the wall time
    return png_bytes(random_image(side, side, 3, seed=3))


def form(png, params=None):
    parts = [("image", png, "; filename=\"x.png\"\r\nContent-Type: image/png")]
    if params:
        parts.append(("params", params.encode(), ""))
    return multipart(parts)


GET_ROUTES = ["/healthz", "/readyz", "/metrics", "/version", "/v1/filters", "/v1/variants", "/openapi.yaml"]
POST_ROUTES = ["/v1/filter", "/v1/compare"]


def test_405_with_allow_on_every_route(server):
    for path in GET_ROUTES:
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            r = requests.request(method, server.url + path, timeout=10)
            assert r.status_code == 405, (method, path, r.status_code)
            assert r.headers["Allow"] == "GET, HEAD"
            assert error_of(r)["code"] == "method_not_allowed"
    for path in POST_ROUTES:
        for method in ("GET", "HEAD", "PUT", "DELETE", "OPTIONS"):
            r = requests.request(method, server.url + path, timeout=10)
            assert r.status_code == 405 and r.headers["Allow"] == "POST", (method, path)


def test_404_unknown_paths(server):
    for path in ("/v1/filter/", "/v1/FILTER", "/v1", "/v2/filter", "/healthz/x", "/..%2f..%2fetc%2fpasswd",
                 "/%00", "/web", "/" + "a" * 4000):
        r = requests.get(server.url + path, timeout=10)
        assert r.status_code == 404, (path[:40], r.status_code)
        e = error_of(r)
        assert e["code"] == "not_found" and len(e["message"]) < 200
    assert requests.get(server.url + "/healthz").status_code == 200


def test_415_content_types(server, small):
    body, ctype = form(small)
    cases = [None, "", "text/plain", "application/json", "multipart/mixed; boundary=relB0undary",
             "application/x-www-form-urlencoded", "image/pngx", "image/jpeg", "png"]
    for c in cases:
        headers = {} if c is None else {"Content-Type": c}
        r = requests.post(server.url + "/v1/filter", data=body, headers=headers, timeout=10)
        assert r.status_code == 415, (c, r.status_code, r.text)
        assert error_of(r)["code"] == "unsupported_media_type"
    # media types are case-insensitive and may carry parameters
    r = requests.post(server.url + "/v1/filter", data=small, headers={"Content-Type": "IMAGE/PNG; x=1"})
    assert r.status_code == 200, r.text
    r = requests.post(server.url + "/v1/filter", data=body, headers={"Content-Type": ctype.upper().replace(
        "BOUNDARY=RELB0UNDARY", "boundary=relB0undary")})
    assert r.status_code == 200, r.text


def test_413_from_content_length_before_the_body(make_server):
    s = make_server("--max-body-mb", "1")
    cap = 1 << 20
    before = metrics(s.url)
    for extra in ("Expect: 100-continue\r\n", ""):
        c = connect(s.port)
        t0 = time.time()
        c.sendall(post_head("/v1/filter", "multipart/form-data; boundary=b", cap + 1, extra))
        first = c.recv(12)
        assert first == b"HTTP/1.1 413", first  # never "HTTP/1.1 100"
        status, hdrs, body = read_response(c)
        c.close()
        assert time.time() - t0 < 2.0 * K
        e = json_error(body)
        assert e["code"] == "body_too_large" and "max-body-mb" in e["message"]
    # exactly the cap is read (and then refused for what it is, not for its size)
    c = connect(s.port)
    c.sendall(post_head("/v1/filter", "multipart/form-data; boundary=b", cap))
    c.sendall(b"\0" * cap)
    status, _, body = read_response(c)
    c.close()
    assert status == 400 and json_error(body)["code"] == "bad_multipart"
    after = assert_balanced(s.url)
    rej = total(after, "edged_rejections_total", reason="body_too_large") - \
        total(before, "edged_rejections_total", reason="body_too_large")
    assert rej == 2
    assert total(after, "edged_queue_wait_seconds_count") == total(before, "edged_queue_wait_seconds_count")


def test_413_chunked_past_the_cap_closes_the_connection(make_server):
    s = make_server("--max-body-mb", "1")
    c = connect(s.port)
    c.sendall(post_head("/v1/filter", "image/png", None, "Transfer-Encoding: chunked\r\n"))
    piece = b"\x89PNG" + b"\0" * 65532
    status = 0
    for _ in range(40):  # 2.5 MiB, never terminated
        try:
            c.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
        except OSError:
            break
    status, hdrs, body = read_response(c)
    assert status == 413 and hdrs["connection"] == "close"
    assert json_error(body)["code"] == "body_too_large"
    assert is_closed(c, 3.0)
    c.close()
    m = assert_balanced(s.url)
    assert total(m, "edged_queue_wait_seconds_count") == 0
    assert requests.get(s.url + "/healthz").status_code == 200


MALFORMED = [
    b"Content-Length: abc\r\n",
    b"Content-Length: -1\r\n",
    b"Content-Length: 1e3\r\n",
    b"Content-Length: 10\r\nContent-Length: 10\r\n",
    b"Content-Length: 10\r\nContent-Length: 12\r\n",
    b"Content-Length: 10, 10\r\n",
    b"Content-Length: 99999999999999999999999999\r\n",
    b"Content-Length: 10\r\nTransfer-Encoding: chunked\r\n",
    b"Transfer-Encoding: chunked\r\nContent-Length: 10\r\n",
    b"Transfer-Encoding: gzip\r\n",
]


def test_malformed_framing_is_refused_and_survived(server):
    before = metrics(server.url)
    for head in MALFORMED:
        data = b"POST /v1/filter HTTP/1.1\r\nHost: x\r\nContent-Type: image/png\r\n" + head + b"\r\n0123456789"
        status, hdrs, body = exchange(server.port, data, timeout=5)
        # libmicrohttpd answers some itself (HTML 400); edged answers the rest with its JSON
        assert status in (400, 411, 413, 501), (head, status, body[:200])
        if status == 413:
            assert b"99999" in head
        assert requests.get(server.url + "/healthz", timeout=5).status_code == 200
    # broken chunk framing
    for bad in (b"zz\r\nabc\r\n0\r\n\r\n", b"5\r\nabc\r\n0\r\n\r\n", b"-1\r\n\r\n"):
        data = post_head("/v1/filter", "image/png", None, "Transfer-Encoding: chunked\r\n") + bad
        status, _, _ = exchange(server.port, data, timeout=5)
        assert status in (0, 400, 415), status
    assert_balanced(server.url)
    after = metrics(server.url)
    assert total(after, "edged_queue_wait_seconds_count") == total(before, "edged_queue_wait_seconds_count")


def test_slowloris_headers_cut_nothing_queued(make_server):
    s = make_server("--request-timeout-s", "2", "--conn-timeout-s", "30")
    before = metrics(s.url)
    c = connect(s.port)
    head = post_head("/v1/filter", "image/png", 100)
    t0, cut = time.time(), None
    for b in head[:-2]:  # never completes the header block
        try:
            c.sendall(bytes([b]))
        except OSError:
            cut = time.time() - t0
            break
        if is_closed(c, 0.4):
            cut = time.time() - t0
            break
    c.close()
    assert cut is not None and cut < 4.5 * K, cut  # request timeout 2 s, reaper tick 0.1 s
    after = metrics(s.url)
    assert total(after, "edged_requests_accepted_total") == total(before, "edged_requests_accepted_total") + 1  # /metrics
    assert total(after, "edged_queue_wait_seconds_count") == 0
    assert any(x.get("event") == "request_timeout" for x in s.log_lines())


def test_slow_body_cut_nothing_queued(make_server, small):
    s = make_server("--request-timeout-s", "2", "--conn-timeout-s", "30")
    c = connect(s.port)
    c.sendall(post_head("/v1/filter", "image/png", 100000))
    t0, cut = time.time(), None
    for _ in range(40):
        try:
            c.sendall(small[:50])
        except OSError:
            cut = time.time() - t0
            break
        if is_closed(c, 0.3):
            cut = time.time() - t0
            break
    c.close()
    assert cut is not None and cut < 4.5 * K, cut
    m = assert_balanced(s.url)
    assert total(m, "edged_requests_total", code="499") == 1
    assert total(m, "edged_queue_wait_seconds_count") == 0


def test_slow_reader_cut_by_idle_timeout(make_server):
    """A client that never reads a large answer holds nothing forever."""
    s = make_server("--conn-timeout-s", "2")
    big = png_bytes(random_image(1500, 1500, 3, seed=2), level=1)
    body, ctype = form(big, '{"filter":"custom","taps":[[1]],"png_level":0,"variant":"cpu"}')
    c = connect(s.port)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    c.sendall(post_head("/v1/filter", ctype, len(body)) + body)
    t0 = time.time()
    # judged on the sample that ended the wait: a later /metrics call could still count the one
    # before it, whose completion runs a moment after the client has read it
    while (in_flight := total(metrics(s.url), "edged_requests_in_flight")) > 1 and time.time() - t0 < 15 * K:
        time.sleep(0.2)
    assert in_flight == 1, "the unread answer still holds its request"
    c.close()
    assert_balanced(s.url)


def test_disconnect_mid_upload_balances(make_server, small):
    s = make_server()
    for n in (0, 10, 500):
        c = connect(s.port)
        c.sendall(post_head("/v1/filter", "image/png", 100000) + small[:n])
        time.sleep(0.1)
        c.close()
    m = assert_balanced(s.url)
    assert total(m, "edged_requests_total", code="499") == 3
    assert total(m, "edged_queue_wait_seconds_count") == 0
    assert requests.post(s.url + "/v1/filter", data=small, headers={"Content-Type": "image/png"}).status_code == 200


def test_disconnect_while_queued_balances(make_server, small):
    s = make_server("--cpu-workers", "1")
    side = 512 if K < 20 else 128
    body, ctype = form(png_bytes(random_image(side, side, 3, seed=4)), SLOW)  # ~1-2 s of one core
    with cf.ThreadPoolExecutor(1) as ex:
        first = ex.submit(requests.post, s.url + "/v1/filter", data=body, headers={"Content-Type": ctype})
        until = time.time() + 10
        while total(metrics(s.url), "edged_requests_in_flight") < 2 and time.time() < until:
            time.sleep(0.01)
        time.sleep(0.3)  # its decode (a few ms) is done: its job holds the only CPU worker
        qbody, qctype = form(small, '{"variant":"cpu_serial"}')
        c = connect(s.port)
        c.sendall(post_head("/v1/filter", qctype, len(qbody)) + qbody)
        until = time.time() + 10
        while total(metrics(s.url), "edged_queue_depth") < 1 and time.time() < until:
            time.sleep(0.01)
        assert total(metrics(s.url), "edged_queue_depth") == 1  # queued behind the slow job
        c.close()  # gone while its job waits
        assert first.result().status_code == 200
    m = assert_balanced(s.url)
    assert total(m, "edged_queue_depth") == 0
    assert requests.post(s.url + "/v1/filter", data=small, headers={"Content-Type": "image/png"}).status_code == 200


def test_health_and_ready_fast_under_overload(make_server, slow_png):
    s = make_server("--cpu-workers", "1", "--queue-depth", "4", "--threads", "1")
    body, ctype = form(slow_png, SLOW)
    stop = threading.Event()

    def flood():
        codes = []
        while not stop.is_set():
            codes.append(requests.post(s.url + "/v1/filter", data=body, headers={"Content-Type": ctype},
                                       timeout=60).status_code)
        return codes

    with cf.ThreadPoolExecutor(12) as ex:
        futs = [ex.submit(flood) for _ in range(12)]
        time.sleep(1.0)
        lat, ready = [], []
        for _ in range(30):
            t0 = time.time()
            assert requests.get(s.url + "/healthz", timeout=5).status_code == 200
            lat.append(time.time() - t0)
            t0 = time.time()
            ready.append(requests.get(s.url + "/readyz", timeout=5).status_code)
            lat.append(time.time() - t0)
            time.sleep(0.05)
        stop.set()
        codes = [c for f in futs for c in f.result()]
    assert set(codes) <= {200, 429}, set(codes)
    assert 429 in codes, "the flood never filled the queue"
    assert set(ready) == {200}, ready  # overload is answered 429, never with unreadiness
    assert statistics.median(lat) < 0.05 * K and max(lat) < 0.5 * K, (statistics.median(lat), max(lat))
    assert_balanced(s.url)
