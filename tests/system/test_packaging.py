"""test_packaging.py — Dockerfile, compose file and k8s manifests are well-formed (CI runs no Docker)."""
import glob
import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCKERFILE = os.path.join(ROOT, "Dockerfile")
COMPOSE = os.path.join(ROOT, "docker", "compose.yaml")
K8S = os.path.join(ROOT, "docker", "k8s")
DEPS = os.path.join(ROOT, "docker", "deps.sh")

# The configuration variables of `edged serve` (issue 4) with their defaults; server/config.c, once it
# exists, is the authority (its option table), and any other EDGED_ name is a typo.
SPEC_VARS = {
    "EDGED_PORT": "8080", "EDGED_BACKEND": "auto", "EDGED_MAX_BODY_MB": "64",
    "EDGED_MAX_PIXELS": "50000000", "EDGED_MAX_SIDE": "32768", "EDGED_QUEUE_DEPTH": "64",
    "EDGED_QUEUE_DEADLINE_MS": None, "EDGED_STREAMS": "4", "EDGED_THREADS": None,
}
CONFIG_C = os.path.join(ROOT, "server", "config.c")
HPA_METRIC = "edged_queue_depth"


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def edged_vars(need=False):
    """{EDGED_NAME: default} from server/config.c's option table, else the spec's list (then a
    test that needs the complete table is skipped, visibly)."""
    if not os.path.exists(CONFIG_C):
        if need:
            pytest.skip("no server/config.c: EDGED_* names checked against nothing")
        return dict(SPEC_VARS)
    table = re.findall(r'"(EDGED_[A-Z0-9_]+)",\s*OPT_\w+,\s*O\(\w+\),\s*[^,]+,\s*[^,]+,\s*"([^"]*)"',
                       read(CONFIG_C))
    assert table, "server/config.c exists but its option table was not understood"
    return dict(table)


def drain_bound_s(env):
    """Longest SIGTERM-to-exit for this environment: the optional accept grace, then the longer
    of the queue deadline (every queued job answered) and the in-flight wait cap."""
    known = edged_vars()

    def num(name):
        v = env.get(name, known.get(name))
        return float(v) if v not in (None, "") else 0.0
    return num("EDGED_DRAIN_GRACE_MS") / 1000 + max(num("EDGED_QUEUE_DEADLINE_MS") / 1000,
                                                    num("EDGED_DRAIN_TIMEOUT_S"))


def yaml_mod():
    """PyYAML (Debian python3-yaml); without it every YAML check is skipped, visibly."""
    return pytest.importorskip("yaml", reason="python3-yaml not installed: YAML checks skipped")


def load_yaml(path):
    return yaml_mod().safe_load(read(path))


# ---------------------------------------------------------------- Dockerfile


def dockerfile_instructions(text):
    """Returns [(INSTRUCTION, args)] with comments dropped and backslash continuations joined."""
    out, cur = [], ""
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue  # Docker drops comment lines, also inside a continuation
        cur = cur + " " + s if cur else s
        if cur.endswith("\\"):
            cur = cur[:-1].rstrip()
            continue
        word, _, args = cur.partition(" ")
        out.append((word.upper(), args.strip()))
        cur = ""
    assert cur == "", "Dockerfile ends inside a line continuation"
    return out


def stages():
    """The Dockerfile split at FROM: [[(instr, args), ...], ...]; global ARGs before FROM dropped."""
    result = []
    for ins, args in dockerfile_instructions(read(DOCKERFILE)):
        if ins == "FROM":
            result.append([])
        if result:
            result[-1].append((ins, args))
    return result


def args_of(stage, ins):
    return [a for i, a in stage if i == ins]


def test_dockerfile_two_stages_on_cuda_images():
    st = stages()
    assert len(st) == 2, f"want exactly 2 FROM stages, got {len(st)}"
    build_from, run_from = st[0][0][1], st[1][0][1]
    image = r"nvidia/cuda:\$\{CUDA_VERSION\}-"
    assert re.match(image + r"devel-ubuntu24\.04\s+AS\s+\w+", build_from, re.I), build_from
    assert re.match(image + r"(base|runtime)-ubuntu24\.04\b", run_from), run_from
    alias = build_from.split()[-1]
    copies = " ".join(args_of(st[1], "COPY"))
    assert f"--from={alias}" in copies, "runtime stage does not copy from the build stage"


def test_dockerfile_build_args():
    ins = dockerfile_instructions(read(DOCKERFILE))
    first_from = next(i for i, (w, _) in enumerate(ins) if w == "FROM")
    global_args = [a for w, a in ins[:first_from] if w == "ARG"]
    assert any(re.fullmatch(r"CUDA_VERSION=13\.\d+\.\d+", a) for a in global_args), global_args
    build = stages()[0]
    assert any(a.split("=")[0] == "CUDA_ARCHS" for a in args_of(build, "ARG")), "no ARG CUDA_ARCHS"
    make = [a for a in args_of(build, "RUN") if re.search(r"\bmake\b", a)]
    assert make, "build stage never runs make"
    assert "CUDA_ARCHS" in make[0] and "GPU=1" in make[0] and "NPP=0" in make[0], make[0]
    assert "build/edged" in make[0], make[0]


