"""test_budgets.py — docs/reliability.md "Budgets": a CPU job over --max-job-cpu-s is refused
(422 job_too_costly) before it is queued, Canny priced as it runs, a running job is cancelled at
--job-timeout-s (504) or when its client leaves (499, counted) and stops using CPU (Canny too),
drain keeps its timeout with a long job running, the memory budget refuses with 503 memory_budget
and Retry-After and is back to 0 afterwards, a body reserves what has arrived, stalled uploads
hold at most their address's share and the bodies' half and are cut below --min-body-rate-kb,
/healthz and /readyz answer under 256 idle connections, a connection past a cap gets JSON instead
of a reset, stalled uploads do not starve other clients nor make /readyz 503, and /readyz stays
200 under twice the load the server can take (readiness is "can serve": overload is answered 429
per request)."""
import concurrent.futures as cf
import signal
import socket
import threading
import time

import pytest
import requests

from conftest import png_bytes, random_image
from helpers import (connect, cpu_seconds, error_of, is_closed, json_error, metrics, post_head, read_response,
                     slowdown, solid_png, total)

K = slowdown()
BIG = '{"filter":"gaussian","size":63,"color":"gray","variant":"cpu_serial"}'
# on a large black image: seconds of CPU, nearly all in the 63x63 pre-blur, which runs direct
CANNY = '{"filter":"canny","size":63,"variant":"cpu"}'
MIB = 1 << 20


def upload(url, png, params, timeout=60, path="/v1/filter"):
    return requests.post(url + path, files={"image": ("x.png", png, "image/png"), "params": (None, params)},
                         timeout=timeout)


@pytest.fixture(scope="module")
def png2000():
    return png_bytes(random_image(2000, 2000, 1, seed=5))


@pytest.fixture(scope="module")
def png1000():
    return png_bytes(random_image(1000, 1000, 1, seed=6))


@pytest.fixture(scope="module")
def black4000():
    return solid_png(4000, 4000)


def budget_bytes(url):
    return total(metrics(url), "edged_memory_budget_bytes")


def wait_budget(url, below, timeout):
    until = time.time() + timeout
    while budget_bytes(url) > below and time.time() < until:
        time.sleep(0.05)
    return budget_bytes(url)


def wait_metric(url, name, want, timeout=10.0, **labels):
    until = time.time() + timeout
    while True:
        v = total(metrics(url), name, **labels)
        if v >= want or time.time() > until:
            return v
        time.sleep(0.05)


def test_costly_cpu_job_refused_before_queueing(server, png2000):
    t0 = time.time()
    r = upload(server.url, png2000, BIG)
    e = error_of(r)
    assert r.status_code == 422 and e["code"] == "job_too_costly", r.text
    assert "--max-job-cpu-s" in e["message"] and "variant=cpu" in e["message"], e
    assert time.time() - t0 < 5 * K
    r = upload(server.url, png2000, '{"filter":"gaussian","size":63,"color":"gray"}', path="/v1/compare")
    assert r.status_code == 422 and error_of(r)["code"] == "job_too_costly", r.text
    r = upload(server.url, png2000, '{"filter":"gaussian","size":63,"color":"gray","variant":"cpu"}')
    assert r.status_code == 200, r.text


def test_canny_priced_as_it_runs(server):
    """Canny's 63x63 pre-blur runs direct, 3969 taps a pixel: on 7000x7000 that is over the
    default 10 CPU seconds, for cpu and cpu_serial alike, so neither is offered as cheaper."""
    png = solid_png(7000, 7000)
    for variant in ("cpu", "cpu_serial"):
        r = upload(server.url, png, '{"filter":"canny","size":63,"variant":"%s"}' % variant)
        e = error_of(r)
        assert r.status_code == 422 and e["code"] == "job_too_costly", r.text
        assert "variant=cpu" not in e["message"], e
    r = upload(server.url, png, '{"filter":"canny","variant":"cpu"}')  # no blur: estimated at 1.5 s
    assert r.status_code == 200, r.text


