"""test_packaging.py — what the container, the manifests and `make install` deliver: the files the
image gets (the Dockerfile's own install command run into a temporary root), the Dockerfile's stages
and paths, docker/deps.sh against the libraries the build and the binary use, the compose file and
k8s manifests parsed as YAML, and every EDGED_* name they set known to `edged serve --help`
(CI runs no Docker)."""
import filecmp
import glob
import os
import re
import shlex
import shutil
import subprocess

import pytest
import requests
import yaml

import conftest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCKERFILE = os.path.join(ROOT, "Dockerfile")
COMPOSE = os.path.join(ROOT, "docker", "compose.yaml")
K8S = os.path.join(ROOT, "docker", "k8s")
DEPS = os.path.join(ROOT, "docker", "deps.sh")
MAKEFILE = os.path.join(ROOT, "Makefile")

# Configuration variables the deployment files rely on; every one must be among the server's.
SPEC_VARS = ("EDGED_PORT", "EDGED_BACKEND", "EDGED_MAX_BODY_MB", "EDGED_MAX_PIXELS", "EDGED_MAX_SIDE",
             "EDGED_QUEUE_DEPTH", "EDGED_QUEUE_DEADLINE_MS", "EDGED_STREAMS", "EDGED_THREADS")
HPA_METRIC = "edged_queue_depth"
# Libraries the CUDA base image (or libc) already has: deps.sh's runtime group need not list them.
BASE_IMAGE_PACKAGES = {"libc6", "libstdc++6", "libgcc-s1"}


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def installed_binary():
    """The binary under test (under valgrind runs, the one the wrapper runs)."""
    return os.path.join(ROOT, os.environ.get("EDGED_VG_BIN") or os.path.relpath(conftest.BIN, ROOT))


def edged_vars():
    """{EDGED_NAME: default} as `edged serve --help` lists them (its configuration table)."""
    r = subprocess.run([installed_binary(), "serve", "--help"], capture_output=True, text=True, timeout=30)
    table = re.findall(r"\b(EDGED_[A-Z0-9_]+)\s+default\s+(\S+)", r.stdout + r.stderr)
    assert table, "edged serve --help lists no EDGED_* variables:\n" + r.stdout + r.stderr
    return {name: value.strip('"') for name, value in table}


def drain_bound_s(env):
    """Longest SIGTERM-to-exit for this environment: the optional accept grace, then the longer
    of the queue deadline (every queued job answered) and the in-flight wait cap."""
    known = edged_vars()

    def num(name):
        v = env.get(name, known.get(name))
        return float(v) if v not in (None, "") else 0.0
    return num("EDGED_DRAIN_GRACE_MS") / 1000 + max(num("EDGED_QUEUE_DEADLINE_MS") / 1000,
                                                    num("EDGED_DRAIN_TIMEOUT_S"))


def load_yaml(path):
    return yaml.safe_load(read(path))


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
    make = make_install_words()
    assert "GPU=1" in make and "NPP=0" in make, make
    assert any(w.startswith("CUDA_ARCHS=") or "CUDA_ARCHS=" in w for w in make), make


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


