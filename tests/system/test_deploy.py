"""test_deploy.py — the Kubernetes manifests and the compose file as a cluster and Compose would take
them, without either: each kustomize overlay rendered by `kubectl kustomize`, the built-in kinds
validated against the Kubernetes schemas (kubernetes-validate), the custom resources (PodMonitor,
ScaledObject, PrometheusRule) checked field by field, the compose file against the Compose Specification's schema,
and what they say checked against the server: pinned image tags, probes, security context, the
GPU only in the GPU overlay, and autoscaler queries that name series the running server exports.

tests/system/schemas/compose-spec.json is the Compose Specification's JSON schema, as published
by the compose-spec project (schema/compose-spec.json, Apache-2.0). A missing tool is a visible
skip, never a silent pass."""
import functools
import json
import os
import re
import shutil
import subprocess
import tempfile

import pytest
import requests
import yaml

import test_packaging as packaging

ROOT = packaging.ROOT
K8S = os.path.join(ROOT, "docker", "k8s")
OVERLAYS = ("gpu", "cpu")
NAMESPACE = "edged"
COMPOSE_SCHEMA = os.path.join(ROOT, "tests", "system", "schemas", "compose-spec.json")
# Kubernetes versions the built-in kinds must validate against: the oldest one supported, and the
# newest the validator knows.
K8S_VERSIONS = ("1.28.0", None)
GPU = "nvidia.com/gpu"
HPA_METRIC = "edged_queue_depth"
METRICS_PORT = 9090  # EDGED_METRICS_LISTEN's: the probes and the scrape
BUILTIN_KINDS = {"Namespace", "Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy",
                 "HorizontalPodAutoscaler", "ConfigMap"}


def kubectl():
    path = shutil.which("kubectl")
    if path is None:
        pytest.skip("kubectl not installed: the kustomize overlays are not rendered")
    return path


