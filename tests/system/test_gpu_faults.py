"""test_gpu_faults.py — docs/reliability.md, G. Faults, on a GPU host, through the debug-only fault
switch (EDGED_FAULT, a `make debug GPU=1` build: -DEDGED_DEBUG=1): an illegal address, a trap and
a device assert poison the context -> /readyz 503 at once, every queued job 503, no 200 after the
fault, exit non-zero within seconds; a spinning kernel -> the watchdog does the same; GPU out of
memory for one job -> that job 503 + Retry-After, the service stays ready; on a host of two GPUs
or more, a stuck kernel on one of two devices -> it is fenced and shows so by its CUDA number in
/readyz (still 200), /version, the per-device metrics and the access lines, the other serving on;
an illegal address on one of two -> the CUDA runtime makes the error every device's, so both are
fenced and the process exits non-zero, every request answered 200 or 503. Skipped
(visibly) unless EDGED_FAULT_BIN names such a build and a GPU is there (two for the last):
tests/gpu_host/gpu_faults.sh runs it."""
import concurrent.futures as cf
import json
import os
import re
import time

import pytest
import requests

import conftest
from conftest import png_bytes, random_image

FAULT_BIN = os.environ.get("EDGED_FAULT_BIN", "")


def gpu_ready():
    if not FAULT_BIN or not os.path.exists(os.path.join(conftest.ROOT, FAULT_BIN)):
        return "set EDGED_FAULT_BIN to a `make debug GPU=1` build (tests/gpu_host/gpu_faults.sh does)"
    if os.system("nvidia-smi -L > /dev/null 2>&1") != 0:
        return "no GPU here"
    return ""


pytestmark = pytest.mark.skipif(bool(gpu_ready()), reason=gpu_ready() or "ok")


class FaultServer(conftest.Server):
    """The debug build with EDGED_FAULT armed; expected to die, so stop() does not insist on 0. The
    fault switch counts and hooks the submits of pixel jobs, so the PNG uploads stay pixel jobs
    (--gpu-png 0: decoded on the CPU, not left to the device decoder's batches)."""

    def __init__(self, fault, after, flags, extra_env=None):
        env = dict(os.environ, EDGED_FAULT=fault, EDGED_FAULT_AFTER=str(after), **(extra_env or {}))
        old = conftest.BIN
        conftest.BIN = os.path.join(conftest.ROOT, FAULT_BIN)
        try:
            one = [] if "--gpus" in flags else ["--gpus", "0"]  # one device unless the test asks for more
            super().__init__(["--backend", "gpu", "--gpu-png", "0"] + one + list(flags), env=env)
        finally:
            conftest.BIN = old

    def finish(self, timeout=30):
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except Exception:
            self.proc.kill()
            self.proc.wait()
        text = self.log_text()
        os.unlink(self.log.name)
        return self.proc.returncode, text


def upload(url, png, params=None, timeout=60):
    files = {"image": ("x.png", png, "image/png")}
    if params:
        files["params"] = (None, json.dumps(params))
    try:
        return requests.post(url + "/v1/filter", files=files, timeout=timeout)
    except requests.ConnectionError:
        return None  # the listener closed for the restart: never accepted


@pytest.fixture(scope="module")
def pngs():
    return [png_bytes(random_image(512, 512, 3, seed=i)) for i in range(8)]


def ready_status(url):
    try:
        return requests.get(url + "/readyz", timeout=2).status_code
    except requests.ConnectionError:
        return 0