def deps_group(name):
    """The package list of one docker/deps.sh group (BUILD, TEST, RUNTIME, DEV) as words; a|b
    alternatives stay one word."""
    assigns = "\n".join(l for l in read(DEPS).splitlines() if re.match(r"[A-Z]+=", l))
    r = subprocess.run(["sh", "-c", assigns + '\nprintf "%s" "$' + name + '"'], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.split(), f"deps.sh has no {name} list: {r.stderr}"
    return r.stdout.split()


def make_var(name):
    """A variable of the Makefile as make evaluates it."""
    r = subprocess.run(["make", "-s", "--no-print-directory", "-f", "Makefile", "-f", "-", "print-var"], cwd=ROOT,
                       input=f"print-var:\n\t@echo $({name})\n", capture_output=True, text=True, timeout=60,
                       env={k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")})
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def dpkg_owner(path):
    """The Debian package that installed path (merged /usr: either spelling), or None."""
    real = os.path.realpath(path)
    for p in dict.fromkeys([path, real] + [re.sub(r"^/usr/", "/", q) for q in (path, real)] +
                           ["/usr" + q for q in (path, real) if not q.startswith("/usr/")]):
        r = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout.split(":")[0].strip()
    return None


def test_deps_build_has_every_pkg_config_package():
    """Each pkg-config package the Makefile compiles against comes from a package in deps.sh's
    build group (asked of pkg-config and dpkg, not guessed from names)."""
    build = set(deps_group("BUILD"))
    assert {"make", "gcc", "pkg-config", "help2man"} <= build, sorted(build)
    pkgs = make_var("PKGS")
    assert pkgs, "the Makefile names no pkg-config packages"
    for pkg in pkgs:
        r = subprocess.run(["pkg-config", "--variable=pcfiledir", pkg], capture_output=True, text=True)
        assert r.returncode == 0, f"pkg-config does not know {pkg}: {r.stderr}"
        owner = dpkg_owner(os.path.join(r.stdout.strip(), pkg + ".pc"))
        assert owner in build, f"{pkg}.pc comes from {owner}, not in deps.sh's build group"


def test_deps_runtime_has_every_linked_library():
    """Each shared library the binary needs directly (ELF NEEDED) comes from a package of deps.sh's
    runtime group, or from libc/libstdc++ of the base image."""
    binary = installed_binary()
    runtime = {p for alt in deps_group("RUNTIME") for p in alt.split("|")}
    r = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True)
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", r.stdout)
    assert needed, r.stdout + r.stderr
    ldd = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    paths = dict(re.findall(r"^\s*(\S+) => (/\S+)", ldd, re.M))
    paths.update((os.path.basename(p), p) for p in re.findall(r"^\s*(/\S+) \(", ldd, re.M))  # the loader
    for lib in needed:
        assert lib in paths, f"{lib} not found by ldd"
        owner = dpkg_owner(paths[lib])
        assert owner in runtime | BASE_IMAGE_PACKAGES, f"{lib} comes from {owner}, not in deps.sh's runtime group"


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
    assert "EDGED_OPENAPI" in runtime_env(), "the runtime stage does not say where openapi.yaml is"


def make_install_words():
    """The build stage's `make ... install` command as words (the one way files enter the image)."""
    runs = [a for a in args_of(stages()[0], "RUN") if re.search(r"\bmake\b.*\binstall\b", a)]
    assert len(runs) == 1, f"want one RUN with make ... install in the build stage, got {runs}"
    cmd = next(c for c in runs[0].split("&&") if re.search(r"\bmake\b.*\binstall\b", c))
    return shlex.split(cmd)


def runtime_env():
    """{NAME: value} of the runtime stage's ENV lines."""
    env = {}
    for a in args_of(stages()[1], "ENV"):
        env.update(dict(w.split("=", 1) for w in shlex.split(a)))
    return env


def run_make(*args):
    """make in the repo with the binary under test treated as built (-o: never rebuilt here)."""
    binary = os.path.relpath(installed_binary(), ROOT)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    cmd = ["make", "--no-print-directory", "-o", binary, "BUILD=" + os.path.dirname(binary)] + list(args)
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"{' '.join(cmd)}: exit {r.returncode}\n{r.stdout}{r.stderr}"
    return r.stdout + r.stderr


def test_dockerfile_image_files(tmp_path):
    """The build stage's install command, run into a temporary root, gives the runtime stage what
    it needs: the ENTRYPOINT's edged on the image's PATH, the openapi.yaml EDGED_OPENAPI names,
    and every file copied from the repo exists (no stale paths)."""
    words = make_install_words()
    dest = [w.split("=", 1)[1] for w in words if w.startswith("DESTDIR=")]
    assert dest, f"make install without DESTDIR: {words}"
    build = stages()[0]
    for a in args_of(build, "COPY") + [a for a in args_of(stages()[1], "COPY") if "--from" not in a]:
        srcs = shlex.split(a)[:-1]
        for src in srcs:
            assert src == "." or os.path.exists(os.path.join(ROOT, src)), f"COPY of a missing path: {src}"
    copies = [shlex.split(a) for a in args_of(stages()[1], "COPY") if "--from" in a]
    assert any(c[-2].rstrip("/") == dest[0].rstrip("/") and c[-1] == "/" for c in copies), \
        f"the runtime stage does not copy {dest[0]} to /: {copies}"
    root = str(tmp_path)
    knobs = [w for w in words if re.match(r"(PREFIX|BINDIR|DATADIR|DOCDIR|MANDIR)=", w)]
    run_make("install", "DESTDIR=" + root, *knobs)
    prefix = next((w.split("=", 1)[1] for w in knobs if w.startswith("PREFIX=")), "/usr/local")
    assert prefix + "/bin" in "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".split(":")
    binary = os.path.join(root + prefix, "bin", "edged")
    assert os.access(binary, os.X_OK), f"no executable {binary}"
    openapi = runtime_env()["EDGED_OPENAPI"]
    assert filecmp.cmp(root + openapi, os.path.join(ROOT, "api", "openapi.yaml"), shallow=False), openapi


def test_install_and_uninstall(tmp_path):
    """make install DESTDIR=... PREFIX=... puts the binary, the man page (help2man) or says why not,
    the docs and openapi.yaml in place; make uninstall takes every one of them away again."""
    root, prefix = str(tmp_path), "/opt/edged-test"
    out = run_make("install", "DESTDIR=" + root, "PREFIX=" + prefix)
    base = root + prefix
    binary = os.path.join(base, "bin", "edged")
    assert filecmp.cmp(binary, installed_binary(), shallow=False) and os.access(binary, os.X_OK)
    assert filecmp.cmp(os.path.join(base, "share", "doc", "edged", "README.md"), os.path.join(ROOT, "README.md"),
                       shallow=False)
    for doc in glob.glob(os.path.join(ROOT, "docs", "*.md")):
        assert os.path.exists(os.path.join(base, "share", "doc", "edged", os.path.basename(doc))), doc
    assert filecmp.cmp(os.path.join(base, "share", "edged", "openapi.yaml"),
                       os.path.join(ROOT, "api", "openapi.yaml"), shallow=False)
    man = os.path.join(base, "share", "man", "man1", "edged.1")
    if shutil.which("help2man"):
        text = read(man)
        assert re.search(r"^\.TH EDGED \"?1", text, re.M), text[:200]
        for cmd in ("serve", "filter", "bench", "health"):
            assert cmd in text, f"man page lacks the {cmd} command"
    else:
        assert not os.path.exists(man) and "help2man not found" in out, out
    run_make("uninstall", "DESTDIR=" + root, "PREFIX=" + prefix)
    left = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]
    assert not left, f"make uninstall left {left}"


def test_dockerfile_env_is_edged_config_only():
    """Configuration only through EDGED_* variables: no config files, no unknown EDGED_ names."""
    text = read(DOCKERFILE)
    known = edged_vars()
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
    cfg = yaml.safe_load(cm["data"]["config.yaml"])
    names = []
    for rule in cfg["rules"]:
        assert "<<.LabelMatchers>>" in rule["metricsQuery"] and "<<.GroupBy>>" in rule["metricsQuery"]
        assert {"namespace", "pod"} <= set(rule["resources"]["overrides"]), "pod metric: pod+namespace"
        names.append(rule["name"]["as"])
        assert HPA_METRIC in rule["seriesQuery"]
    assert HPA_METRIC in names


def test_hpa_metric_is_exported_by_server(server):
    """The HPA scales on a metric the running server exports on /metrics (a gauge)."""
    text = requests.get(server.url + "/metrics", timeout=10).text
    assert re.search(rf"^# TYPE {HPA_METRIC} gauge$", text, re.M), f"no gauge {HPA_METRIC} in /metrics"
    assert re.search(rf"^{HPA_METRIC}(\{{[^}}]*\}})? \d", text, re.M), f"no {HPA_METRIC} sample in /metrics"


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
    used, known = used_edged_vars(), set(edged_vars())
    assert used, "no EDGED_* configuration at all"
    assert used <= known, f"unknown variables: {sorted(used - known)}"
    assert set(SPEC_VARS) <= known, f"server lacks spec variables {sorted(set(SPEC_VARS) - known)}"


def test_edged_vars_documented():
    """Every variable the deployment files set has a row in a configuration table of the docs
    (README.md or docs/*.md: lines | ... EDGED_ ... |)."""
    pages = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    rows = [l for p in pages if os.path.exists(p) for l in read(p).splitlines()
            if l.lstrip().startswith("|") and "EDGED_" in l]
    assert rows, "no configuration table (| ... EDGED_ ... |) in README.md or docs/*.md"
    documented = set(re.findall(r"EDGED_[A-Z0-9_]+", "\n".join(rows)))
    missing = used_edged_vars() - documented
    assert not missing, f"the configuration table lacks {sorted(missing)}"
