"""test_observability.py — what an operator watches: /metrics read by Prometheus' own text parser
(python3-prometheus-client) and by `promtool check metrics` when it is installed (skipped visibly
otherwise), the process_* metrics against /proc, requests and durations by filter and backend, the
GPU busy time, and the log formats (--log-format json|text|auto, EDGED_LOG_FORMAT): JSON lines, a
readable text line per event with control characters escaped, and auto choosing text on a terminal
and JSON on a pipe. Backend from EDGED_TEST_BACKEND (cpu by default)."""
import json
import os
import pty
import re
import shutil
import subprocess
import time

import pytest
import requests

from conftest import BACKEND, BIN, ROOT, free_port, png_bytes, random_image

SEED = 21
TS = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"
# the families and types an operator's dashboards and the HPA read (names kept across versions)
FAMILIES = {
    "edged_requests": "counter", "edged_requests_accepted": "counter", "edged_requests_succeeded": "counter",
    "edged_requests_failed": "counter", "edged_requests_in_flight": "gauge", "edged_rejections": "counter",
    "edged_filter_requests": "counter", "edged_request_duration_seconds": "histogram",
    "edged_queue_wait_seconds": "histogram", "edged_stage_seconds": "histogram", "edged_queue_depth": "gauge",
    "edged_queue_capacity": "gauge", "edged_ready": "gauge", "edged_gpu_memory_used_bytes": "gauge",
    "edged_gpu_busy_seconds": "counter", "edged_build_info": "gauge", "process_cpu_seconds": "counter",
    "process_resident_memory_bytes": "gauge", "process_virtual_memory_bytes": "gauge", "process_threads": "gauge",
    "process_start_time_seconds": "gauge", "process_open_fds": "gauge", "process_max_fds": "gauge",
}


@pytest.fixture(scope="module")
def png():
    print("seed", SEED)
    return png_bytes(random_image(48, 64, 3, SEED))


def post(url, png, params, path="/v1/filter", headers=None):
    return requests.post(url + path, files={"image": ("i.png", png, "image/png")},
                         data={"params": json.dumps(params)}, headers=headers, timeout=120)


def settle(url):
    """Waits until only the caller's next request is in flight (completion callbacks have run)."""
    until = time.time() + 5
    while time.time() < until:
        text = requests.get(url + "/metrics", timeout=10).text
        if re.search(r"^edged_requests_in_flight 1$", text, re.M):
            return
        time.sleep(0.01)


def families(url):
    parser = pytest.importorskip("prometheus_client.parser",
                                 reason="python3-prometheus-client not installed: Prometheus parser check skipped")
    text = requests.get(url + "/metrics", timeout=10).text
    return {f.name: f for f in parser.text_string_to_metric_families(text)}, text


def sample(fams, family, name, **labels):
    """The value of one sample (name, labels ⊇ given), or None."""
    for s in fams[family].samples:
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    return None


# ---------------------------------------------------------------- /metrics


def test_metrics_parse_with_prometheus_parser(make_server, png):
    s = make_server()
    assert post(s.url, png, {"filter": "edge"}).status_code == 200
    settle(s.url)
    fams, text = families(s.url)
    for name, kind in FAMILIES.items():
        assert name in fams, "family %s missing" % name
        assert fams[name].type == kind, (name, fams[name].type)
        assert fams[name].documentation, "no HELP for " + name
    # one HELP and one TYPE per family, each before its samples
    helps = re.findall(r"^# HELP (\S+)", text, re.M)
    types = re.findall(r"^# TYPE (\S+)", text, re.M)
    assert len(helps) == len(set(helps)) == len(types) == len(set(types))
    assert text.endswith("\n") and "\r" not in text


def test_promtool_check_metrics(make_server, png):
    promtool = shutil.which("promtool")
    if not promtool:
        pytest.skip("promtool not installed (Debian package prometheus): promtool check skipped")
    s = make_server()
    post(s.url, png, {"filter": "edge"})
    post(s.url, b"not a png", {"filter": "edge"})
    text = requests.get(s.url + "/metrics", timeout=10).text
    p = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "" and p.stderr.strip() == "", p.stdout + p.stderr


def test_process_metrics_match_proc(make_server, png):
    started = time.time()
    s = make_server()
    for _ in range(3):
        assert post(s.url, png, {"filter": "gaussian", "size": 31}).status_code == 200
    fams, _ = families(s.url)
    pid = s.proc.pid
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    page, tick = os.sysconf("SC_PAGE_SIZE"), os.sysconf("SC_CLK_TCK")
    rss = int(fields[21]) * page
    threads = int(fields[17])
    cpu = (int(fields[11]) + int(fields[12])) / tick
    fds = len(os.listdir("/proc/%d/fd" % pid))
    def v(family):
        return sample(fams, family, family + "_total" if fams[family].type == "counter" else family)

    assert 0.5 * rss <= v("process_resident_memory_bytes") <= 2 * rss + (8 << 20), (v("process_resident_memory_bytes"), rss)
    assert abs(v("process_threads") - threads) <= 2, (v("process_threads"), threads)
    assert cpu - 0.05 <= v("process_cpu_seconds") <= cpu + 0.05, (v("process_cpu_seconds"), cpu)  # ticks: 10 ms
    assert abs(v("process_open_fds") - fds) <= 3, (v("process_open_fds"), fds)
    assert started - 2 <= v("process_start_time_seconds") <= time.time() + 1, (started, v("process_start_time_seconds"))
    assert v("process_max_fds") >= v("process_open_fds")
    assert v("process_virtual_memory_bytes") >= v("process_resident_memory_bytes")


