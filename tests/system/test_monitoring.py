"""test_monitoring.py — the alert rules and the Grafana dashboard of docker/monitoring against
Prometheus' own tools and the running server. The rules: `promtool check rules` (syntax, PromQL)
and `promtool test rules` with tests/system/monitoring/edged-rules-test.yaml (input series, then
which alerts fire with which labels and text: down, not ready, 5xx ratio, queue saturation, fatal
GPU error, a fenced GPU, restarts, fast and slow burn of the latency SLO); the PrometheusRule of
the kustomize component equal to the rules file (docker/monitoring/prometheusrule.py --check);
every series a rule or a panel names is one a CPU-only server started here exports or, for the
per-GPU families, declares (or Prometheus' own `up`, or a recording rule of the rules file). The
dashboard: valid JSON of the shape Grafana imports, every panel's query valid PromQL (checked by
promtool as rules, Grafana's variables substituted), and a panel for each thing an operator
watches. promtool comes with Debian's prometheus package (docker/deps.sh test); without it those
checks skip visibly."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest
import requests
import yaml

from conftest import ROOT, png_bytes, random_image

MON = os.path.join(ROOT, "docker", "monitoring")
RULES = os.path.join(MON, "edged-rules.yaml")
RULES_TEST = os.path.join(ROOT, "tests", "system", "monitoring", "edged-rules-test.yaml")
DASHBOARD = os.path.join(MON, "edged-dashboard.json")
PROMETHEUS_RULE = os.path.join(ROOT, "docker", "k8s", "components", "alerts", "prometheusrule.yaml")
# Grafana's variables, as a query would read once substituted
GRAFANA_VARS = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h", "$job": "edged", "$instance": ".*"}
# what the PromQL of the rules and panels may name besides metric names
PROMQL_WORDS = {"sum", "by", "rate", "and", "or", "unless", "max", "min", "count", "avg", "histogram_quantile",
                "max_over_time", "changes", "round", "without", "on", "ignoring", "group_left", "group_right",
                "increase", "up", "le"}


def promtool():
    path = shutil.which("promtool")
    if path is None:
        pytest.skip("promtool not installed (Debian package prometheus, docker/deps.sh test): check skipped")
    return path


def load_rules():
    with open(RULES, encoding="utf-8") as f:
        return yaml.safe_load(f)


def dashboard():
    with open(DASHBOARD, encoding="utf-8") as f:
        return json.load(f)


def panel_exprs(d):
    return [(p["title"], t["expr"]) for p in d["panels"] for t in p.get("targets", [])]


def substituted(expr):
    for k, v in GRAFANA_VARS.items():
        expr = expr.replace(k, v)
    assert "$" not in expr, "a Grafana variable left in: %s" % expr
    return expr


def series_names(expr):
    """The metric and recording-rule names a PromQL expression selects."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # label values
    expr = re.sub(r"\{[^}]*\}", "", expr)  # matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # ranges
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)  # grouping labels
    names = set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", expr))
    return {n for n in names if n not in PROMQL_WORDS - {"up"} and not re.fullmatch(r"\d.*|e", n)}


@pytest.fixture(scope="module")
def exposition():
    """The sample names a CPU-only server exports once it has served a filter request, and the names
    it declares (TYPE) with no sample: the per-GPU families, whose series only a GPU server has."""
    from conftest import Server
    s = Server(["--backend", "cpu"])
    try:
        png = png_bytes(random_image(32, 48, 3, 5))
        r = requests.post(s.url + "/v1/filter", files={"image": ("i.png", png, "image/png")}, timeout=60)
        assert r.status_code == 200
        text = requests.get(s.url + "/metrics", timeout=10).text
    finally:
        s.stop()
    samples = set(re.findall(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})? \S+$", text, re.M))
    declared = set(re.findall(r"^# TYPE (edged_gpu_device_\w+) (?:counter|gauge)$", text, re.M))
    assert declared, "the per-device families are not declared"
    return samples | declared


def recording_rules():
    return {r["record"] for g in load_rules()["groups"] for r in g["rules"] if "record" in r}


# ---------------------------------------------------------------- alert rules


