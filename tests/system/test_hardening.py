"""test_hardening.py — docs/reliability.md and docs/security.md: signals that are not a drain
(SIGHUP, SIGUSR1, SIGUSR2) are logged and ignored with no request lost, SIGQUIT drains like
SIGTERM, an unparsable --host is a configuration error (exit 2), and every answer (pages, the API,
errors, the raw early refusal) carries the anti-sniffing and anti-framing headers."""
import concurrent.futures as cf
import os
import signal
import socket
import subprocess
import time

import pytest
import requests

from conftest import BIN, free_port, png_bytes, random_image
from helpers import connect, json_error, post_head, read_response, slowdown

K = slowdown()  # timing limits scale with it (sanitizers, valgrind)

# ~0.3-0.5 s of one core: the serial reference with a 63x63 kernel on a 384x384 image.
SLOW = '{"filter":"gaussian","size":63,"color":"gray","variant":"cpu_serial"}'
SECURITY = {"x-content-type-options": "nosniff", "x-frame-options": "DENY",
            "content-security-policy": "frame-ancestors 'none'"}


@pytest.fixture(scope="module")
def slow_png():
    side = 384 if K < 20 else 96
    return png_bytes(random_image(side, side, 3, seed=21))


def upload(url, png, params=None, timeout=60):
    files = {"image": ("x.png", png, "image/png")}
    if params is not None:
        files["params"] = (None, params)
    return requests.post(url + "/v1/filter", files=files, timeout=timeout)


def in_flight(s, png, n, during):
    """Posts n slow requests at once, calls during() while they run; returns their statuses."""
    with cf.ThreadPoolExecutor(n) as ex:
        futs = [ex.submit(upload, s.url, png, SLOW, 60 * K) for _ in range(n)]
        time.sleep(0.3)
        during()
        return [f.result().status_code for f in futs]


def signal_lines(s, name):
    return [x for x in s.log_lines() if x.get("event") == "signal" and name in x.get("msg", "")]


def test_hup_usr1_usr2_logged_and_ignored_with_requests_in_flight(make_server, slow_png):
    s = make_server("--cpu-workers", "2")
    names = ("SIGHUP", "SIGUSR1", "SIGUSR2")

    def send():
        for name in names:
            s.signal(getattr(signal, name))
            time.sleep(0.1)

    codes = in_flight(s, slow_png, 8, send)
    assert codes == [200] * 8, codes
    assert s.proc.poll() is None
    assert requests.get(s.url + "/readyz", timeout=5).status_code == 200
    for name in names:
        assert len(signal_lines(s, name)) == 1, (name, s.log_text()[-3000:])
    assert not [x for x in s.log_lines() if x.get("event") == "drain"]
    # make_server ends it with SIGTERM and asserts exit 0: the drain still works


def test_sigquit_drains_like_sigterm(make_server, slow_png):
    s = make_server("--cpu-workers", "2", "--drain-grace-ms", "100")
    codes = in_flight(s, slow_png, 6, lambda: s.signal(signal.SIGQUIT))
    assert codes == [200] * 6, codes  # every request admitted before the signal is finished
    assert s.proc.wait(30 * K) == 0
    drains = [x for x in s.log_lines() if x.get("event") == "drain"]
    assert len(drains) == 1 and "signal %d" % signal.SIGQUIT in drains[0]["msg"], drains
    assert s.log_lines()[-1]["event"] == "exit"


@pytest.mark.parametrize("host", ["nope", "1.2.3", "256.0.0.1", "::1", "127.0.0.1 "])
def test_unparsable_host_exits_2(host):
    p = subprocess.run([BIN, "serve", "--host", host, "--port", str(free_port()), "--backend", "cpu"],
                       capture_output=True, text=True, timeout=30 * K)
    assert p.returncode == 2, (host, p.returncode, p.stderr[-2000:])
    assert "--host (EDGED_HOST): '%s' is not an IPv4 address" % host in p.stderr, p.stderr[-2000:]