def test_cancelled_canny_stops_using_cpu(make_server, black4000):
    """A Canny job cancelled at --job-timeout-s (504), or by its client leaving, stops: the server
    uses next to no CPU afterwards (the job has seconds left), and its reservation is given back
    once the job has stopped and freed its memory. CPU jobs on the CPU backend, one compute thread:
    the job outlasts its limit on a fast machine too."""
    s = make_server("--backend", "cpu", "--threads", "1", "--job-timeout-s", "1", "--max-job-cpu-s", "86400",
                    "--cpu-workers", "1")
    r = upload(s.url, black4000, CANNY)
    assert r.status_code == 504 and "cancelled" in error_of(r)["message"], r.text
    time.sleep(0.3 * K)
    c0 = cpu_seconds(s.proc.pid)
    time.sleep(2)
    assert cpu_seconds(s.proc.pid) - c0 < 0.3 * K, "the job went on after its 504"
    assert wait_budget(s.url, 0, 5 * K) == 0
    c = connect(s.port)
    c.sendall(post_head("/v1/filter?filter=canny&size=63&variant=cpu", "image/png", len(black4000)) + black4000)
    time.sleep(0.5)  # the job runs (about 3 CPU seconds on the 2-core VM)
    c.close()
    assert wait_metric(s.url, "edged_rejections_total", 1, 5 * K, reason="client_closed") == 1
    time.sleep(0.3 * K)
    c0 = cpu_seconds(s.proc.pid)
    time.sleep(2)
    assert cpu_seconds(s.proc.pid) - c0 < 0.3 * K, "the job went on after its client left"
    assert wait_budget(s.url, 0, 5 * K) == 0


def test_running_job_cancelled_at_its_limit(make_server, png1000, png2000):
    s = make_server("--job-timeout-s", "1", "--max-job-cpu-s", "86400", "--cpu-workers", "1")
    t0 = time.time()
    r = upload(s.url, png2000, BIG)
    took = time.time() - t0
    assert r.status_code == 504 and error_of(r)["code"] == "deadline_exceeded", r.text
    assert "job-timeout-s" in error_of(r)["message"]
    assert took < 3 * K, took
    t0 = time.time()  # the worker is free again at once: the cancelled job stopped
    r = upload(s.url, png1000, '{"filter":"edge"}')
    assert r.status_code == 200 and time.time() - t0 < 2 * K, (r.status_code, time.time() - t0)


def test_client_gone_cancels_and_counts(make_server, png1000, png2000):
    s = make_server("--max-job-cpu-s", "86400", "--cpu-workers", "1")
    body = (b"--B\r\nContent-Disposition: form-data; name=\"image\"\r\nContent-Type: image/png\r\n\r\n" +
            png2000 + b"\r\n--B\r\nContent-Disposition: form-data; name=\"params\"\r\n\r\n" + BIG.encode() +
            b"\r\n--B--\r\n")
    c = connect(s.port)
    c.sendall(post_head("/v1/filter", "multipart/form-data; boundary=B", len(body)) + body)
    time.sleep(1.0)
    c.close()
    assert wait_metric(s.url, "edged_rejections_total", 1, 5 * K, reason="client_closed") == 1
    t0 = time.time()
    r = upload(s.url, png1000, '{"filter":"edge"}')
    assert r.status_code == 200 and time.time() - t0 < 2 * K, (r.status_code, time.time() - t0)
    gone = [x for x in s.log_lines() if x.get("status") == 499]
    assert gone and gone[0].get("error") == "client_closed", s.log_text()[-3000:]