def test_dockerfile_installs_only_through_deps_sh():
    text = read(DOCKERFILE)
    assert not re.search(r"apt-get\s+(-\S+\s+)*install|apt\s+install|\bpip3?\s+install", text), \
        "Dockerfile installs packages itself; the list lives in docker/deps.sh"
    build, runtime = stages()
    assert any(re.search(r"deps\.sh\s+build\b", a) for a in args_of(build, "RUN")), "no deps.sh build"
    assert any(re.search(r"deps\.sh\s+runtime\b", a) for a in args_of(runtime, "RUN")), "no deps.sh runtime"
    assert any("docker/deps.sh" in a for a in args_of(runtime, "COPY")), "runtime stage lacks deps.sh"
    groups = re.findall(r"^\s*(\w+)\)", read(DEPS), re.M)
    assert {"build", "runtime"} <= set(groups), f"docker/deps.sh groups: {groups}"


def test_dockerfile_runtime_contract():
    runtime = stages()[1]
    users = args_of(runtime, "USER")
    assert users, "runtime stage has no USER"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0"), f"runs as {users[-1]}"
    assert "8080" in " ".join(args_of(runtime, "EXPOSE")).split()
    assert args_of(runtime, "STOPSIGNAL") == ["SIGTERM"]
    hc = args_of(runtime, "HEALTHCHECK")
    assert len(hc) == 1 and re.search(r"CMD\s+(\[\s*\"edged\"\s*,\s*\"health\"|edged\s+health)", hc[0]), hc
    ep = args_of(runtime, "ENTRYPOINT")
    assert ep and re.fullmatch(r'\[\s*"edged"\s*,\s*"serve"\s*\]', ep[-1]), ep
    assert "api/openapi.yaml" in read(DOCKERFILE), "api/openapi.yaml is not put into the image"


def test_dockerfile_env_is_edged_config_only():
    """Configuration only through EDGED_* variables: no config files, no unknown EDGED_ names."""
    text = read(DOCKERFILE)
    known = edged_vars(need=True)
    for name in re.findall(r"\bEDGED_[A-Z0-9_]+", text):
        assert name in known, f"unknown variable {name} in Dockerfile"
    assert "--config" not in text and ".conf" not in text


