"""test_mix.py — docs/reliability.md, F. Load, its last case: a mix of tiny and large images, where
small requests are not starved. Three clients keep posting 2000x2000 noisy RGB PNGs (large: over
--large-pixels; 15x15 Gaussian) while one client sends 64x64 requests (edge) one after another;
the small ones' slowest answer must come in under half the large ones' median. With --threads 2 and
--cpu-workers 2, large images hold at most one codec slot and one CPU worker, so a small request
never waits behind a large decode, encode or job."""
import concurrent.futures as cf
import statistics
import threading
import time

import numpy as np
import pytest
import requests

from conftest import png_bytes, random_image
from helpers import assert_balanced, slowdown

K = slowdown()  # timing limits scale with it (sanitizers, valgrind)

SIDE = 2000 if K < 20 else 700  # under valgrind a smaller large image keeps the wall time
LARGE_PIXELS = SIDE * SIDE // 4
RUN_S = 10.0
LARGE_CLIENTS = 3
MIN_SMALL = 20 if K < 20 else 5
# a 15x15 Gaussian of the large image: ~0.1 s of kernel and ~0.2 s of encode per request here
LARGE_QUERY = "?filter=gaussian&size=15"


@pytest.fixture(scope="module")
def large_png():
    rng = np.random.default_rng(5)
    return png_bytes(rng.integers(0, 256, size=(SIDE, SIDE, 3), dtype=np.uint8), level=1)


@pytest.fixture(scope="module")
def small_png():
    return png_bytes(random_image(64, 64, 3, seed=6))


def post(session, url, png, query):
    """(status, seconds) of one POST /v1/filter with a raw PNG body (PNG answer)."""
    t0 = time.perf_counter()
    r = session.post(url + "/v1/filter" + query, data=png, headers={"Content-Type": "image/png"}, timeout=60 * K)
    return r.status_code, time.perf_counter() - t0


def mix(url, large_png, small_png):
    """Runs the mix for RUN_S seconds; returns ([(status, s)] of large, [(status, s)] of small)."""
    stop = threading.Event()

    def loop(png, query):
        out = []
        with requests.Session() as s:
            while not stop.is_set():
                out.append(post(s, url, png, query))
        return out

    with cf.ThreadPoolExecutor(LARGE_CLIENTS + 1) as ex:
        larges = [ex.submit(loop, large_png, LARGE_QUERY) for _ in range(LARGE_CLIENTS)]
        time.sleep(0.5)  # the large clients' first uploads are in: the small one starts under load
        small = ex.submit(loop, small_png, "")
        time.sleep(RUN_S)
        stop.set()
        return [x for f in larges for x in f.result()], small.result()


def test_small_requests_not_starved_by_large_ones(make_server, large_png, small_png):
    s = make_server("--threads", "2", "--cpu-workers", "2", "--large-pixels", str(LARGE_PIXELS))
    large, small = mix(s.url, large_png, small_png)
    codes = {c for c, _ in large + small}
    assert codes == {200}, codes
    large_s, small_s = [t for _, t in large], [t for _, t in small]
    med_large, max_small = statistics.median(large_s), max(small_s)
    print("large: %d requests, median %.0f ms; small: %d requests, median %.0f ms, max %.0f ms" %
          (len(large_s), med_large * 1e3, len(small_s), statistics.median(small_s) * 1e3, max_small * 1e3))
    assert len(large_s) >= LARGE_CLIENTS, "the large clients did not get through"
    assert len(small_s) >= MIN_SMALL, (len(small_s), max_small)
    assert max_small < 0.5 * med_large, (max_small, med_large)
    assert_balanced(s.url)