@pytest.mark.parametrize("job", ["gaussian_serial", "canny"])
def test_drain_keeps_its_timeout_with_a_long_job(make_server, request, job):
    png, params = (request.getfixturevalue("png2000"), BIG) if job != "canny" else \
        (request.getfixturevalue("black4000"), CANNY)
    # one compute thread: the job runs for seconds past the drain even on an idle fast machine
    s = make_server("--max-job-cpu-s", "86400", "--drain-timeout-s", "1", "--threads", "1")
    with cf.ThreadPoolExecutor(1) as ex:
        fut = ex.submit(upload, s.url, png, params)
        time.sleep(1.0)
        t0 = time.time()
        s.signal(signal.SIGTERM)
        s.proc.wait(10 * K)
        took = time.time() - t0
        r = fut.result()
    assert took < 1 + 3 * K, took
    assert r.status_code == 503 and "Retry-After" in r.headers, r.text


def test_memory_budget_refuses_with_retry_after_and_is_given_back(make_server, png1000):
    # 1500x1500 gray: admitted with its image (4.4 MB), once the largest stage fits, the serial
    # job's 21.5 MB working set taken while it runs (service_image_bytes), its body 2.2 MiB as it
    # arrives: with 64 MiB two are admitted while a 2-second job runs, the others wait 0.5 s, 503
    # the CPU backend whatever EDGED_TEST_BACKEND says: the reservations are those of CPU jobs
    s = make_server("--backend", "cpu", "--max-memory-mb", "64", "--max-job-cpu-s", "86400", "--cpu-workers", "1",
                    "--job-timeout-s", "600", "--queue-deadline-ms", "600000")  # a sanitized build runs jobs slower
    slow = '{"filter":"gaussian","size":31,"color":"gray","variant":"cpu_serial"}'
    png1500 = png_bytes(random_image(1500, 1500, 1, seed=8))
    with cf.ThreadPoolExecutor(6) as ex:
        futs = [ex.submit(upload, s.url, png1500, slow) for _ in range(6)]
        codes = [f.result() for f in futs]
    refused = [r for r in codes if r.status_code == 503]
    assert refused and all(r.status_code in (200, 503) for r in codes), [r.status_code for r in codes]
    r = refused[0]
    assert error_of(r)["code"] == "memory_budget" and r.headers.get("Retry-After"), r.text
    # each answer's bytes are given back when its request completes, just after the client read it
    assert wait_budget(s.url, 0, 5 * K) == 0
    assert total(metrics(s.url), "edged_rejections_total", reason="memory_budget") == len(refused)
    # a body mid-upload holds what has arrived (33 MiB here) until it ends; an image that needs
    # more than is left is refused, the server stays ready, and the budget recovers
    c = connect(s.port)
    c.sendall(post_head("/v1/filter", "image/png", 40 << 20) + b"\x89PNG" + b"\0" * (33 << 20))
    until = time.time() + 10 * K
    while total(metrics(s.url), "edged_memory_budget_bytes") < (33 << 20) and time.time() < until:
        time.sleep(0.05)
    big = png_bytes(random_image(1700, 1700, 1, seed=7))  # about 42 MB: over what is left
    b = upload(s.url, big, '{"filter":"edge"}')
    mid = requests.get(s.url + "/readyz", timeout=5)
    c.close()
    assert b.status_code == 503 and error_of(b)["code"] == "memory_budget", b.text
    assert mid.status_code == 200, mid.text
    until = time.time() + 5 * K
    while total(metrics(s.url), "edged_memory_budget_bytes") and time.time() < until:
        time.sleep(0.05)
    assert total(metrics(s.url), "edged_memory_budget_bytes") == 0


