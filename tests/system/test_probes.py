"""test_probes.py — docs/reliability.md "Probes": the probe listener of --metrics-listen serves only
/metrics, /healthz and /readyz (GET, HEAD), answers while the server drains, and is where
`edged health` asks when EDGED_METRICS_LISTEN is set; and under a reconnect storm on the API port
(idle connections from several addresses, each socket the server closes replaced at once) every
probe on the probe listener answers 200, as /healthz on the API port does."""
import concurrent.futures as cf
import os
import signal
import subprocess
import sys
import time

import requests

from conftest import BIN, ROOT, free_port, png_bytes, random_image
from helpers import metrics, slowdown, total

sys.path.insert(0, os.path.join(ROOT, "tests", "bench"))
import conn_storm  # noqa: E402  (tests/bench: the same storm the measurements in docs/performance.md ran)

K = slowdown()
COSTLY = '{"filter":"gaussian","size":63,"color":"gray","variant":"cpu_serial"}'


def with_probe_port(make_server, *flags):
    mport = free_port()
    s = make_server("--metrics-listen", "127.0.0.1:%d" % mport, *flags)
    return s, "http://127.0.0.1:%d" % mport, mport


def test_probe_listener_serves_only_the_probes(make_server):
    s, murl, _ = with_probe_port(make_server)
    for path in ("/healthz", "/readyz", "/metrics"):
        assert requests.get(murl + path, timeout=5).status_code == 200, path
        assert requests.head(murl + path, timeout=5).status_code == 200, path
    assert requests.get(murl + "/readyz", timeout=5).json()["status"] == "ready"
    assert "edged_queue_depth" in requests.get(murl + "/metrics", timeout=5).text
    for path in ("/version", "/v1/filters", "/openapi.yaml", "/", "/web/app.js"):
        assert requests.get(murl + path, timeout=5).status_code == 404, path
    r = requests.post(murl + "/v1/filter", data=b"\x89PNG", headers={"Content-Type": "image/png"}, timeout=5)
    assert r.status_code == 404, r.text
    r = requests.post(murl + "/healthz", timeout=5)
    assert r.status_code == 405 and r.headers["Allow"] == "GET, HEAD", r.text
    assert requests.get(s.url + "/healthz", timeout=5).status_code == 200  # the API port keeps its probes


def test_probe_listener_configuration_errors():
    for value in ("9090", "localhost:9090", "127.0.0.1:0", "127.0.0.1:70000", "127.0.0.1:"):
        p = subprocess.run([BIN, "serve", "--metrics-listen", value], capture_output=True, text=True, timeout=30)
        assert p.returncode == 2 and "metrics-listen" in p.stderr, (value, p.stderr)
    p = subprocess.run([BIN, "serve", "--port", "18123", "--metrics-listen", "0.0.0.0:18123"], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 2 and "API's own address" in p.stderr, p.stderr


def test_probe_listener_answers_while_draining(make_server):
    # a job of many seconds keeps the drain going until --drain-timeout-s cancels it (503)
    s, murl, _ = with_probe_port(make_server, "--max-job-cpu-s", "86400", "--drain-timeout-s", "2")
    png = png_bytes(random_image(2000, 2000, 1, seed=3))
    with cf.ThreadPoolExecutor(1) as ex:
        job = ex.submit(requests.post, s.url + "/v1/filter", timeout=60 * K,
                        files={"image": ("x.png", png, "image/png"), "params": (None, COSTLY)})
        until = time.time() + 10 * K
        while total(metrics(murl), "edged_requests_in_flight") < 2 and time.time() < until:
            time.sleep(0.02)  # the job and this /metrics request
        s.signal(signal.SIGTERM)
        time.sleep(0.3)
        r = requests.get(murl + "/readyz", timeout=5)
        assert r.status_code == 503 and "draining" in r.json()["error"]["message"], r.text
        assert requests.get(murl + "/healthz", timeout=5).status_code == 200
        assert job.result().status_code == 503
    s.proc.wait(30)
    assert s.proc.returncode == 0


def test_health_asks_the_probe_listener(make_server):
    _, _, mport = with_probe_port(make_server)
    env = dict(os.environ, EDGED_METRICS_LISTEN="0.0.0.0:%d" % mport, EDGED_PORT=str(free_port()))
    for args in (["health"], ["health", "--live"]):
        p = subprocess.run([BIN] + args, capture_output=True, text=True, timeout=30, env=env)
        assert p.returncode == 0, (args, p.stderr)


def test_probes_answer_through_a_reconnect_storm(make_server):
    # 96 idle connections from 4 addresses (24 each, under --max-conn-per-ip 64) against
    # --max-connections 32 and its reserve of 32: the storm alone would fill both
    s, _, mport = with_probe_port(make_server, "--max-connections", "32")
    api, probe = ("127.0.0.1", s.port, "/healthz"), ("127.0.0.1", mport, "/healthz")
    ready = ("127.0.0.1", mport, "/readyz")
    res = conn_storm.storm_and_probe("127.0.0.1", s.port, [api, probe, ready], conns=96, addrs=4, rate=100,
                                     probes=20, every=0.1, timeout=2.0 * K, warmup=1.0 * K)
    tallies = list(res["probes"].values())
    assert tallies[1] == {"ok": 20} and tallies[2] == {"ok": 20}, res  # the probe listener: every probe
    assert tallies[0].get("ok", 0) >= 18, res  # the API port: its reserve holds room for probes
    assert res["reconnects_per_s"] > 10, res  # the storm did replace the sockets cut
    # below the connection cap nothing is cut: /healthz on the API port answers every time
    res = conn_storm.storm_and_probe("127.0.0.1", s.port, [api, probe], conns=24, addrs=4, rate=100, probes=10,
                                     every=0.1, timeout=2.0 * K, warmup=0.5 * K)
    assert all(t == {"ok": 10} for t in res["probes"].values()), res
    assert requests.get(s.url + "/healthz", timeout=5).status_code == 200