def test_requests_and_durations_by_filter_and_backend(make_server, png):
    s = make_server()
    ran = "gpu" if BACKEND == "gpu" else "cpu"  # what variant auto runs on this backend
    assert post(s.url, png, {"filter": "edge"}).status_code == 200
    assert post(s.url, png, {"filter": "edge"}).status_code == 200
    assert post(s.url, png, {"filter": "sobel", "variant": "cpu_serial"}).status_code == 200
    assert post(s.url, b"these are not PNG bytes", {"filter": "box", "size": 5}).status_code == 415
    assert post(s.url, png, {"filter": "gaussian", "size": 5}, path="/v1/compare").status_code == 200
    assert post(s.url, png, {"filter": "gaussian", "size": 4}).status_code == 400  # no filter chosen: not counted
    requests.get(s.url + "/version", timeout=10)
    settle(s.url)
    fams, _ = families(s.url)
    got = {(x.labels["filter"], x.labels["backend"], x.labels["code"]): x.value
           for x in fams["edged_filter_requests"].samples if x.name == "edged_filter_requests_total"}
    assert got == {("edge", ran, "200"): 2, ("sobel", "cpu", "200"): 1, ("box", "none", "415"): 1,
                   ("gaussian", "all", "200"): 1}, got
    # the durations: one series per (filter, backend) seen, cumulative buckets ending at the count
    h = fams["edged_request_duration_seconds"]
    count = {(x.labels["filter"], x.labels["backend"]): x.value for x in h.samples if x.name.endswith("_count")}
    assert count == {("edge", ran): 2, ("sobel", "cpu"): 1, ("box", "none"): 1, ("gaussian", "all"): 1}, count
    for (f, b), n in count.items():
        buckets = sorted((float(x.labels["le"]), x.value) for x in h.samples
                         if x.name.endswith("_bucket") and x.labels["filter"] == f and x.labels["backend"] == b)
        assert [c for _, c in buckets] == sorted(c for _, c in buckets) and buckets[-1] == (float("inf"), n)
        assert sample(fams, "edged_request_duration_seconds", "edged_request_duration_seconds_sum",
                      filter=f, backend=b) > 0
    # the names dashboards use are still there, with their own labels
    codes = {x.labels["code"]: x.value for x in fams["edged_requests"].samples if x.name == "edged_requests_total"}
    assert codes["200"] >= 5 and codes["415"] == 1 and codes["400"] == 1  # 200s: and /readyz, /metrics
    assert sum(got.values()) <= sum(codes.values())


def test_gpu_busy_seconds(make_server, png):
    s = make_server()
    fams, _ = families(s.url)
    before = sample(fams, "edged_gpu_busy_seconds", "edged_gpu_busy_seconds_total")
    assert before is not None and before >= 0
    for _ in range(3):
        assert post(s.url, png, {"filter": "gaussian", "size": 31}).status_code == 200
    fams, _ = families(s.url)
    after = sample(fams, "edged_gpu_busy_seconds", "edged_gpu_busy_seconds_total")
    if BACKEND != "gpu":
        assert before == after == 0, "no GPU worker: no busy time"
        assert sample(fams, "edged_gpu_memory_used_bytes", "edged_gpu_memory_used_bytes") == 0
    else:
        assert after > before
        ready_for = time.time() - sample(fams, "process_start_time_seconds", "process_start_time_seconds")
        assert after <= ready_for + 1


# ---------------------------------------------------------------- logs


def test_log_format_json(make_server, png):
    s = make_server("--log-format", "json")
    r = post(s.url, png, {"filter": "edge"}, headers={"X-Request-ID": "obs-json-1"})
    assert r.status_code == 200
    time.sleep(0.1)
    lines = s.log_text().splitlines()
    assert lines and all(json.loads(line) for line in lines)  # every line is one JSON object
    req = [json.loads(x) for x in lines if "obs-json-1" in x]
    assert len(req) == 1 and req[0]["event"] == "request" and req[0]["status"] == 200
    cfg = [json.loads(x) for x in lines if '"event":"config"' in x]
    assert cfg[0]["config"]["log-format"] == "json"