def test_health_under_256_idle_connections(make_server):
    s = make_server()  # --max-connections 256, --max-conn-per-ip 64
    idle = []
    try:
        for i in range(256):
            idle.append(connect(s.port, source="127.0.0.%d" % (1 + i % 4)))
        time.sleep(0.3)
        for path in ("/healthz", "/readyz"):
            c = connect(s.port, source="127.0.0.9")
            c.sendall(("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path).encode())
            st, _, body = read_response(c, 5)
            c.close()
            assert st == 200, (path, st, body)
        # past the per-address cap: JSON 429, not a reset
        c = connect(s.port, source="127.0.0.1")
        c.sendall(post_head("/v1/filter", "image/png", 0))
        st, hdrs, body = read_response(c, 5)
        c.close()
        assert st == 429 and json_error(body)["code"] == "queue_full", (st, body)
        assert "max-conn-per-ip" in json_error(body)["message"] and hdrs.get("connection") == "close"
        # one client over its own cap says nothing of the server: still ready
        c = connect(s.port, source="127.0.0.9")
        c.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(c, 5)[0] == 200
        c.close()
        # past the global cap: JSON 503
        c = connect(s.port, source="127.0.0.10")
        c.sendall(post_head("/v1/filter", "image/png", 0))
        st, hdrs, body = read_response(c, 5)
        c.close()
        assert st == 503 and "max-connections" in json_error(body)["message"], (st, body)
    finally:
        for c in idle:
            c.close()


def test_over_cap_idle_connection_is_cut_quickly(make_server):
    s = make_server("--max-conn-per-ip", "2")
    # an address of their own: the fixture's readiness probes come from 127.0.0.1 and may still be open
    held = [connect(s.port, source="127.0.0.7") for _ in range(2)]
    for c in held:  # answered, so both are counted before the third arrives (each has its own thread)
        c.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        assert read_response(c, 5)[0] == 200
    extra = connect(s.port, source="127.0.0.7")
    t0 = time.time()
    extra.settimeout(10)
    try:
        got = extra.recv(100)
    except (ConnectionResetError, socket.timeout):
        got = b"x"
    assert got == b"" and time.time() - t0 < 4 * K, (got, time.time() - t0)
    for c in held + [extra]:
        c.close()


def test_stalled_uploads_do_not_starve_others(make_server, png1000):
    # max_active = queue depth 2 + 2 codec threads x 2 + 1 worker = 7 places; 12 stalled uploads
    s = make_server("--queue-depth", "2", "--threads", "2", "--cpu-workers", "1")
    stalled = []
    try:
        for _ in range(12):
            c = connect(s.port)
            c.sendall(post_head("/v1/filter", "image/png", 1 << 20) + b"\x89PNG" + b"\0" * 1000)
            stalled.append(c)
        time.sleep(0.3)
        r = requests.post(s.url + "/v1/filter", data=png1000, headers={"Content-Type": "image/png"}, timeout=30)
        assert r.status_code == 200, r.text
        assert requests.get(s.url + "/readyz", timeout=5).status_code == 200
    finally:
        for c in stalled:
            c.close()


def stall(port, source, announce, send):
    """A connection that sends the headers of a body of `announce` bytes, `send` of them, and stops."""
    c = connect(port, source=source)
    c.sendall(post_head("/v1/filter", "image/png", announce) + b"\x89PNG" + b"\1" * (send - 4))
    return c


def test_stalled_body_reserves_what_arrived(make_server):
    """32 MiB and one byte of a body of 40 MiB announced hold 32.25 MiB of the budget (what arrived,
    rounded up to a 256 KiB step), not the 40 MiB the buffer was allocated at: its pages beyond what
    arrived are never touched."""
    s = make_server("--max-memory-mb", "1024", "--min-body-rate-kb", "0")
    c = stall(s.port, "127.0.0.2", 40 * MIB, 32 * MIB + 1)
    until = time.time() + 10 * K
    while budget_bytes(s.url) < 32 * MIB and time.time() < until:
        time.sleep(0.05)
    held = budget_bytes(s.url)
    c.close()
    assert 32 * MIB < held <= 32 * MIB + (256 << 10), held / MIB
    assert wait_budget(s.url, 0, 5 * K) == 0


def test_stalled_uploads_hold_their_share_only(make_server, png1000):
    """Bodies still arriving hold at most half the budget, one address a quarter: with 64 MiB and
    8 MiB bodies, two stalled 6 MiB uploads fill an address's 16 MiB and its next ones are 429,
    while requests from another address are served; stalled uploads from more addresses fill the
    bodies' 32 MiB, and the next body is 503, the rest of the budget left to images. /readyz stays
    200 all along: a stalled upload says nothing of whether the server can serve. Below
    --min-body-rate-kb the stalled uploads are cut, and the budget is back to 0."""
    s = make_server("--max-memory-mb", "64", "--max-body-mb", "8", "--min-body-rate-kb", "16")
    held, refused = [], []
    try:
        for _ in range(4):
            c = stall(s.port, "127.0.0.2", 8 * MIB, 6 * MIB)
            (held if not is_closed(c, 0.5 * K) else refused).append(c)
        assert len(held) == 2 and len(refused) == 2, (len(held), len(refused))
        c = connect(s.port, source="127.0.0.2")
        c.sendall(post_head("/v1/filter", "image/png", 8 * MIB) + b"\x89PNG" + b"\1" * (6 * MIB))
        st, _, body = read_response(c, 5 * K)
        c.close()
        assert st == 429 and "share of the memory budget" in json_error(body)["message"], (st, body)
        r = requests.post(s.url + "/v1/filter", data=png1000, headers={"Content-Type": "image/png"}, timeout=30,
                          params={"filter": "edge"})  # from 127.0.0.1
        assert r.status_code == 200, r.text
        assert requests.get(s.url + "/readyz", timeout=5).status_code == 200
        for i in range(3):  # 12 + 18 MiB of the bodies' 32
            held.append(stall(s.port, "127.0.0.%d" % (10 + i), 8 * MIB, 6 * MIB))
        c = connect(s.port, source="127.0.0.20")
        c.sendall(post_head("/v1/filter", "image/png", 8 * MIB) + b"\x89PNG" + b"\1" * (6 * MIB))
        st, _, body = read_response(c, 5 * K)
        c.close()
        assert st == 503 and "their part of the memory budget" in json_error(body)["message"], (st, body)
        assert budget_bytes(s.url) <= 32 * MIB, budget_bytes(s.url) / MIB
        assert requests.get(s.url + "/readyz", timeout=5).status_code == 200
        # no byte for a window of 5 s: cut, and every reservation given back
        t0 = time.time()
        assert all(is_closed(c, 12 * K) for c in held), "a stalled upload was not cut"
        assert time.time() - t0 < 12 * K
        assert wait_budget(s.url, 0, 5 * K) == 0
    finally:
        for c in held + refused:
            c.close()


def test_ready_under_twice_the_load(make_server, png1000):
    # 4 image requests fit (queue depth 1 + 2 codec threads x 1 + 1 worker); 8 clients send back
    # to back: half of what they send is refused at any time
    s = make_server("--queue-depth", "1", "--threads", "1", "--cpu-workers", "1", "--max-job-cpu-s", "86400")
    slow = '{"filter":"gaussian","size":31,"color":"gray","variant":"cpu_serial"}'
    stop = threading.Event()

    def client():
        got = []
        while not stop.is_set():
            r = upload(s.url, png1000, slow)
            got.append((r.status_code, r.headers.get("Retry-After")))
        return got

    with cf.ThreadPoolExecutor(8) as ex:
        futs = [ex.submit(client) for _ in range(8)]
        until = time.time() + 3.0 * K
        ready = []
        while time.time() < until:
            ready.append(requests.get(s.url + "/readyz", timeout=5 * K).status_code)
            time.sleep(0.05)
        stop.set()
        answers = [a for f in futs for a in f.result()]
    codes = [c for c, _ in answers]
    assert 429 in codes and 200 in codes, codes
    assert set(codes) <= {200, 429}, codes
    assert all(ra for c, ra in answers if c == 429), "a 429 without Retry-After"
    assert ready and set(ready) == {200}, ready
    m = metrics(s.url)
    assert total(m, "edged_ready") == 1 and total(m, "edged_rejections_total", reason="queue_full") >= 1
