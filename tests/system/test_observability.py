"""test_observability.py — what an operator watches: /metrics read by Prometheus' own text parser
(python3-prometheus-client) and by `promtool check metrics` when it is installed (skipped visibly
otherwise), held against the metrics table of docs/api.md both ways (families, types, labels,
rejection reasons), the process_* metrics against /proc, requests by route and status class with
probes and scrapes apart, failures split into 4xx and 5xx, requests and durations by filter and
backend (no series for a backend the server lacks), the GPU busy time; each GPU by its CUDA device
number in /version, /readyz, the per-device series and the access line (empty lists, declared
families without series and no device field on a CPU-only server); the log formats
(--log-format json|text|auto, EDGED_LOG_FORMAT): JSON lines, a readable text line per event with
control characters escaped, auto choosing text on a terminal and JSON on a pipe; the log levels
(--log-level, EDGED_LOG_LEVEL: probes at debug, refusals for capacity at warn, server errors at
error); lines that stay valid UTF-8 when raw sockets send invalid UTF-8 in the method and path;
and W3C trace context (traceparent) in the answer, the access line and the JSON result.
Backend from EDGED_TEST_BACKEND (cpu by default)."""
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
    "edged_http_requests": "counter", "edged_gpu_fatal": "gauge", "edged_memory_budget_bytes": "gauge",
    "edged_memory_budget_limit_bytes": "gauge",
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
    # a GPU variant: on a CPU-only server refused before a job is made (none), never labelled gpu
    fast = post(s.url, png, {"filter": "edge", "variant": "fast"}).status_code
    assert fast == (200 if BACKEND == "gpu" else 422)
    requests.get(s.url + "/version", timeout=10)
    settle(s.url)
    fams, text = families(s.url)
    got = {(x.labels["filter"], x.labels["backend"], x.labels["code"]): x.value
           for x in fams["edged_filter_requests"].samples if x.name == "edged_filter_requests_total"}
    want = {("edge", ran, "200"): 2, ("sobel", "cpu", "200"): 1, ("box", "none", "415"): 1,
            ("gaussian", "all", "200"): 1}
    key = ("edge", "gpu", "200") if BACKEND == "gpu" else ("edge", "none", "422")
    want[key] = want.get(key, 0) + 1
    assert got == want, got
    if BACKEND != "gpu":
        assert 'backend="gpu"' not in text, "a gpu series on a server without a GPU"
    # the durations: one series per (filter, backend) seen, cumulative buckets ending at the count
    h = fams["edged_request_duration_seconds"]
    count = {(x.labels["filter"], x.labels["backend"]): x.value for x in h.samples if x.name.endswith("_count")}
    want_count = {}
    for (f, b, _), n in want.items():
        want_count[(f, b)] = want_count.get((f, b), 0) + n
    assert count == want_count, count
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


def test_gpu_devices(make_server, png):
    """Each GPU, by its CUDA device number, in /version, /readyz, the edged_gpu_device_* series and
    the access line of a request whose job it ran; on a CPU-only server the lists are empty, the
    device families declared with no series, and no access line names a device."""
    s = make_server("--log-format", "json")
    version = requests.get(s.url + "/version", timeout=10).json()
    ready = requests.get(s.url + "/readyz", timeout=10)
    assert ready.status_code == 200 and ready.json()["devices"] == version["devices"]
    numbers = [d["device"] for d in version["devices"]]
    assert all(d["state"] == "up" and "fault" not in d and d["name"] for d in version["devices"])
    assert len(set(numbers)) == len(numbers)
    headers = {"X-Request-ID": "obs-device-1"}
    variant, want = ("fast", 3) if numbers else ("cpu", 0)
    for _ in range(3):
        assert post(s.url, png, {"filter": "gaussian", "size": 9, "variant": variant}, headers=headers).status_code == 200
    settle(s.url)
    until = time.time() + 5  # a worker counts its jobs just after it has answered them
    while True:
        fams, text = families(s.url)
        jobs = {x.labels["device"]: x.value for x in fams["edged_gpu_device_jobs"].samples
                if x.name == "edged_gpu_device_jobs_total"}
        if sum(jobs.values()) >= want or time.time() > until:
            break
        time.sleep(0.05)
    assert sample(fams, "edged_gpu_devices", "edged_gpu_devices", state="up") == len(numbers)
    assert sample(fams, "edged_gpu_devices", "edged_gpu_devices", state="fenced") == 0
    up = {x.labels["device"]: x.value for x in fams["edged_gpu_device_up"].samples}
    assert up == {str(n): 1 for n in numbers}, up
    assert set(jobs) == set(up) and sum(jobs.values()) == want, jobs
    if not numbers:
        assert not re.search(r"^edged_gpu_device_\w+\{", text, re.M), "a device series without a device"
    lines = [x for x in s.log_lines() if x.get("event") == "request" and x.get("request_id") == "obs-device-1"]
    assert len(lines) == 3
    for x in lines:
        if numbers:
            assert x["backend"] == "gpu" and x["device"] in numbers, x
        else:
            assert x["backend"] == "cpu" and "device" not in x, x


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


