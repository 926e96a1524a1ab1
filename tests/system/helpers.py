"""helpers.py — helpers of the system tests (tests/system): raw HTTP over sockets,
/metrics parsing and balance, process memory and fds from /proc, hand-built PNGs (chunks, bombs,
huge single-colour images) and a check that the binary under test is sanitized (ASan/valgrind
runs skip the assertions that measure memory or limit address space)."""
import json
import os
import re
import socket
import struct
import time
import zlib

import requests

from conftest import BIN

SIG = b"\x89PNG\r\n\x1a\n"


def slowdown():
    """How much slower the binary under test runs than a release build: timing limits are scaled
    by it (valgrind ~20x, ASan/UBSan ~3x)."""
    try:
        with open(BIN, "rb") as f:
            data = f.read()
    except OSError:
        return 1
    if data[:2] == b"#!":
        return 20
    return 3 if b"__asan_init" in data else 1


def sanitized():
    """True when the server runs under ASan or valgrind (a wrapper script): RSS and RLIMIT_AS mean
    nothing there."""
    try:
        with open(BIN, "rb") as f:
            head = f.read(2)
            if head == b"#!":
                return True
            return b"__asan_init" in head + f.read()
    except OSError:
        return False


# ---- PNG construction -----------------------------------------------------------------------

def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def ihdr(w, h, depth=8, color=0, interlace=0):
    return chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color, 0, 0, interlace))


def solid_png(w, h, color=0, value=0, level=9, extra=b""):
    """A w x h single-colour 8-bit PNG (gray, or RGB/RGBA/GA by color type), its IDAT deflated
    row by row so that no w*h buffer ever exists here. extra: chunks placed before IDAT."""
    ch = {0: 1, 2: 3, 4: 2, 6: 4}[color]
    return SIG + ihdr(w, h, 8, color) + extra + chunk(b"IDAT", repeat_deflate(b"\x00" + bytes([value]) * (w * ch),
                                                                              h, level)) + chunk(b"IEND", b"")


def repeat_deflate(row, count, level=9, group=64):
    """zlib stream of row repeated count times, compressing only two groups of rows: after a full
    flush the compressor forgets its window, so every later group compresses to the same bytes."""
    z = zlib.compressobj(level)
    block = row * group
    nblocks, rest = divmod(count, group)
    first = z.compress(block if nblocks else b"") + z.flush(zlib.Z_FULL_FLUSH)
    same = z.compress(block) + z.flush(zlib.Z_FULL_FLUSH) if nblocks > 1 else b""
    tail = zlib.compressobj(level, zlib.DEFLATED, -15)
    last = tail.compress(row * rest) + tail.flush(zlib.Z_FULL_FLUSH) if rest else b""
    adler = 1
    for _ in range(nblocks):
        adler = zlib.adler32(block, adler)
    adler = zlib.adler32(row * rest, adler)
    # an empty final fixed-Huffman block, then the Adler-32 of everything
    return first + same * max(nblocks - 1, 0) + last + b"\x03\x00" + struct.pack(">I", adler)


def split_chunks(png):
    """[(kind, data)] of a PNG (CRCs not checked)."""
    out, pos = [], 8
    while pos + 12 <= len(png):
        n = struct.unpack(">I", png[pos:pos + 4])[0]
        out.append((png[pos + 4:pos + 8], png[pos + 8:pos + 8 + n]))
        pos += 12 + n
    return out


def join_chunks(chunks):
    return SIG + b"".join(chunk(k, d) for k, d in chunks)


# ---- raw HTTP -------------------------------------------------------------------------------

def connect(port, source="127.0.0.1", timeout=10):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    return s


def read_response(s, timeout=10):
    """Reads one response (headers + Content-Length body, or until EOF). Returns (status, headers,
    body); status 0 when the connection ended without a status line."""
    s.settimeout(timeout)
    buf = b""
    while True:
        try:
            got = s.recv(65536)
        except (ConnectionResetError, socket.timeout, OSError):
            break
        if not got:
            break
        buf += got
        head, sep, body = buf.partition(b"\r\n\r\n")
        if sep:
            m = re.search(rb"\r\ncontent-length: *(\d+)", head, re.I)
            if m and len(body) >= int(m.group(1)):
                break
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1]) if lines and lines[0].startswith("HTTP/") else 0
    hdrs = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    return status, hdrs, body


def exchange(port, data, pieces=None, timeout=10):
    """Sends data (or each of pieces, one send each) on a new connection; returns read_response."""
    s = connect(port, timeout=timeout)
    try:
        for p in (pieces if pieces is not None else [data]):
            try:
                s.sendall(p)
            except OSError:
                break
        return read_response(s, timeout)
    finally:
        s.close()


def is_closed(s, timeout):
    """True when the peer closes s (EOF or reset) within timeout seconds."""
    s.settimeout(timeout)
    try:
        while True:
            got = s.recv(65536)
            if not got:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def multipart(parts, boundary="relB0undary"):
    """A multipart/form-data body of [(name, bytes, extra_header_text)] and its Content-Type."""
    out = b""
    for name, data, extra in parts:
        out += (b"--" + boundary.encode() + b"\r\nContent-Disposition: form-data; name=\"" + name.encode() + b"\"" +
                extra.encode() + b"\r\n\r\n" + data + b"\r\n")
    out += b"--" + boundary.encode() + b"--\r\n"
    return out, "multipart/form-data; boundary=" + boundary


def post_head(path, ctype, length=None, extra=""):
    h = "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\n" % (path, ctype)
    if length is not None:
        h += "Content-Length: %d\r\n" % length
    return (h + extra + "\r\n").encode()


# ---- metrics and process --------------------------------------------------------------------

def metrics(url):
    samples = {}
    for line in requests.get(url + "/metrics", timeout=10).text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? (\S+)$', line)
        assert m, line
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        samples[(m.group(1), labels)] = float(m.group(4))
    return samples


def total(m, name, **labels):
    want = set(labels.items())
    return sum(v for (n, l), v in m.items() if n == name and want <= set(l))


def assert_balanced(url, settle=10.0, baseline_in_flight=1):
    """Waits until only the /metrics request itself is in flight, then checks accepted = succeeded
    + failed + in flight and requests_total = succeeded + failed. Returns the samples."""
    until = time.time() + settle
    while True:
        m = metrics(url)
        if total(m, "edged_requests_in_flight") <= baseline_in_flight or time.time() > until:
            break
        time.sleep(0.05)
    acc, ok, bad = (total(m, "edged_requests_accepted_total"), total(m, "edged_requests_succeeded_total"),
                    total(m, "edged_requests_failed_total"))
    inf = total(m, "edged_requests_in_flight")
    assert inf == baseline_in_flight, "in flight %d after %.0f s" % (inf, settle)
    assert acc == ok + bad + inf, (acc, ok, bad, inf)
    assert total(m, "edged_requests_total") == ok + bad
    return m


def proc_status(pid, key):
    """A /proc/PID/status field in kB (VmRSS, VmHWM, VmSize)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def proc_cpu_seconds(pid):
    """User + system CPU seconds the process has used (/proc/PID/stat), all its threads."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def error_of(r):
    """The error object of a JSON error answer (checks the shape)."""
    assert r.headers["Content-Type"].startswith("application/json"), r.headers
    e = r.json()["error"]
    assert set(e) == {"code", "message", "request_id"}, e
    return e


def json_error(body):
    return json.loads(body)["error"]