@pytest.mark.parametrize("fault", ["illegal", "trap", "assert", "spin"])
def test_fatal_gpu_fault(fault, pngs):
    # one stream: at the fault exactly one job is on the device and the rest wait in the queue
    flags = ["--streams", "1", "--gpu-watchdog-ms", "1500", "--queue-depth", "16"]
    s = FaultServer(fault, 3, flags, {"EDGED_FAULT_SPIN_MS": "60000"})
    try:
        params = {"filter": "gaussian", "size": 31, "variant": "naive"}  # a few ms of GPU each
        for i in range(2):  # jobs 1 and 2: before the fault
            r = upload(s.url, pngs[i], params)
            assert r is not None and r.status_code == 200, r and r.text
        t_fault = time.time()
        with cf.ThreadPoolExecutor(6) as ex:
            futs = [ex.submit(upload, s.url, pngs[2 + i], params) for i in range(6)]  # job 3 faults
            unready_at = None
            while time.time() - t_fault < 15 and unready_at is None:
                if ready_status(s.url) != 200:
                    unready_at = time.time() - t_fault
                time.sleep(0.02)
            answers = [f.result() for f in futs]
        assert unready_at is not None, "still ready 15 s after the fault"
        limit = 1.0 if fault != "spin" else 1.5 + 1.0  # at once; spin: at the watchdog
        assert unready_at < limit, "unready only %.2f s after the fault" % unready_at
        got = [a.status_code for a in answers if a is not None]
        assert 200 not in got, "a 200 after the fault: %s" % got
        assert set(got) <= {503}, got
        for a in answers:
            if a is not None:
                assert a.json()["error"]["code"] in ("gpu_fatal", "unavailable"), a.text
                assert a.json()["error"]["message"] == "a GPU failed; retry after Retry-After seconds" or \
                    a.json()["error"]["code"] == "unavailable", a.text  # no driver text in answers
                assert a.headers.get("Retry-After")
        t_exit = time.time()
        rc = s.proc.wait(20)
        assert rc != 0, "exit status 0 after a fatal GPU error"
        assert time.time() - t_fault < 20
    finally:
        rc, log = s.finish()
    lines = [json.loads(x) for x in log.splitlines() if x.startswith("{")]
    assert any(x.get("event") == "gpu_fatal" for x in lines), log[-3000:]
    assert any(x.get("event") == "exit" and x["level"] == "error" for x in lines), log[-3000:]
    ok_after = [x for x in lines if x.get("event") == "request" and x.get("path") == "/v1/filter" and
                x["status"] == 200]
    assert len(ok_after) == 2, "only jobs 1 and 2 may succeed: %d" % len(ok_after)
    print("%s: unready after %.2f s, exit %d %.1f s after the fault" % (fault, unready_at, rc, t_exit - t_fault))


def test_gpu_oom_one_job(pngs):
    big = png_bytes(random_image(2048, 2048, 3, seed=77), level=1)
    s = FaultServer("oom", 1, ["--streams", "2"])
    try:
        r = upload(s.url, big)  # job 1: the device memory is taken while it is submitted
        assert r is not None and r.status_code == 503, r and r.text
        assert r.json()["error"]["code"] == "gpu_out_of_memory" and r.headers["Retry-After"] == "1"
        assert ready_status(s.url) == 200  # the service stays ready
        for png in (big, pngs[0]):
            r = upload(s.url, png)
            assert r is not None and r.status_code == 200, r and r.text
        m = requests.get(s.url + "/metrics").text
        assert 'edged_rejections_total{reason="gpu_out_of_memory"} 1' in m
        s.signal()
        assert s.proc.wait(30) == 0
    finally:
        rc, log = s.finish()
    assert rc == 0 and "injecting oom" in log


def gpu_count():
    return len([x for x in os.popen("nvidia-smi -L 2>/dev/null").read().splitlines() if x.startswith("GPU ")])