TEXT_LINE = re.compile(r"^(%s) (debug|info|warn|error) ([a-z_]+)( .*)?$" % TS)
TEXT_REQUEST = re.compile(r"^%s (debug|info|warn|error) request (\S+) (\S+) (\d{3}) ([0-9.]+) ms( .*)$" % TS)


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
    assert len([x for x in lines if " request " in x]) == 2  # the start-up probe is at debug: not logged
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


def assert_bad_values(flag, variable, bad_flag, bad_variable, choices):
    """A bad value of the flag, or of its variable, is a configuration error (exit 2) naming it."""
    for args, env in (([flag, bad_flag], {}), ([], {variable: bad_variable})):
        p = subprocess.run([BIN, "serve", "--port", "1"] + args, capture_output=True, text=True,
                           env=dict(os.environ, **env), timeout=30)
        assert p.returncode == 2, p.stderr
        assert (flag if args else variable) in p.stderr and choices in p.stderr, p.stderr


def test_log_format_bad_value():
    assert_bad_values("--log-format", "EDGED_LOG_FORMAT", "xml", "yaml", "auto, text or json")
    h = subprocess.run([BIN, "serve", "--help"], capture_output=True, text=True, timeout=30).stdout
    assert "--log-format" in h and "EDGED_LOG_FORMAT" in h


# ---------------------------------------------------------------- requests by route and class


def test_http_requests_by_route_and_class(make_server, png):
    s = make_server()
    before, _ = families(s.url)  # every route's 2xx/4xx/5xx exists from the start

    def by_route(fams):
        return {(x.labels["route"], x.labels["code"]): x.value
                for x in fams["edged_http_requests"].samples if x.name == "edged_http_requests_total"}

    start = by_route(before)
    for route in ("/v1/filter", "/v1/compare", "/healthz", "/readyz", "/metrics", "/web/*", "other"):
        assert all((route, c) in start for c in ("2xx", "4xx", "5xx")), (route, sorted(start))
    assert {c for _, c in start} == {"2xx", "4xx", "5xx"}
    assert post(s.url, png, {"filter": "edge"}).status_code == 200
    assert post(s.url, b"not an image", {"filter": "edge"}).status_code == 415
    assert requests.get(s.url + "/healthz", timeout=10).status_code == 200
    assert requests.get(s.url + "/no/such/path", timeout=10).status_code == 404
    assert requests.get(s.url + "/v1/filter", timeout=10).status_code == 405
    settle(s.url)
    fams, _ = families(s.url)
    d = {k: v - start.get(k, 0) for k, v in by_route(fams).items()}
    assert d[("/v1/filter", "2xx")] == 1 and d[("/v1/filter", "4xx")] == 2 and d[("/v1/filter", "5xx")] == 0
    assert d[("/healthz", "2xx")] == 1 and d[("other", "4xx")] == 1
    assert d[("/metrics", "2xx")] >= 1  # the scrapes, apart from the API's routes
    # failures by class: the client's apart from the server's; accepted = succeeded + failed + in flight
    failed = {x.labels["code"]: x.value for x in fams["edged_requests_failed"].samples
              if x.name == "edged_requests_failed_total"}
    assert set(failed) == {"4xx", "5xx"} and failed["4xx"] >= 3 and failed["5xx"] == 0, failed
    ok = sample(fams, "edged_requests_succeeded", "edged_requests_succeeded_total")
    accepted = sample(fams, "edged_requests_accepted", "edged_requests_accepted_total")
    assert accepted == ok + sum(failed.values()) + sample(fams, "edged_requests_in_flight", "edged_requests_in_flight")
    assert sum(by_route(fams).values()) == ok + sum(failed.values())