def kustomize(path, *flags):
    """`kubectl kustomize path` as a list of documents."""
    r = subprocess.run([kubectl(), "kustomize", *flags, path], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"kubectl kustomize {path}: {r.stderr}"
    docs = [d for d in yaml.safe_load_all(r.stdout) if d is not None]
    for doc in docs:
        assert "apiVersion" in doc and "kind" in doc, f"{path}: an object without apiVersion/kind"
        assert doc.get("metadata", {}).get("name"), f"{path}: a {doc['kind']} without metadata.name"
    return docs


@functools.lru_cache(maxsize=None)
def rendered(overlay):
    """{kind: doc} of one overlay as kustomize renders it (one object per kind)."""
    docs = {}
    for doc in kustomize(os.path.join(K8S, "overlays", overlay)):
        assert doc["kind"] not in docs, f"overlay {overlay}: two {doc['kind']} objects"
        docs[doc["kind"]] = doc
    return docs


@functools.lru_cache(maxsize=None)
def rendered_hpa():
    """{kind: doc} of the GPU overlay with components/hpa instead of components/keda, the way
    docs/deployment.md tells an operator to switch."""
    with open(os.path.join(K8S, "overlays", "gpu", "kustomization.yaml"), encoding="utf-8") as f:
        kust = yaml.safe_load(f)
    assert kust["components"] == ["../../components/keda", "../../components/alerts"], kust["components"]
    with tempfile.TemporaryDirectory() as d:
        rel = os.path.relpath(K8S, d)
        kust["resources"] = [os.path.join(rel, "base")]
        kust["components"] = [os.path.join(rel, "components", c) for c in ("hpa", "alerts")]
        kust["patches"] = [{"path": os.path.join(rel, "overlays", "gpu", p["path"])} for p in kust["patches"]]
        with open(os.path.join(d, "kustomization.yaml"), "w", encoding="utf-8") as f:
            yaml.safe_dump(kust, f)
        docs = kustomize(d, "--load-restrictor", "LoadRestrictionsNone")
    return {doc["kind"]: doc for doc in docs}


def deployment(docs):
    return docs["Deployment"]


def container(docs):
    cs = deployment(docs)["spec"]["template"]["spec"]["containers"]
    assert len(cs) == 1
    return cs[0]


def env(c):
    return {e["name"]: e.get("value") for e in c.get("env", [])}


def pod_labels(docs):
    return deployment(docs)["spec"]["template"]["metadata"]["labels"]


def port_names(c):
    return {p.get("name"): p["containerPort"] for p in c["ports"]}


def version():
    """EDGED_VERSION of server/ops/version.h."""
    text = packaging.read(os.path.join(ROOT, "server", "ops", "version.h"))
    m = re.search(r'#define\s+EDGED_VERSION\s+"([^"]+)"', text)
    assert m, "no EDGED_VERSION in server/ops/version.h"
    return m.group(1)


# ---------------------------------------------------------------- rendering and schemas


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_renders_every_object_in_the_namespace(overlay):
    docs = rendered(overlay)
    want = {"Namespace", "Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy", "PodMonitor",
            "ScaledObject", "PrometheusRule"}
    assert set(docs) == want, sorted(docs)
    assert docs["Namespace"]["metadata"]["name"] == NAMESPACE
    for kind, doc in docs.items():
        if kind != "Namespace":
            assert doc["metadata"].get("namespace") == NAMESPACE, f"{kind} outside namespace {NAMESPACE}"
    assert deployment(docs)["apiVersion"] == "apps/v1"


def validator():
    try:
        import kubernetes_validate
    except ImportError:
        pytest.skip("kubernetes-validate not installed (docker/deps.sh test installs it from PyPI)")
    return kubernetes_validate


def validate_builtin(docs):
    """Validates every built-in kind against the Kubernetes schemas (strict: unknown fields are
    errors); returns the kinds it checked."""
    kv = validator()
    checked = set()
    for kind, doc in docs.items():
        if kind not in BUILTIN_KINDS:
            continue
        for v in K8S_VERSIONS:
            try:
                kv.validate(doc, v or kv.latest_version(), strict=True)
            except kv.ValidationError as e:
                pytest.fail(f"{kind} against Kubernetes {v or kv.latest_version()}: {e.message} at {list(e.path)}")
        checked.add(kind)
    return checked


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_validates_against_kubernetes_schemas(overlay):
    checked = validate_builtin(rendered(overlay))
    assert {"Namespace", "Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy"} <= checked, checked


def test_hpa_alternative_renders_and_validates():
    docs = rendered_hpa()
    assert "ScaledObject" not in docs, "the HPA alternative still carries the KEDA ScaledObject"
    assert "HorizontalPodAutoscaler" in validate_builtin(docs)


def test_adapter_rule_validates():
    assert "ConfigMap" in validate_builtin(adapter_docs())


# ---------------------------------------------------------------- the Deployment


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_image_tag_pinned_to_the_version(overlay):
    want = version() + ("-cpu" if overlay == "cpu" else "")
    image = container(rendered(overlay))["image"]
    name, _, tag = image.rpartition(":")
    assert name and "/" not in tag, f"image {image} has no tag"
    assert tag == want, f"overlay {overlay}: image {image}, want tag {want} (server/ops/version.h)"
    for path in packaging.glob.glob(os.path.join(K8S, "**", "*.yaml"), recursive=True):
        for doc in yaml.safe_load_all(packaging.read(path)):
            for image in re.findall(r"'image': '([^']+)'", repr(doc)) + [i.get("newTag", "") for i in
                                                                         (doc or {}).get("images", [])]:
                assert not image.endswith("latest"), f"{path} names the floating image {image}"


def test_gpu_only_in_gpu_overlay():
    gpu, cpu = rendered("gpu"), rendered("cpu")
    res = container(gpu)["resources"]
    assert str(res["limits"][GPU]) == "1", "want one GPU per replica"
    assert str(res["requests"].get(GPU, 1)) == "1"
    assert res["requests"].get("cpu") and res["requests"].get("memory"), "no cpu/memory requests"
    assert res["limits"].get("cpu") and res["limits"].get("memory"), "no cpu/memory limits"
    assert env(container(gpu)).get("EDGED_BACKEND") in ("gpu", "auto")
    spec = deployment(gpu)["spec"]["template"]["spec"]
    assert any(t.get("key") == GPU for t in spec.get("tolerations", [])), "no toleration of the GPU taint"
    assert spec.get("nodeSelector"), "GPU pods without a node selector"
    assert GPU not in json.dumps(cpu), "the cpu overlay asks for or tolerates a GPU"
    assert env(container(cpu)).get("EDGED_BACKEND") == "cpu"
    cres = container(cpu)["resources"]
    assert cres["requests"].get("cpu") and cres["limits"].get("memory"), cres


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_probes(overlay):
    """The probes ask the probe listener (EDGED_METRICS_LISTEN on the port named metrics), which no
    API client can crowd out; liveness is /healthz, never /readyz."""
    c = container(rendered(overlay))
    ports = port_names(c)
    want = {"startupProbe": "/readyz", "readinessProbe": "/readyz", "livenessProbe": "/healthz"}
    for probe, path in want.items():
        get = c[probe]["httpGet"]
        assert get["path"] == path, f"{probe} on {get['path']}"
        port = ports.get(get["port"], get["port"])
        assert port == METRICS_PORT, f"{probe} on port {get['port']}, not the metrics port"
    assert ports.get("http") == 8080 and env(c).get("EDGED_PORT", "8080") == "8080"
    assert ports.get("metrics") == METRICS_PORT
    assert env(c).get("EDGED_METRICS_LISTEN") == f"0.0.0.0:{METRICS_PORT}", env(c)


def test_gpu_startup_allows_cuda_start():
    """CUDA context creation can take many seconds: the GPU pod gets a minute or more before
    the startup probe gives up."""
    p = container(rendered("gpu"))["startupProbe"]
    assert p["periodSeconds"] * p["failureThreshold"] >= 60, p


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_grace_period_longer_than_drain(overlay):
    d = deployment(rendered(overlay))
    c = container(rendered(overlay))
    e = env(c)
    assert "EDGED_QUEUE_DEADLINE_MS" in e, "set EDGED_QUEUE_DEADLINE_MS so that the drain is bounded"
    drain = packaging.drain_bound_s(e)
    pre = c.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
    if pre[:1] == ["sleep"]:
        drain += float(pre[1])
    grace = d["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace > drain, f"terminationGracePeriodSeconds {grace} <= drain {drain}"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_security_context(overlay):
    docs = rendered(overlay)
    pod = deployment(docs)["spec"]["template"]
    psc = pod["spec"]["securityContext"]
    image = packaging.GPU_STAGES[1] if overlay == "gpu" else packaging.CPU_STAGES[1]
    uid, _, gid = packaging.image_user(image).partition(":")
    assert psc["runAsNonRoot"] is True
    assert psc.get("runAsUser", 1) != 0
    assert str(psc["runAsUser"]) == uid, f"runAsUser {psc['runAsUser']}, the image's USER is {uid}"
    assert not gid or str(psc.get("runAsGroup")) == gid, f"runAsGroup {psc.get('runAsGroup')}, image {gid}"
    assert psc["seccompProfile"]["type"] == "RuntimeDefault"
    csc = container(docs)["securityContext"]
    assert csc["allowPrivilegeEscalation"] is False
    assert csc["readOnlyRootFilesystem"] is True
    assert csc["capabilities"]["drop"] == ["ALL"] and not csc["capabilities"].get("add")
    assert pod["spec"].get("automountServiceAccountToken") is False
    assert docs["Namespace"]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_writable_paths_are_volumes(overlay):
    """With a read-only root filesystem, every path the image writes (the CUDA JIT cache) lies on
    a mounted emptyDir."""
    docs = rendered(overlay)
    image = packaging.GPU_STAGES[1] if overlay == "gpu" else packaging.CPU_STAGES[1]
    written = [v for k, v in packaging.runtime_env(image).items() if k.endswith("_PATH")]
    empty = {v["name"] for v in deployment(docs)["spec"]["template"]["spec"].get("volumes", []) if "emptyDir" in v}
    mounts = [m["mountPath"].rstrip("/") + "/" for m in container(docs).get("volumeMounts", []) if m["name"] in empty]
    assert "/tmp/" in mounts, "no emptyDir on /tmp"
    for path in written:
        assert any(path.startswith(m) for m in mounts), f"{path} is not on a writable volume"


def test_scrape_annotations():
    d = deployment(rendered("gpu"))
    ann = d["spec"]["template"]["metadata"]["annotations"]
    assert ann["prometheus.io/scrape"] == "true" and ann["prometheus.io/path"] == "/metrics"
    assert int(ann["prometheus.io/port"]) == port_names(container(rendered("gpu")))["metrics"] == METRICS_PORT


# ---------------------------------------------------------------- Service, PDB, NetworkPolicy, PodMonitor


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_labels_connect_service_pdb_policy_monitor(overlay):
    docs = rendered(overlay)
    d, svc = deployment(docs), docs["Service"]
    labels = pod_labels(docs)
    assert d["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert svc["spec"]["selector"].items() <= labels.items(), "Service selects no edged pod"
    names = set(port_names(container(docs))) | {8080}
    assert all(p["targetPort"] in names for p in svc["spec"]["ports"])
    for kind in ("PodDisruptionBudget", "PodMonitor"):
        sel = docs[kind]["spec"]["selector"]["matchLabels"]
        assert sel and sel.items() <= labels.items(), f"{kind} selects no edged pod"
    sel = docs["NetworkPolicy"]["spec"]["podSelector"]["matchLabels"]
    assert sel and sel.items() <= labels.items(), "NetworkPolicy selects no edged pod"


def test_pdb_never_blocks_a_drain():
    pdb = rendered("gpu")["PodDisruptionBudget"]
    assert pdb["apiVersion"] == "policy/v1"
    spec = pdb["spec"]
    replicas = deployment(rendered("gpu"))["spec"].get("replicas", 1)
    if "minAvailable" in spec:
        assert int(spec["minAvailable"]) < replicas, "minAvailable >= replicas: no node can ever be drained"
    else:
        assert int(spec["maxUnavailable"]) >= 1


def test_networkpolicy_ingress_api_and_metrics_only_no_egress():
    np_ = rendered("gpu")["NetworkPolicy"]
    spec = np_["spec"]
    assert sorted(spec["policyTypes"]) == ["Egress", "Ingress"]
    ports = [p for rule in spec["ingress"] for p in rule.get("ports") or [{}]]
    allowed = (8080, "http", METRICS_PORT, "metrics")
    assert ports and all(p.get("port") in allowed and p.get("protocol", "TCP") == "TCP" for p in ports), ports
    assert {p["port"] for p in ports} & {METRICS_PORT, "metrics"}, "Prometheus cannot reach the metrics port"
    assert spec.get("egress", []) == [], "edged opens no connection: no egress rule"


def test_podmonitor_scrapes_metrics():
    docs = rendered("gpu")
    pm = docs["PodMonitor"]
    assert pm["apiVersion"] == "monitoring.coreos.com/v1"
    assert set(pm["spec"]) <= {"selector", "podMetricsEndpoints", "namespaceSelector", "jobLabel",
                               "podTargetLabels", "sampleLimit"}, sorted(pm["spec"])
    eps = pm["spec"]["podMetricsEndpoints"]
    assert eps, "PodMonitor without endpoints"
    for ep in eps:
        assert ep["port"] == "metrics" and "metrics" in port_names(container(docs)), f"PodMonitor port {ep['port']}"
        assert ep.get("path", "/metrics") == "/metrics"
        assert re.fullmatch(r"\d+[smh]", ep.get("interval", "30s")), ep


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_prometheusrule_carries_the_rules_file(overlay):
    """The overlays create the PrometheusRule of components/alerts: the groups of
    docker/monitoring/edged-rules.yaml, in edged's namespace, beside a PodMonitor whose job is
    the one the rules select."""
    docs = rendered(overlay)
    pr = docs["PrometheusRule"]
    assert pr["apiVersion"] == "monitoring.coreos.com/v1" and set(pr["spec"]) == {"groups"}
    rules = yaml.safe_load(packaging.read(os.path.join(ROOT, "docker", "monitoring", "edged-rules.yaml")))
    assert pr["spec"] == rules, "run docker/monitoring/prometheusrule.py"
    job = pod_labels(docs)[docs["PodMonitor"]["spec"]["jobLabel"]]
    assert f'up{{job="{job}"}}' in json.dumps(rules).replace('\\"', '"'), f"the rules do not select job {job}"


# ---------------------------------------------------------------- autoscaling


SCALEDOBJECT_SPEC = {"scaleTargetRef", "pollingInterval", "cooldownPeriod", "initialCooldownPeriod",
                     "idleReplicaCount", "minReplicaCount", "maxReplicaCount", "advanced", "fallback", "triggers"}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_scaledobject_structure(overlay):
    docs = rendered(overlay)
    so = docs["ScaledObject"]
    assert so["apiVersion"] == "keda.sh/v1alpha1"
    spec = so["spec"]
    assert set(spec) <= SCALEDOBJECT_SPEC, f"unknown ScaledObject fields {sorted(set(spec) - SCALEDOBJECT_SPEC)}"
    ref = spec["scaleTargetRef"]
    assert ref.get("kind", "Deployment") == "Deployment" and ref["name"] == deployment(docs)["metadata"]["name"]
    assert 1 <= spec["minReplicaCount"] <= spec["maxReplicaCount"]
    assert "replicas" not in deployment(docs)["spec"], "the autoscaler owns the replica count"
    behavior = spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert behavior["scaleDown"]["stabilizationWindowSeconds"] >= 60, "scale down slowly: start-up is costly"
    assert spec["triggers"]
    for t in spec["triggers"]:
        assert t["type"] == "prometheus", t
        assert t.get("metricType", "AverageValue") in ("AverageValue", "Value"), t
        md = t["metadata"]
        assert all(isinstance(v, str) for v in md.values()), f"trigger metadata values must be strings: {md}"
        assert re.fullmatch(r"https?://[\w.-]+(:\d+)?/?", md["serverAddress"]), md["serverAddress"]
        assert float(md["threshold"]) > 0, md["threshold"]
        query = md["query"]
        assert query.count("(") == query.count(")"), query
        for ns in re.findall(r'namespace="([^"]*)"', query):
            assert ns == NAMESPACE, f"query selects namespace {ns}, the objects live in {NAMESPACE}"
        assert re.search(r'namespace="', query), f"query not limited to edged's namespace: {query}"


def test_scaledobject_scales_on_queue():
    triggers = rendered("gpu")["ScaledObject"]["spec"]["triggers"]
    queries = " ".join(t["metadata"]["query"] for t in triggers)
    assert "edged_queue_depth" in queries and "edged_queue_wait_seconds" in queries, queries


def test_hpa_on_queue_depth():
    docs = rendered_hpa()
    hpa = docs["HorizontalPodAutoscaler"]
    assert hpa["apiVersion"] == "autoscaling/v2"
    spec = hpa["spec"]
    assert 1 <= spec["minReplicas"] <= spec["maxReplicas"]
    pods = [m for m in spec["metrics"] if m["type"] == "Pods"]
    assert len(pods) == 1, spec["metrics"]
    assert pods[0]["pods"]["metric"]["name"] == HPA_METRIC
    target = pods[0]["pods"]["target"]
    assert target["type"] == "AverageValue" and float(target["averageValue"]) > 0
    ref = spec["scaleTargetRef"]
    assert (ref["kind"], ref["name"]) == ("Deployment", deployment(docs)["metadata"]["name"])
    assert hpa["metadata"]["namespace"] == NAMESPACE


def adapter_docs():
    """{kind: doc} of the prometheus-adapter example, applied on its own into the monitoring stack."""
    path = os.path.join(K8S, "components", "hpa", "prometheus-adapter.yaml")
    docs = {d["kind"]: d for d in yaml.safe_load_all(packaging.read(path)) if d}
    assert "ConfigMap" in docs, f"{path}: no ConfigMap"
    return docs


def test_adapter_rule_publishes_hpa_metric():
    cm = adapter_docs()["ConfigMap"]
    cfg = yaml.safe_load(cm["data"]["config.yaml"])
    names = []
    for rule in cfg["rules"]:
        assert "<<.LabelMatchers>>" in rule["metricsQuery"] and "<<.GroupBy>>" in rule["metricsQuery"]
        assert {"namespace", "pod"} <= set(rule["resources"]["overrides"]), "pod metric: pod+namespace"
        names.append(rule["name"]["as"])
        assert HPA_METRIC in rule["seriesQuery"]
    assert HPA_METRIC in names


def autoscaler_series():
    """Every edged_* series name the ScaledObject queries and the HPA/adapter rule read."""
    text = " ".join(t["metadata"]["query"] for t in rendered("gpu")["ScaledObject"]["spec"]["triggers"])
    cfg = yaml.safe_load(adapter_docs()["ConfigMap"]["data"]["config.yaml"])
    text += " " + " ".join(r["seriesQuery"] for r in cfg["rules"])
    text += " " + rendered_hpa()["HorizontalPodAutoscaler"]["spec"]["metrics"][0]["pods"]["metric"]["name"]
    return set(re.findall(r"\bedged_[a-z0-9_]+", text))


def test_autoscaler_series_exported_by_server(server):
    """Each series the autoscalers query is one the running server exports on /metrics; the
    queue depth is a gauge and the queue wait a histogram."""
    text = requests.get(server.url + "/metrics", timeout=10).text
    series = autoscaler_series()
    assert {HPA_METRIC, "edged_queue_wait_seconds_sum", "edged_queue_wait_seconds_count"} <= series, series
    for name in sorted(series):
        assert re.search(rf"^{name}(\{{[^}}]*\}})? \S+$", text, re.M), f"no {name} sample in /metrics"
    assert re.search(rf"^# TYPE {HPA_METRIC} gauge$", text, re.M), f"no gauge {HPA_METRIC} in /metrics"
    assert re.search(rf"^{HPA_METRIC}(\{{[^}}]*\}})? \d", text, re.M), f"no {HPA_METRIC} sample in /metrics"
    assert re.search(r"^# TYPE edged_queue_wait_seconds histogram$", text, re.M)


# ---------------------------------------------------------------- compose


def test_compose_validates_against_the_compose_spec():
    try:
        import jsonschema
    except ImportError:
        pytest.skip("jsonschema not installed (it comes with kubernetes-validate): compose not validated")
    with open(COMPOSE_SCHEMA, encoding="utf-8") as f:
        schema = json.load(f)
    doc = packaging.load_yaml(packaging.COMPOSE)
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


def test_compose_config_with_docker_compose():
    """`docker compose config` (no engine needed) where the Compose plugin is installed."""
    docker = shutil.which("docker")
    if docker is None or subprocess.run([docker, "compose", "version"], capture_output=True).returncode != 0:
        pytest.skip("docker compose not installed: compose checked against the schema only")
    r = subprocess.run([docker, "compose", "-f", packaging.COMPOSE, "--profile", "cpu", "config", "-q"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_compose_images_pinned_and_built_from_their_targets():
    gpu, cpu = packaging.gpu_and_cpu_services()
    v = version()
    assert gpu["image"] == f"edged:{v}", gpu["image"]
    assert cpu["image"] == f"edged:{v}-cpu", cpu["image"]
    assert gpu["build"]["target"] == packaging.GPU_STAGES[1]
    assert cpu["build"]["target"] == packaging.CPU_STAGES[1]
    for svc in (gpu, cpu):
        assert svc.get("read_only") is True and "ALL" in svc.get("cap_drop", []), svc