TEXT_LINE = re.compile(r"^(%s) (info|warn|error) ([a-z_]+)( .*)?$" % TS)
TEXT_REQUEST = re.compile(r"^%s (info|error) request (\S+) (\S+) (\d{3}) ([0-9.]+) ms( .*)$" % TS)


def test_log_format_text(make_server, png):
    s = make_server("--log-format", "text")
    r = post(s.url, png, {"filter": "edge"}, headers={"X-Request-ID": "obs-text-1"})
    assert r.status_code == 200
    requests.get(s.url + "/no%0awhere%20here%1b[31m", timeout=10)  # a newline, a space and ESC in the path
    time.sleep(0.1)
    text = s.log_text()
    lines = text.splitlines()
    assert lines and not any(x.startswith("{") for x in lines), text[:500]
    for x in lines:
        assert TEXT_LINE.match(x), x
        assert not re.search(r"[\x00-\x1f\x7f]", x), "control character in %r" % x
    req = [x for x in lines if "id=obs-text-1" in x]
    assert len(req) == 1, lines
    m = TEXT_REQUEST.match(req[0])
    assert m, req[0]
    assert (m.group(2), m.group(3), m.group(4)) == ("POST", "/v1/filter", "200")
    assert float(m.group(5)) > 0
    fields = dict(re.findall(r" (\w+)=(\S+)", m.group(6)))
    assert fields["filter"] == "edge" and fields["variant"] == r.headers["X-Edged-Variant"]
    assert fields["size"] == "64x48" and int(fields["bytes"]) == len(r.content)
    assert json.loads(fields["ms"])["total"] > 0
    # the odd path: one line, quoted, the control characters escaped
    odd = [x for x in lines if " request GET " in x and "404" in x]
    assert len(odd) == 1 and '"/no\\u000awhere here\\u001b[31m"' in odd[0], odd
    assert len([x for x in lines if " request " in x and "/readyz" not in x]) == 2  # and the start-up probe
    # the start lines read as text too
    assert any(re.match(r"^%s info listening edged \S+ listening on 127\.0\.0\.1:%d" % (TS, s.port), x) for x in lines)
    assert any(" config " in x and '"log-format":"text"' in x for x in lines)


def start_with_stderr(stderr, flags=(), env=None):
    port = free_port()
    p = subprocess.Popen([BIN, "serve", "--host", "127.0.0.1", "--port", str(port), "--backend", "cpu"] + list(flags),
                         stdout=subprocess.DEVNULL, stderr=stderr, env=env, cwd=ROOT)
    until = time.time() + 20
    while time.time() < until:
        try:
            if requests.get("http://127.0.0.1:%d/healthz" % port, timeout=1).status_code == 200:
                break
        except requests.ConnectionError:
            time.sleep(0.05)
    p.terminate()
    p.wait(30)
    return p.returncode


def first_line_over_pipe(flags=(), env=None):
    r, w = os.pipe()
    rc = start_with_stderr(w, flags, env)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        out = f.read().decode()
    assert rc == 0, out
    return out.splitlines()[0]


def test_log_format_auto_pipe_json_and_env():
    env = {k: v for k, v in os.environ.items() if k != "EDGED_LOG_FORMAT"}
    first = first_line_over_pipe(env=env)  # default auto, stderr a pipe
    assert json.loads(first)["event"] == "config", first
    assert TEXT_LINE.match(first_line_over_pipe(env=dict(env, EDGED_LOG_FORMAT="text")))
    # the flag wins over the variable
    assert json.loads(first_line_over_pipe(["--log-format", "json"], env=dict(env, EDGED_LOG_FORMAT="text")))
    assert json.loads(first_line_over_pipe(["--log-format", "auto"], env=env))


def test_log_format_auto_terminal_text():
    env = {k: v for k, v in os.environ.items() if k != "EDGED_LOG_FORMAT"}
    master, slave = os.openpty()
    rc = start_with_stderr(slave, env=env)
    os.close(slave)
    out = b""
    try:
        while True:
            chunk = os.read(master, 65536)
            if not chunk:
                break
            out += chunk
    except OSError:  # EIO once the terminal's other end is closed
        pass
    os.close(master)
    assert rc == 0
    lines = out.decode().replace("\r\n", "\n").splitlines()
    assert lines and all(TEXT_LINE.match(x) for x in lines), lines[:3]
    assert " config " in lines[0]


def test_log_format_bad_value():
    for args, env in ((["--log-format", "xml"], {}), ([], {"EDGED_LOG_FORMAT": "yaml"})):
        p = subprocess.run([BIN, "serve", "--port", "1"] + args, capture_output=True, text=True,
                           env=dict(os.environ, **env), timeout=30)
        assert p.returncode == 2, p.stderr
        assert ("--log-format" if args else "EDGED_LOG_FORMAT") in p.stderr and "auto, text or json" in p.stderr
    h = subprocess.run([BIN, "serve", "--help"], capture_output=True, text=True, timeout=30).stdout
    assert "--log-format" in h and "EDGED_LOG_FORMAT" in h