def test_unparsable_host_from_environment_exits_2():
    p = subprocess.run([BIN, "serve", "--backend", "cpu"], capture_output=True, text=True, timeout=30 * K,
                       env=dict(os.environ, EDGED_HOST="localhost"))
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    assert "--host (EDGED_HOST): 'localhost' is not an IPv4 address" in p.stderr, p.stderr[-2000:]


def test_unbindable_host_is_a_runtime_failure():
    # 192.0.2.1 (TEST-NET-1) parses but is no address of this machine: exit 1, not a usage error
    p = subprocess.run([BIN, "serve", "--host", "192.0.2.1", "--port", str(free_port()), "--backend", "cpu"],
                       capture_output=True, text=True, timeout=30 * K)
    assert p.returncode == 1, (p.returncode, p.stderr[-2000:])
    assert "cannot listen on 192.0.2.1" in p.stderr and "Cannot assign requested address" in p.stderr, p.stderr


def test_port_in_use_names_address_and_errno():
    with socket.socket() as held:
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        p = subprocess.run([BIN, "serve", "--host", "127.0.0.1", "--port", str(port), "--backend", "cpu"],
                           capture_output=True, text=True, timeout=30 * K)
    assert p.returncode == 1, (p.returncode, p.stderr[-2000:])
    assert "cannot listen on 127.0.0.1:%d: Address already in use" % port in p.stderr, p.stderr[-2000:]


def assert_security_headers(hdrs, what):
    hdrs = {k.lower(): v for k, v in hdrs.items()}
    for k, v in SECURITY.items():
        assert hdrs.get(k) == v, (what, k, hdrs)


def test_security_headers_on_every_answer(make_server):
    s = make_server("--max-body-mb", "1")
    for path in ("/", "/healthz", "/readyz", "/metrics", "/version", "/v1/filters", "/v1/variants",
                 "/openapi.yaml"):
        r = requests.get(s.url + path, timeout=10)
        assert r.status_code == 200, (path, r.status_code)
        assert_security_headers(r.headers, path)
    r = requests.head(s.url + "/healthz", timeout=10)
    assert_security_headers(r.headers, "HEAD /healthz")
    png = png_bytes(random_image(16, 16, 3, seed=3))
    r = upload(s.url, png, '{"filter":"sobel"}')
    assert r.status_code == 200 and r.headers["Content-Type"] == "image/png", r.text
    assert_security_headers(r.headers, "POST /v1/filter")
    for method, path, status in (("GET", "/nowhere", 404), ("DELETE", "/v1/filter", 405)):
        r = requests.request(method, s.url + path, timeout=10)
        assert r.status_code == status, (method, path, r.status_code)
        assert_security_headers(r.headers, path)
    r = upload(s.url, b"not a png")
    assert r.status_code in (400, 415, 422), r.text
    assert_security_headers(r.headers, "bad image")
    # the raw early refusal: a Content-Length over the body cap is answered before the body
    c = connect(s.port)
    c.sendall(post_head("/v1/filter", "multipart/form-data; boundary=b", (1 << 20) + 1))
    status, hdrs, body = read_response(c)
    c.close()
    assert status == 413 and json_error(body)["code"] == "body_too_large"
    assert_security_headers(hdrs, "raw 413")


def test_connection_cap_lowered_says_what_the_api_gets():
    """Under ulimit -n 200 the 256 connections (and the 32 of the probe reserve) do not fit: the
    warning names what the API gets (200 - 64 kept for files - 32 for probes = 104)."""
    import resource

    def low():
        resource.setrlimit(resource.RLIMIT_NOFILE, (200, 200))

    p = subprocess.Popen([BIN, "serve", "--host", "127.0.0.1", "--port", str(free_port()), "--backend", "cpu"],
                         stderr=subprocess.PIPE, text=True, preexec_fn=low)
    try:
        line = ""
        for line in p.stderr:
            if "lowered" in line or '"listening"' in line:
                break
    finally:
        p.terminate()
        p.wait(timeout=30 * K)
    assert "--max-connections 256 lowered to 104 (32 more kept for probes)" in line, line
