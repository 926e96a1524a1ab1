"""conftest.py — fixtures for the integration tests: the real `edged serve` on a free loopback
port (backend from EDGED_TEST_BACKEND, default cpu), PNG helpers and the CLI oracle."""
import json
import os
import signal
import socket
import struct
import subprocess
import tempfile
import time
import zlib

import numpy as np
import pytest
import requests

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, os.environ.get("EDGED_BIN", "build/edged"))
# The API description as the build joins it (api/openapi/*.yaml, the Makefile) beside the binary
# under test (under valgrind runs, the binary the wrapper runs).
OPENAPI = os.path.join(os.path.dirname(os.path.join(ROOT, os.environ.get("EDGED_VG_BIN") or BIN)),
                       "openapi.yaml")
BACKEND = os.environ.get("EDGED_TEST_BACKEND", "cpu")
PNGSUITE = os.environ.get("EDGED_PNGSUITE", os.path.join(ROOT, "..", "shared", "pngsuite"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A running `edged serve`; stderr (the JSON log) goes to a file read by log_lines()."""

    def __init__(self, flags, env=None, wait_ready=True):
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.log = tempfile.NamedTemporaryFile(prefix="edged-", suffix=".log", delete=False)
        args = [BIN, "serve", "--host", "127.0.0.1", "--port", str(self.port), "--backend", BACKEND] + list(flags)
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=self.log, env=env, cwd=ROOT)
        self.wait("/readyz" if wait_ready else "/healthz")

    def wait(self, path, timeout=20.0):
        until = time.time() + timeout
        while time.time() < until:
            if self.proc.poll() is not None:
                raise RuntimeError("edged exited with %d:\n%s" % (self.proc.returncode, self.log_text()))
            try:
                if requests.get(self.url + path, timeout=1).status_code == 200:
                    return
            except requests.ConnectionError:
                pass
            time.sleep(0.05)
        raise RuntimeError("edged did not answer %s:\n%s" % (path, self.log_text()))

    def log_text(self):
        with open(self.log.name, encoding="utf-8", errors="replace") as f:
            return f.read()

    def log_lines(self):
        return [json.loads(line) for line in self.log_text().splitlines() if line.startswith("{")]

    def signal(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)

    def stop(self, timeout=30):
        """SIGTERM, wait; asserts a clean exit (0) and no sanitizer report in the log."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        text = self.log_text()
        os.unlink(self.log.name)
        assert "runtime error:" not in text and "Sanitizer" not in text, text[-4000:]
        assert self.proc.returncode == 0, "edged exited %d:\n%s" % (self.proc.returncode, text[-4000:])


@pytest.fixture(scope="session")
def server():
    """The shared server with default limits."""
    s = Server([])
    yield s
    s.stop()


@pytest.fixture
def make_server():
    """Factory for servers with their own flags; every one is stopped at teardown."""
    made = []

    def make(*flags, env=None, wait_ready=True):
        s = Server(flags, env=env, wait_ready=wait_ready)
        made.append(s)
        return s

    yield make
    problems = []
    for s in made:
        try:
            s.stop()
        except AssertionError as e:
            problems.append(str(e))
    assert not problems, problems


def png_bytes(a, level=6):
    """PNG of a uint8 array (H x W gray, or H x W x C with C = 1..4), written here with zlib so
    that channel order is exactly the array's."""
    a = np.ascontiguousarray(a, dtype=np.uint8)
    h, w = a.shape[:2]
    c = 1 if a.ndim == 2 else a.shape[2]
    color = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    raw = b"".join(b"\x00" + a[y].tobytes() for y in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw, level)) + chunk(b"IEND", b""))


def png_decode(data):
    """Pixels of a PNG as H x W (one channel) or H x W x C in RGB(A) order, 1-bit scaled to 0/255."""
    import cv2
    a = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    assert a is not None, "undecodable PNG"
    if a.ndim == 3 and a.shape[2] == 3:
        a = a[..., ::-1]
    elif a.ndim == 3 and a.shape[2] == 4:
        a = a[..., [2, 1, 0, 3]]
    if a.dtype != np.uint8:
        a = (a.astype(np.float64) / 257.0).round().astype(np.uint8)
    return np.ascontiguousarray(a)


def random_image(h, w, c, seed):
    rng = np.random.default_rng(seed)
    # smooth-ish content so that filters give varied, non-trivial output
    base = rng.integers(0, 256, size=(h // 4 + 2, w // 4 + 2, c), dtype=np.uint8)
    a = np.repeat(np.repeat(base, 4, axis=0), 4, axis=1)[:h, :w]
    noise = rng.integers(0, 32, size=a.shape, dtype=np.uint8)
    a = (a.astype(np.int32) + noise).clip(0, 255).astype(np.uint8)
    return a[..., 0] if c == 1 else a


def cli_args(params):
    """`edged filter` options for a params dict."""
    args = []
    for k, v in params.items():
        if k in ("output",):
            continue
        if k == "ops":
            args += ["--ops", json.dumps(v)]
        elif k == "taps":
            args += ["--taps", ";".join(",".join(str(x) for x in row) for row in v)]
        elif k in ("normalize", "l2gradient"):
            args += ["--" + k] if v else []
        else:
            args += ["--" + k.replace("_", "-"), str(v)]
    return args


def oracle(png, params, variant):
    """Output of `edged filter` (the CLI) for the same input, parameters and variant."""
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "in.png"), os.path.join(d, "out.png")
        with open(src, "wb") as f:
            f.write(png)
        p = subprocess.run([BIN, "filter", src, dst, "--variant", variant] + cli_args(params),
                           capture_output=True, text=True)
        assert p.returncode == 0, "oracle failed: %s" % p.stderr
        with open(dst, "rb") as f:
            return png_decode(f.read())