def test_promtool_check_rules():
    p = subprocess.run([promtool(), "check", "rules", RULES], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr


def test_promtool_test_rules():
    p = subprocess.run([promtool(), "test", "rules", RULES_TEST], capture_output=True, text=True, timeout=120,
                       cwd=os.path.dirname(RULES_TEST))
    assert p.returncode == 0 and "SUCCESS" in p.stdout, p.stdout + p.stderr


def test_rules_cover_what_an_operator_alerts_on():
    alerts = {r["alert"]: r for g in load_rules()["groups"] for r in g["rules"] if "alert" in r}
    want = {"EdgedDown": "up", "EdgedNotReady": "edged_ready", "EdgedHighErrorRatio": "edged_http_requests_total",
            "EdgedQueueSaturated": "edged_queue_capacity", "EdgedGPUFatal": "edged_gpu_fatal",
            "EdgedGPUDeviceFenced": "edged_gpu_device_up",
            "EdgedLatencyBudgetBurnFast": "edged:request_slow:ratio_rate5m",
            "EdgedLatencyBudgetBurnSlow": "edged:request_slow:ratio_rate30m"}
    for name, series in want.items():
        assert name in alerts and series in series_names(alerts[name]["expr"]), name
    for name, rule in alerts.items():
        assert rule["labels"]["severity"] in ("critical", "warning"), name
        assert rule["annotations"].get("summary") and rule["annotations"].get("description"), name
    tested = set(re.findall(r"alertname: (\w+)", open(RULES_TEST, encoding="utf-8").read()))
    assert tested == set(alerts), "alerts without a promtool test: %s" % sorted(set(alerts) - tested)


def test_prometheusrule_is_the_rules_file():
    with open(PROMETHEUS_RULE, encoding="utf-8") as f:
        pr = yaml.safe_load(f)
    assert pr["apiVersion"] == "monitoring.coreos.com/v1" and pr["kind"] == "PrometheusRule"
    assert pr["metadata"]["name"] and set(pr["spec"]) == {"groups"}
    assert pr["spec"] == load_rules(), "run docker/monitoring/prometheusrule.py"
    p = subprocess.run([sys.executable, os.path.join(MON, "prometheusrule.py"), "--check"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr


def test_rule_series_exported_by_the_server(exposition):
    known = exposition | recording_rules() | {"up"}
    for g in load_rules()["groups"]:
        for r in g["rules"]:
            missing = series_names(r["expr"]) - known
            assert not missing, "%s names %s, which no server exports" % (r.get("alert", r.get("record")), missing)


# ---------------------------------------------------------------- dashboard


def test_dashboard_shape():
    d = dashboard()
    assert d["title"] and d["uid"] and isinstance(d["schemaVersion"], int)
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids)), "panel ids repeat"
    names = {v["name"] for v in d["templating"]["list"]}
    assert {"datasource", "job", "instance"} <= names
    for p in d["panels"]:
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0, p["title"]
        if p["type"] == "row":
            continue
        assert p["title"] and p["targets"], p["title"]
        for t in p["targets"]:
            assert t["datasource"]["uid"] == "${datasource}" and t["refId"] and t["expr"], p["title"]


def test_dashboard_queries_are_valid_promql(tmp_path):
    tool = promtool()
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": "dashboard:panel_%d" % i, "expr": substituted(e)} for i, (_, e) in enumerate(panel_exprs(dashboard()))]}]}
    path = tmp_path / "dashboard-rules.yaml"
    path.write_text(yaml.safe_dump(rules), encoding="utf-8")
    p = subprocess.run([tool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr


def test_dashboard_series_exported_by_the_server(exposition):
    for title, expr in panel_exprs(dashboard()):
        missing = series_names(substituted(expr)) - exposition - {"up"}
        assert not missing, "panel %r names %s, which a CPU-only server does not export" % (title, missing)


def test_dashboard_shows_what_an_operator_watches():
    used = set()
    for _, e in panel_exprs(dashboard()):
        used |= series_names(substituted(e))
    want = {"edged_http_requests_total", "edged_request_duration_seconds_bucket", "edged_queue_depth",
            "edged_queue_capacity", "edged_rejections_total", "edged_gpu_busy_seconds_total",
            "edged_memory_budget_bytes", "edged_memory_budget_limit_bytes", "edged_jpeg_gpu_total",
            "edged_jpeg_cpu_fallback_total", "edged_png_gpu_total", "edged_png_cpu_fallback_total",
            "edged_ready", "edged_gpu_devices", "edged_gpu_device_busy_seconds_total",
            "edged_gpu_device_jobs_total", "edged_gpu_device_outstanding_pixels"}
    assert want <= used, sorted(want - used)
    rate = [e for _, e in panel_exprs(dashboard()) if "edged_http_requests_total" in e and "sum by (route, code)" in e]
    assert rate, "no panel of the request rate by route and status class"
    quantiles = {m for _, e in panel_exprs(dashboard()) for m in re.findall(r"histogram_quantile\((0\.\d+),.*edged_request_duration_seconds_bucket", e)}
    assert {"0.5", "0.9", "0.99"} <= quantiles, quantiles