def test_5xx_counted_apart_from_4xx(make_server, png):
    """A server error (503 while draining) goes to failed{code="5xx"} and the route's 5xx."""
    s = make_server("--drain-grace-ms", "3000")
    s.signal()
    time.sleep(0.2)
    assert post(s.url, png, {"filter": "edge"}).status_code == 503
    assert requests.get(s.url + "/nowhere", timeout=10).status_code == 404
    fams, _ = families(s.url)
    failed = {x.labels["code"]: x.value for x in fams["edged_requests_failed"].samples}
    assert failed == {"4xx": 1, "5xx": 1}, failed
    assert sample(fams, "edged_http_requests", "edged_http_requests_total", route="/v1/filter", code="5xx") == 1
    assert sample(fams, "edged_http_requests", "edged_http_requests_total", route="/v1/filter", code="4xx") == 0


# ---------------------------------------------------------------- docs/api.md's metrics table


def api_md_metrics():
    """{name: (type, {labels}, meaning)} of the metrics table in docs/api.md."""
    with open(os.path.join(ROOT, "docs", "api.md"), encoding="utf-8") as f:
        text = f.read()
    table = text[text.index("| metric | type | meaning |"):]
    rows = {}
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        for name, labels in re.findall(r"`([a-z_:][a-z0-9_:]*)(?:\{([a-z_,]*)\})?`", cells[0]):
            assert name not in rows, "metric %s twice in docs/api.md" % name
            rows[name] = (cells[1], set(filter(None, labels.split(","))), cells[2])
    assert len(rows) > 20, "metrics table of docs/api.md not found"
    return rows


