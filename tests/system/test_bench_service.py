"""test_bench_service.py — a short run of the service benchmark (tests/bench/service.sh: wrk against
two servers of the binary under test, interleaved): it exits 0, every case is served without errors,
and the CSV, the markdown table and the raw wrk outputs are written. Skipped where wrk is absent."""
import csv
import os
import shutil
import subprocess

import pytest

from conftest import BACKEND, BIN, ROOT
from helpers import slowdown

FILTERS = ["edge", "gaussian:7"]
CONNS = [1, 4]


def wrk_present():
    return shutil.which("wrk") is not None or os.access("/opt/deps/usr/bin/wrk", os.X_OK)


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    if not wrk_present():
        pytest.skip("wrk not installed (Debian package wrk: docker/deps.sh bench)")
    if slowdown() > 3:
        pytest.skip("the server runs under valgrind: a load run measures nothing there")
    out = tmp_path_factory.mktemp("service")
    env = dict(os.environ, BIN=BIN, BASE_BIN=BIN, BACKEND=BACKEND, DURATION="1s", WARMUP="1s", SIZES="256",
               FILTERS=",".join(FILTERS), CONNS=",".join(map(str, CONNS)), PORT="0", OUT=str(out))
    r = subprocess.run(["sh", "tests/bench/service.sh"], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=120)
    return r, out


def test_runs_and_prints_one_table(bench):
    r, _ = bench
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    table = [line for line in r.stdout.splitlines() if line.startswith("| 256² |")]
    assert len(table) == len(FILTERS) * len(CONNS), r.stdout
    assert all(" ×" in line for line in table), "two binaries: each cell pair carries its ratio"


def test_every_case_served_without_errors(bench):
    _, out = bench
    with open(out / "summary.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * len(FILTERS) * len(CONNS)
    assert {r["binary"] for r in rows} == {"new", "base"}
    for r in rows:
        assert float(r["req_s"]) > 0 and int(r["requests"]) > 0, r
        assert int(r["non2xx"]) == 0 and int(r["sock_errors"]) == 0, r
        assert int(r["served"]) >= int(r["requests"]), r  # wrk's count, plus what it left in flight
        assert 0 < float(r["p50_ms"]) <= float(r["p99_ms"]), r
        assert float(r["server_cpu_pct"]) > 0 and float(r["client_cpu_pct"]) > 0, r
        assert float(r["stage_decode"]) > 0 and float(r["stage_encode"]) > 0 and float(r["stage_total"]) > 0, r


def test_raw_outputs_and_servers_stopped(bench):
    _, out = bench
    for label in ("new", "base"):
        for flt in FILTERS:
            for n in CONNS:
                raw = (out / "raw" / ("%s_256_%s_c%d.txt" % (label, flt.replace(":", ""), n))).read_text()
                assert "Latency Distribution" in raw and "EDGED_WRK " in raw
        log = (out / ("server_%s.log" % label)).read_text()
        assert "signal 15" in log, "the script stops its servers with SIGTERM"
    assert (out / "summary.md").read_text().startswith("# edged service benchmark")