def test_dockerfile_run_lines_parse_as_sh():
    """Every shell-form RUN is valid POSIX sh (sh -n), and shellcheck-clean where installed."""
    runs = [a for st in stages() for a in args_of(st, "RUN") if not a.startswith("[")]
    assert runs
    for cmd in runs:
        r = subprocess.run(["sh", "-n", "-c", cmd], capture_output=True, text=True)
        assert r.returncode == 0, f"sh -n failed on RUN {cmd!r}: {r.stderr}"
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck not installed: RUN lines checked with sh -n only")
    script = "#!/bin/sh\n" + "\n".join(runs) + "\n"
    r = subprocess.run(["shellcheck", "-s", "sh", "-"], input=script, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


def test_dockerignore_keeps_context_small():
    path = os.path.join(ROOT, ".dockerignore")
    assert os.path.exists(path), "no .dockerignore"
    pats = {line.strip() for line in read(path).splitlines() if line.strip() and not line.startswith("#")}
    for want in (".git", "build*/", "tests/out"):
        assert want in pats, f".dockerignore lacks {want}"
    assert not any(p in ("docker", "docker/", "api", "api/", "*") for p in pats), \
        ".dockerignore excludes files the build needs"


# ---------------------------------------------------------------- compose


def compose_services():
    doc = load_yaml(COMPOSE)
    assert isinstance(doc, dict) and isinstance(doc.get("services"), dict), "compose.yaml has no services"
    return doc["services"]


def env_dict(env):
    """Compose environment as a mapping or a KEY=VALUE list -> dict."""
    if isinstance(env, list):
        return dict(e.split("=", 1) if "=" in e else (e, None) for e in env)
    return dict(env or {})


def seconds(duration):
    """Compose duration ('30s', '1m30s', '1500ms') -> float seconds."""
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", str(duration))
    assert parts and "".join(n + u for n, u in parts) == str(duration), f"bad duration {duration!r}"
    return sum(float(n) * units[u] for n, u in parts)


def gpu_and_cpu_services():
    svcs = compose_services()
    gpu = [s for s in svcs.values() if not s.get("profiles")]
    cpu = [s for s in svcs.values() if "cpu" in (s.get("profiles") or [])]
    assert len(gpu) == 1, "want exactly one service without a profile (the GPU one)"
    assert len(cpu) == 1, "want exactly one service in profile cpu"
    return gpu[0], cpu[0]


def test_compose_gpu_service():
    gpu, _ = gpu_and_cpu_services()
    devices = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert {"driver": "nvidia", "count": 1, "capabilities": ["gpu"]} in devices, devices
    assert env_dict(gpu.get("environment")).get("EDGED_BACKEND") in ("gpu", "auto")


def test_compose_common_contract():
    for svc in gpu_and_cpu_services():
        assert svc.get("restart") == "on-failure"
        test = svc["healthcheck"]["test"]
        cmd = " ".join(test[1:]) if isinstance(test, list) else test
        assert re.search(r"\bedged\s+health\b", cmd), test
        assert any(str(p).split(":")[-1] == "8080" for p in svc["ports"]), svc["ports"]
        assert svc.get("build") or svc.get("image")
        env = env_dict(svc.get("environment"))
        assert env.get("EDGED_PORT", "8080") == "8080", "container port and EDGED_PORT disagree"
        assert "EDGED_QUEUE_DEADLINE_MS" in env, "set EDGED_QUEUE_DEADLINE_MS so that the drain is bounded"
        drain = drain_bound_s(env)
        grace = seconds(svc.get("stop_grace_period", "10s"))
        assert grace > drain, f"stop_grace_period {grace} s not above the {drain} s drain"


def test_compose_cpu_profile_has_no_gpu():
    _, cpu = gpu_and_cpu_services()
    assert env_dict(cpu.get("environment")).get("EDGED_BACKEND") == "cpu"
    devices = (((cpu.get("deploy") or {}).get("resources") or {}).get("reservations") or {}).get("devices")
    assert not devices, "the cpu profile reserves a GPU"


def test_compose_host_ports_distinct():
    ports = [str(p).rsplit(":", 1)[0] for s in compose_services().values() for p in s.get("ports", [])]
    assert len(ports) == len(set(ports)), f"two services publish the same host port: {ports}"


# ---------------------------------------------------------------- Kubernetes


def k8s_docs():
    """{kind: doc} over docker/k8s/*.yaml (every file parses; one document per file)."""
    yaml = yaml_mod()
    docs = {}
    files = sorted(glob.glob(os.path.join(K8S, "*.yaml")))
    assert files, "no docker/k8s/*.yaml"
    for path in files:
        for doc in yaml.safe_load_all(read(path)):
            if doc is None:
                continue
            assert "apiVersion" in doc and "kind" in doc, f"{path}: no apiVersion/kind"
            assert doc.get("metadata", {}).get("name"), f"{path}: no metadata.name"
            assert doc["kind"] not in docs, f"two {doc['kind']} objects"
            docs[doc["kind"]] = doc
    return docs


def edged_container(deploy):
    cs = deploy["spec"]["template"]["spec"]["containers"]
    assert len(cs) == 1
    return cs[0]


def k8s_env(container):
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def test_k8s_kinds_present():
    docs = k8s_docs()
    assert {"Deployment", "Service", "HorizontalPodAutoscaler", "ConfigMap"} <= set(docs), sorted(docs)
    assert docs["Deployment"]["apiVersion"] == "apps/v1"
    assert docs["HorizontalPodAutoscaler"]["apiVersion"] == "autoscaling/v2"


def test_k8s_deployment_gpu_and_resources():
    c = edged_container(k8s_docs()["Deployment"])
    res = c["resources"]
    assert str(res["limits"]["nvidia.com/gpu"]) == "1", "want one GPU per replica"
    assert str(res["requests"].get("nvidia.com/gpu", 1)) == "1"
    assert res["requests"].get("cpu") and res["requests"].get("memory"), "no cpu/memory requests"
    assert k8s_env(c).get("EDGED_BACKEND") in ("gpu", "auto")


def test_k8s_deployment_probes():
    c = edged_container(k8s_docs()["Deployment"])
    port_names = {p.get("name"): p["containerPort"] for p in c["ports"]}
    want = {"startupProbe": "/readyz", "readinessProbe": "/readyz", "livenessProbe": "/healthz"}
    for probe, path in want.items():
        get = c[probe]["httpGet"]
        assert get["path"] == path, f"{probe} on {get['path']}"
        port = port_names.get(get["port"], get["port"])
        assert port == 8080, f"{probe} on port {get['port']}"


def test_k8s_grace_period_longer_than_drain():
    d = k8s_docs()["Deployment"]
    c = edged_container(d)
    env = k8s_env(c)
    assert "EDGED_QUEUE_DEADLINE_MS" in env, "set EDGED_QUEUE_DEADLINE_MS so that the drain is bounded"
    drain = drain_bound_s(env)
    pre = c.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
    if pre[:1] == ["sleep"]:
        drain += float(pre[1])
    grace = d["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace > drain, f"terminationGracePeriodSeconds {grace} <= drain {drain}"


def test_k8s_non_root_and_scrape_annotations():
    d = k8s_docs()["Deployment"]
    pod = d["spec"]["template"]
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert pod["spec"]["securityContext"].get("runAsUser", 1) != 0
    ann = pod["metadata"]["annotations"]
    assert ann["prometheus.io/scrape"] == "true" and ann["prometheus.io/path"] == "/metrics"
    assert int(ann["prometheus.io/port"]) == edged_container(d)["ports"][0]["containerPort"]


def test_k8s_labels_connect_service_and_hpa():
    docs = k8s_docs()
    d, svc, hpa = docs["Deployment"], docs["Service"], docs["HorizontalPodAutoscaler"]
    labels = d["spec"]["template"]["metadata"]["labels"]
    assert d["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert svc["spec"]["selector"].items() <= labels.items(), "Service selects no edged pod"
    port_names = {p.get("name") for p in edged_container(d)["ports"]} | {8080}
    assert all(p["targetPort"] in port_names for p in svc["spec"]["ports"])
    ref = hpa["spec"]["scaleTargetRef"]
    assert (ref["kind"], ref["name"]) == ("Deployment", d["metadata"]["name"])


def test_k8s_hpa_on_queue_depth():
    hpa = k8s_docs()["HorizontalPodAutoscaler"]
    spec = hpa["spec"]
    assert 1 <= spec["minReplicas"] <= spec["maxReplicas"]
    pods = [m for m in spec["metrics"] if m["type"] == "Pods"]
    assert len(pods) == 1, spec["metrics"]
    assert pods[0]["pods"]["metric"]["name"] == HPA_METRIC
    target = pods[0]["pods"]["target"]
    assert target["type"] == "AverageValue" and float(target["averageValue"]) > 0


def test_k8s_adapter_rule_publishes_hpa_metric():
    cm = k8s_docs()["ConfigMap"]
    cfg = yaml_mod().safe_load(cm["data"]["config.yaml"])
    names = []
    for rule in cfg["rules"]:
        assert "<<.LabelMatchers>>" in rule["metricsQuery"] and "<<.GroupBy>>" in rule["metricsQuery"]
        assert {"namespace", "pod"} <= set(rule["resources"]["overrides"]), "pod metric: pod+namespace"
        names.append(rule["name"]["as"])
        assert HPA_METRIC in rule["seriesQuery"]
    assert HPA_METRIC in names


def test_hpa_metric_is_exported_by_server():
    """The HPA scales on a metric the server really exports (checked in server sources)."""
    path = os.path.join(ROOT, "server", "metrics.c")
    srcs = [path] if os.path.exists(path) else \
        [p for p in glob.glob(os.path.join(ROOT, "server", "*.c")) if "# TYPE" in read(p)]
    if not srcs:
        pytest.skip("no server/metrics.c (nor a server source with '# TYPE'): metric name unchecked")
    assert any(HPA_METRIC in read(p) for p in srcs), f"{HPA_METRIC} not found in {srcs}"


# ---------------------------------------------------------------- configuration variables


def used_edged_vars():
    """Every EDGED_* name set in the Dockerfile (ENV), compose and the k8s manifests."""
    names = set()
    for ins, args in dockerfile_instructions(read(DOCKERFILE)):
        if ins == "ENV":
            names |= set(re.findall(r"\b(EDGED_[A-Z0-9_]+)=", args))
    for svc in compose_services().values():
        names |= {k for k in env_dict(svc.get("environment")) if k.startswith("EDGED_")}
    d = k8s_docs()["Deployment"]
    names |= {k for k in k8s_env(edged_container(d)) if k.startswith("EDGED_")}
    return names


def test_edged_vars_are_known():
    used, known = used_edged_vars(), set(edged_vars(need=True))
    assert used, "no EDGED_* configuration at all"
    assert used <= known, f"unknown variables: {sorted(used - known)}"
    assert set(SPEC_VARS) <= known, f"server lacks spec variables {sorted(set(SPEC_VARS) - known)}"


def test_edged_vars_documented_in_readme():
    readme = os.path.join(ROOT, "README.md")
    rows = [l for l in read(readme).splitlines() if l.lstrip().startswith("|") and "EDGED_" in l] \
        if os.path.exists(readme) else []
    if not rows:
        pytest.skip("README.md has no configuration table (| ... EDGED_ ... |) yet")
    documented = set(re.findall(r"EDGED_[A-Z0-9_]+", "\n".join(rows)))
    missing = used_edged_vars() - documented
    assert not missing, f"README configuration table lacks {sorted(missing)}"