def exported(text):
    """{family name as in its TYPE line: (type, {label names of its samples})} of an exposition."""
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
    out = {name: (kind, set()) for name, kind in types.items()}
    for name, labels in re.findall(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? \S+$", text, re.M):
        fam = name if name in types else re.sub(r"_(bucket|sum|count)$", "", name)
        assert fam in types, "sample %s of no family" % name
        out[fam][1].update(k for k in re.findall(r'(\w+)="', labels) if k != "le")
    return out


def test_api_md_metrics_table_matches_the_server(make_server, png):
    """Every family the server exports is a row of docs/api.md's table with its type and labels,
    and every row is exported, by a CPU-only server (after one request of each kind)."""
    s = make_server()
    assert post(s.url, png, {"filter": "edge"}).status_code == 200
    settle(s.url)
    fams, text = families(s.url)  # Prometheus' parser reads it
    got, table = exported(text), api_md_metrics()
    gpus = requests.get(s.url + "/version", timeout=10).json()["devices"]
    assert set(got) - set(table) == set(), "exported, not in docs/api.md: %s" % sorted(set(got) - set(table))
    assert set(table) - set(got) == set(), "in docs/api.md, not exported: %s" % sorted(set(table) - set(got))
    for name, (kind, labels, _) in table.items():
        assert got[name][0] == kind, "%s: type %s, docs/api.md says %s" % (name, got[name][0], kind)
        if name.startswith("edged_gpu_device_") and not gpus:
            assert got[name][1] == set(), "%s: a series of a device on a server without one" % name
            continue  # declared, no series: its labels are checked by tests/unit/test_metrics.c
        assert got[name][1] == labels, "%s: labels %s, docs/api.md says %s" % (name, got[name][1], labels)
    # the rejection reasons: the ones exported are the ones listed
    reasons = {x.labels["reason"] for x in fams["edged_rejections"].samples}
    listed = set(re.findall(r"`([a-z_]+)`", table["edged_rejections_total"][2]))
    assert reasons == listed, (sorted(reasons ^ listed))
    routes = {x.labels["route"] for x in fams["edged_http_requests"].samples}
    assert routes <= set(re.findall(r"`([^`]+)`", table["edged_http_requests_total"][2])), routes


# ---------------------------------------------------------------- log levels


def request_lines(s):
    return [x for x in s.log_lines() if x.get("event") == "request"]


def test_log_level_default_info_drops_probes_and_scrapes(make_server, png):
    s = make_server("--log-format", "json")
    for path in ("/healthz", "/readyz", "/metrics"):
        assert requests.get(s.url + path, timeout=10).status_code == 200
    assert requests.get(s.url + "/version", timeout=10).status_code == 200
    assert post(s.url, b"junk", {"filter": "edge"}).status_code == 415
    time.sleep(0.1)
    lines = request_lines(s)
    assert sorted((x["path"], x["level"]) for x in lines) == [("/v1/filter", "info"), ("/version", "info")], lines
    assert json.loads(s.log_text().splitlines()[0])["config"]["log-level"] == "info"


def test_log_levels_of_access_lines(make_server, png):
    """debug: probes and scrapes, a /readyz 503 included; warn: a 503 refusal while draining."""
    s = make_server("--log-format", "json", "--log-level", "debug", "--drain-grace-ms", "3000")
    for path in ("/healthz", "/readyz", "/metrics"):
        assert requests.get(s.url + path, headers={"X-Request-ID": "probe" + path[1:]}, timeout=10).status_code == 200
    assert post(s.url, png, {"filter": "edge"}, headers={"X-Request-ID": "served"}).status_code == 200
    s.signal()
    time.sleep(0.2)
    assert requests.get(s.url + "/readyz", headers={"X-Request-ID": "unready"}, timeout=10).status_code == 503
    assert post(s.url, png, {"filter": "edge"}, headers={"X-Request-ID": "refused"}).status_code == 503
    assert s.proc.wait(30) == 0
    level = {x["request_id"]: x["level"] for x in request_lines(s)}
    assert level["probehealthz"] == level["probereadyz"] == level["probemetrics"] == "debug", level
    assert level["unready"] == "debug" and level["served"] == "info" and level["refused"] == "warn", level
    assert not [x for x in request_lines(s) if x["level"] == "error"]


def test_log_level_error_for_server_errors(make_server, png):
    """A 504 (the job waited past --queue-deadline-ms) is a server error: logged at error, and
    --log-level error keeps it while dropping the info lines."""
    from test_api import SLOW
    slow = png_bytes(random_image(384, 384, 3, seed=3))
    s = make_server("--log-format", "json", "--log-level", "error", "--queue-deadline-ms", "100",
                    "--cpu-workers", "1")
    import concurrent.futures as cf
    with cf.ThreadPoolExecutor(2) as ex:
        first = ex.submit(post, s.url, slow, SLOW)
        time.sleep(0.05)
        late = ex.submit(post, s.url, png, {"variant": "cpu_serial", "filter": "edge"})
        assert first.result().status_code == 200 and late.result().status_code == 504
    time.sleep(0.1)
    lines = request_lines(s)
    assert [(x["status"], x["level"]) for x in lines] == [(504, "error")], lines
    assert not [x for x in s.log_lines() if x.get("level") in ("debug", "info")]


def test_log_level_bad_value_and_env():
    assert_bad_values("--log-level", "EDGED_LOG_LEVEL", "verbose", "WARN", "debug, info, warn or error")
    env = {k: v for k, v in os.environ.items() if k != "EDGED_LOG_LEVEL"}
    # warn from the variable: the start lines (info) are dropped; the flag wins over it
    r, w = os.pipe()
    assert start_with_stderr(w, ["--log-format", "json"], dict(env, EDGED_LOG_LEVEL="warn")) == 0
    os.close(w)
    with os.fdopen(r, "rb") as f:
        assert f.read() == b"", "info lines at --log-level warn"
    assert json.loads(first_line_over_pipe(["--log-level", "info", "--log-format", "json"],
                                           env=dict(env, EDGED_LOG_LEVEL="error")))["config"]["log-level"] == "info"


# ---------------------------------------------------------------- invalid UTF-8 from clients


RAW = [b"G\xffT /v1/fi\xc3lter\xfe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
       b"GET /caf\xc3\xa9/\xc0\xaf\xed\xa0\x80 HTTP/1.1\r\nHost: x\r\nX-Request-ID: bad\xff\r\n"
       b"User-Agent: \xff\xfe\r\nConnection: close\r\n\r\n",
       b"P\xc3ST /\xf4\x90\x80\x80 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"]


def send_raw(port):
    from helpers import exchange
    return [exchange(port, req)[0] for req in RAW]


@pytest.mark.parametrize("form", ["json", "text"])
def test_log_lines_valid_utf8_whatever_the_client_sends(make_server, form):
    s = make_server("--log-format", form)
    statuses = send_raw(s.port)
    assert all(400 <= st < 500 for st in statuses), statuses
    time.sleep(0.2)
    with open(s.log.name, "rb") as f:
        raw = f.read()
    text = raw.decode("utf-8")  # strict: raises on any invalid byte
    lines = text.splitlines()
    reqs = [x for x in lines if ('"event":"request"' in x if form == "json" else " request " in x)]
    assert len(reqs) == len(RAW), lines
    for line in lines:
        assert not re.search(r"[\x00-\x1f\x7f]", line), line
        if form == "json":
            json.loads(line)
        else:
            assert TEXT_LINE.match(line) and all(ord(c) < 0x7f for c in line), line
    if form == "json":
        got = {(x["method"], x["path"]) for x in map(json.loads, reqs)}
        assert ("G\ufffdT", "/v1/fi\ufffdlter\ufffd") in got, got
        assert ("GET", "/caf\u00e9/" + "\ufffd" * 5) in got, got
        assert ("P\ufffdST", "/" + "\ufffd" * 4) in got, got


# ---------------------------------------------------------------- trace context


PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


def test_traceparent_continues_the_callers_trace(make_server, png):
    s = make_server("--log-format", "json")
    r = post(s.url, png, {"filter": "edge", "output": "json"}, headers={"traceparent": PARENT, "X-Request-ID": "tr-1"})
    assert r.status_code == 200
    m = TRACEPARENT.match(r.headers["traceparent"])
    assert m and m.group(1) == "4bf92f3577b34da6a3ce929d0e0e4736" and m.group(3) == "01", r.headers["traceparent"]
    span = m.group(2)
    assert span != "00f067aa0ba902b7" and span != "0" * 16
    assert r.json()["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736" and r.json()["request_id"] == "tr-1"
    time.sleep(0.1)
    line = [x for x in request_lines(s) if x["request_id"] == "tr-1"]
    assert len(line) == 1
    assert (line[0]["trace_id"], line[0]["span_id"], line[0]["parent_id"]) == (
        "4bf92f3577b34da6a3ce929d0e0e4736", span, "00f067aa0ba902b7"), line
    # a second request of the same trace gets its own span
    r2 = requests.get(s.url + "/version", headers={"traceparent": PARENT}, timeout=10)
    m2 = TRACEPARENT.match(r2.headers["traceparent"])
    assert m2.group(1) == m.group(1) and m2.group(2) != span
    # compare and an error answer carry it too
    c = post(s.url, png, {"filter": "box"}, path="/v1/compare", headers={"traceparent": PARENT})
    assert c.status_code == 200 and c.json()["trace_id"] == m.group(1)
    e = requests.get(s.url + "/nowhere", headers={"traceparent": PARENT}, timeout=10)
    assert e.status_code == 404 and TRACEPARENT.match(e.headers["traceparent"]).group(1) == m.group(1)


BAD_TRACEPARENTS = [
    "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",  # uppercase
    "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  # zero trace id
    "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  # zero parent id
    "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  # version ff
    "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  # another version
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
    "garbage",
]


def test_invalid_traceparent_starts_a_new_trace(make_server, png):
    s = make_server("--log-format", "json")
    seen = set()
    for i, h in enumerate(BAD_TRACEPARENTS + [None]):
        headers = {"X-Request-ID": "bad-%d" % i}
        if h:
            headers["traceparent"] = h
        r = requests.get(s.url + "/version", headers=headers, timeout=10)
        m = TRACEPARENT.match(r.headers["traceparent"])
        assert r.status_code == 200 and m, (h, r.headers.get("traceparent"))
        assert m.group(1) != "4bf92f3577b34da6a3ce929d0e0e4736" and m.group(1) != "0" * 32 and m.group(3) == "00", h
        seen.add(m.group(1))
    assert len(seen) == len(BAD_TRACEPARENTS) + 1, "trace ids repeat"
    time.sleep(0.1)
    lines = [x for x in request_lines(s) if x["request_id"].startswith("bad-")]
    assert len(lines) == len(BAD_TRACEPARENTS) + 1
    assert all("parent_id" not in x and x["trace_id"] in seen for x in lines), lines


def test_traceparent_through_cors(make_server, png):
    """A browser page may send traceparent and read the answer's (--cors-origin)."""
    origin = "https://app.example"
    s = make_server("--cors-origin", origin)
    pre = requests.options(s.url + "/v1/filter", headers={"Origin": origin, "Access-Control-Request-Method": "POST",
                                                           "Access-Control-Request-Headers": "traceparent"}, timeout=10)
    assert pre.status_code == 204 and "traceparent" in pre.headers["Access-Control-Allow-Headers"].split(", ")
    r = post(s.url, png, {"filter": "edge"}, headers={"Origin": origin, "traceparent": PARENT})
    assert "traceparent" in r.headers["Access-Control-Expose-Headers"].split(", ")
    assert TRACEPARENT.match(r.headers["traceparent"]).group(1) == PARENT.split("-")[1]