def test_one_gpu_of_two_fenced_shows_per_device(pngs):
    """A stuck kernel on GPU 1 (the watchdog's case: a fault that stays on its device)."""
    if gpu_count() < 2:
        pytest.skip("one GPU here: the fencing of one device of several needs two")
    s = FaultServer("spin", 1, ["--gpus", "0,1", "--streams", "1", "--log-format", "json",
                                "--gpu-watchdog-ms", "1500"], {"EDGED_FAULT_DEVICE": "1", "EDGED_FAULT_SPIN_MS": "600000"})
    params = {"filter": "gaussian", "size": 31, "variant": "naive"}
    try:
        before = requests.get(s.url + "/version", timeout=10).json()["devices"]
        assert [(d["device"], d["state"]) for d in before] == [(0, "up"), (1, "up")], before
        fenced, until = None, time.time() + 30
        while fenced is None and time.time() < until:  # until device 1 has taken a job and faulted
            with cf.ThreadPoolExecutor(4) as ex:
                answers = list(ex.map(lambda i: upload(s.url, pngs[i % len(pngs)], params), range(8)))
            assert all(a is not None and a.status_code in (200, 503) for a in answers), answers
            devices = requests.get(s.url + "/version", timeout=10).json()["devices"]
            fenced = next((d for d in devices if d["state"] == "fenced"), None)
        assert fenced and fenced["device"] == 1 and fenced["fault"], devices
        ready = requests.get(s.url + "/readyz", timeout=10)
        assert ready.status_code == 200 and ready.json()["devices"] == devices, ready.text
        for i in range(4):  # device 0 serves on
            r = upload(s.url, pngs[i], params)
            assert r is not None and r.status_code == 200, r and r.text
        m = requests.get(s.url + "/metrics", timeout=10).text
        for line in ('edged_gpu_devices{state="up"} 1', 'edged_gpu_devices{state="fenced"} 1',
                     'edged_gpu_device_up{device="0",', 'edged_gpu_device_up{device="1",'):
            assert line in m, line
        assert re.search(r'^edged_gpu_device_up\{device="1",name="[^"]*"\} 0$', m, re.M), m
        assert "edged_gpu_fatal 0" in m
        print("retried on device 1:", re.findall(r'^edged_gpu_device_retried_total\{device="1"\} (\S+)$', m, re.M))
        assert s.proc.poll() is None, "the process exited with a device still up"
    finally:
        rc, log = s.finish()
    lines = [json.loads(x) for x in log.splitlines() if x.startswith("{")]
    served = [x for x in lines if x.get("event") == "request" and x.get("path") == "/v1/filter" and x["status"] == 200]
    assert served and all(x["backend"] == "gpu" and x["device"] in (0, 1) for x in served), served[:3]
    assert served[-1]["device"] == 0, served[-1]  # after the fence only device 0 serves
    assert any(x.get("event") == "gpu_fenced" for x in lines), log[-3000:]


def test_sticky_fault_on_one_gpu_ends_the_process(pngs):
    """An illegal address on GPU 1 of two: the CUDA runtime makes a sticky error every device's
    (each later call on GPU 0 returns it too: tests/gpu_host/gpu_multi.sh's probe and
    docs/deployment.md), so both devices are fenced and the process exits non-zero for a restart,
    every request answered 200 or 503 with Retry-After."""
    if gpu_count() < 2:
        pytest.skip("one GPU here: a fault on one device of several needs two")
    s = FaultServer("illegal", 3, ["--gpus", "0,1", "--streams", "1", "--log-format", "json"],
                    {"EDGED_FAULT_DEVICE": "1"})
    params = {"filter": "gaussian", "size": 31, "variant": "naive"}
    try:
        t0, answers = time.time(), []
        while s.proc.poll() is None and time.time() - t0 < 30:
            with cf.ThreadPoolExecutor(4) as ex:
                answers += list(ex.map(lambda i: upload(s.url, pngs[i % len(pngs)], params), range(8)))
        got = [a.status_code for a in answers if a is not None]
        assert set(got) <= {200, 503}, got
        assert all(a.headers.get("Retry-After") for a in answers if a is not None and a.status_code == 503)
        rc = s.proc.wait(20)
        assert rc != 0, "exit status 0 after both devices failed"
    finally:
        rc, log = s.finish()
    lines = [json.loads(x) for x in log.splitlines() if x.startswith("{")]
    fatal = [x["msg"] for x in lines if x.get("event") == "gpu_fatal"]
    assert any(m.startswith("GPU 1:") for m in fatal) and any(m.startswith("GPU 0:") for m in fatal), fatal
    print("sticky fault on GPU 1 of 2: %d answers %s, exit %d; %s" % (len(got), sorted(set(got)), rc, fatal))
