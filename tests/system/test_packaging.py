"""test_packaging.py — what the containers and `make install` deliver: the files the images get (the
Dockerfile's own install commands run into a temporary root), the Dockerfile's GPU and CPU stages
and paths, docker/deps.sh against the libraries the build and the binary use, the compose file
parsed as YAML, and every EDGED_* name the deployment files set known to `edged serve --help`
(CI runs no Docker). The Kubernetes manifests are rendered and checked in test_deploy.py."""
import filecmp
import glob
import os
import re
import shlex
import shutil
import subprocess

import pytest
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
# Dockerfile stages: (build stage, image stage) of the GPU image and of the CPU-only image.
GPU_STAGES = ("build", "gpu")
CPU_STAGES = ("build-cpu", "cpu")
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


def stage_name(st):
    """The alias of a stage (FROM image AS alias)."""
    words = st[0][1].split()
    assert len(words) == 3 and words[1].upper() == "AS", f"stage without a name: FROM {st[0][1]}"
    return words[2]


def stage(name):
    """The instructions of the stage FROM ... AS name."""
    found = [st for st in stages() if stage_name(st) == name]
    assert len(found) == 1, f"want one stage {name}, got {len(found)}"
    return found[0]


def global_args():
    """{NAME: default} of the ARGs before the first FROM."""
    ins = dockerfile_instructions(read(DOCKERFILE))
    first_from = next(i for i, (w, _) in enumerate(ins) if w == "FROM")
    return dict((a.split("=", 1) + [""])[:2] for w, a in ins[:first_from] if w == "ARG")


def args_of(stage, ins):
    return [a for i, a in stage if i == ins]


def test_dockerfile_two_stages_on_cuda_images():
    """The GPU image: built on the CUDA devel image, run on the CUDA base image; it is the last
    stage, so that a plain `docker build` makes it."""
    st = stages()
    names = [stage_name(x) for x in st]
    assert sorted(names) == sorted(GPU_STAGES + CPU_STAGES), f"stages {names}"
    assert names[-1] == GPU_STAGES[1], f"the default (last) stage is {names[-1]}, not the GPU image"
    build_from, run_from = stage(GPU_STAGES[0])[0][1], stage(GPU_STAGES[1])[0][1]
    image = r"nvidia/cuda:\$\{CUDA_VERSION\}-"
    assert re.match(image + r"devel-ubuntu24\.04\s+AS\s+\w+", build_from, re.I), build_from
    assert re.match(image + r"(base|runtime)-ubuntu24\.04\b", run_from), run_from
    alias = build_from.split()[-1]
    copies = " ".join(args_of(stage(GPU_STAGES[1]), "COPY"))
    assert f"--from={alias}" in copies, "runtime stage does not copy from the build stage"


def test_dockerfile_cpu_stages_carry_no_cuda():
    """The CPU-only image (--target cpu): built with GPU=0 on a plain Debian/Ubuntu base, nothing
    from the CUDA images, copied only from its own build stage."""
    base = global_args().get("CPU_BASE", "")
    assert re.fullmatch(r"(debian:\d+(-slim)?|ubuntu:\d+\.\d+)", base), f"ARG CPU_BASE={base!r}"
    build, image = stage(CPU_STAGES[0]), stage(CPU_STAGES[1])
    for st in (build, image):
        assert re.match(r"\$\{CPU_BASE\}\s", st[0][1]), f"FROM {st[0][1]}"
        assert "cuda" not in " ".join(a for _, a in st).lower(), f"stage {stage_name(st)} mentions CUDA"
    copies = [a for a in args_of(image, "COPY") if "--from" in a]
    assert copies and all(f"--from={CPU_STAGES[0]}" in a for a in copies), copies
    make = make_install_words(CPU_STAGES[0])
    assert "GPU=0" in make and not any("CUDA" in w for w in make), make
    assert runtime_env(CPU_STAGES[1]).get("EDGED_BACKEND") == "cpu", "the CPU image must default to the cpu backend"


def test_dockerfile_build_args():
    args = global_args()
    assert re.fullmatch(r"13\.\d+\.\d+", args.get("CUDA_VERSION", "")), args
    build = stage(GPU_STAGES[0])
    assert any(a.split("=")[0] == "CUDA_ARCHS" for a in args_of(build, "ARG")), "no ARG CUDA_ARCHS"
    make = make_install_words()
    assert "GPU=1" in make and "NPP=0" in make, make
    assert any(w.startswith("CUDA_ARCHS=") or "CUDA_ARCHS=" in w for w in make), make


def test_dockerfile_installs_only_through_deps_sh():
    text = read(DOCKERFILE)
    assert not re.search(r"apt-get\s+(-\S+\s+)*install|apt\s+install|\bpip3?\s+install", text), \
        "Dockerfile installs packages itself; the list lives in docker/deps.sh"
    for build, runtime in (map(stage, GPU_STAGES), map(stage, CPU_STAGES)):
        assert any(re.search(r"deps\.sh\s+build\b", a) for a in args_of(build, "RUN")), "no deps.sh build"
        assert any(re.search(r"deps\.sh\s+runtime\b", a) for a in args_of(runtime, "RUN")), "no deps.sh runtime"
        assert any("docker/deps.sh" in a for a in args_of(runtime, "COPY")), "runtime stage lacks deps.sh"
    groups = re.findall(r"^\s*(\w+)\)", read(DEPS), re.M)
    assert {"build", "runtime"} <= set(groups), f"docker/deps.sh groups: {groups}"


def make_dry_run(target):
    """The commands `make -n TARGET` would run (recursive makes dry-run too)."""
    r = subprocess.run(["make", "-n", "--no-print-directory", "BUILD=build-dry-run", target], cwd=ROOT,
                       capture_output=True, text=True, timeout=120,
                       env={k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")})
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_make_run_installs_only_what_running_needs():
    """`make run` asks deps.sh for the build group alone (no browser, no Python test packages);
    `make test` for the build and test groups."""
    groups = lambda out: [line.split("deps.sh", 1)[1].split() for line in out.splitlines() if "deps.sh" in line]
    assert groups(make_dry_run("run")) == [["build"]], make_dry_run("run")
    assert ["build", "test"] in groups(make_dry_run("test")), make_dry_run("test")


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
    build = {p for alt in deps_group("BUILD") for p in alt.split("|")}  # a|b: either name
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
    runtime group, or from libc/libstdc++ of the base image; libcufft (a build with cuFFT) from the
    CUDA toolkit, which the GPU image copies from its build stage."""
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
        if lib.startswith("libcufft.so."):
            assert re.search(r"^COPY --from=build \S*/%s " % re.escape(lib), read(os.path.join(ROOT, "Dockerfile")),
                             re.M), f"the Dockerfile does not copy {lib} into the GPU image"
            continue
        owner = dpkg_owner(paths[lib])
        assert owner in runtime | BASE_IMAGE_PACKAGES, f"{lib} comes from {owner}, not in deps.sh's runtime group"


def image_user(name):
    """The USER (uid[:gid]) an image stage runs as."""
    users = args_of(stage(name), "USER")
    assert users, f"stage {name} has no USER"
    return users[-1]


@pytest.mark.parametrize("name", [GPU_STAGES[1], CPU_STAGES[1]])
def test_dockerfile_runtime_contract(name):
    runtime = stage(name)
    users = args_of(runtime, "USER")
    assert users, "runtime stage has no USER"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0"), f"runs as {users[-1]}"
    assert user.isdigit(), f"USER {users[-1]}: numeric, so that Kubernetes can check runAsNonRoot"
    assert "8080" in " ".join(args_of(runtime, "EXPOSE")).split()
    # the health check asks the probe listener (edged health follows EDGED_METRICS_LISTEN)
    mport = runtime_env(name).get("EDGED_METRICS_LISTEN", "").rpartition(":")[2]
    assert mport and mport in " ".join(args_of(runtime, "EXPOSE")).split(), (mport, args_of(runtime, "EXPOSE"))
    assert args_of(runtime, "STOPSIGNAL") == ["SIGTERM"]
    hc = args_of(runtime, "HEALTHCHECK")
    # liveness (/healthz), never readiness: an overloaded or draining container is not a hung one
    live = r'CMD\s+(\[\s*"edged"\s*,\s*"health"\s*,\s*"--live"\s*\]|edged\s+health\s+--live\b)'
    assert len(hc) == 1 and re.search(live, hc[0]), hc
    ep = args_of(runtime, "ENTRYPOINT")
    assert ep and re.fullmatch(r'\[\s*"edged"\s*,\s*"serve"\s*\]', ep[-1]), ep
    assert "EDGED_OPENAPI" in runtime_env(name), "the runtime stage does not say where openapi.yaml is"


def test_dockerfile_images_share_the_user():
    """Both images run as the same numeric user, the one the Kubernetes manifests name."""
    assert image_user(GPU_STAGES[1]) == image_user(CPU_STAGES[1])


def make_install_words(build_stage=GPU_STAGES[0]):
    """A build stage's `make ... install` command as words (the one way files enter the image)."""
    runs = [a for a in args_of(stage(build_stage), "RUN") if re.search(r"\bmake\b.*\binstall\b", a)]
    assert len(runs) == 1, f"want one RUN with make ... install in the build stage, got {runs}"
    cmd = next(c for c in runs[0].split("&&") if re.search(r"\bmake\b.*\binstall\b", c))
    return shlex.split(cmd)


def runtime_env(name=GPU_STAGES[1]):
    """{NAME: value} of an image stage's ENV lines."""
    env = {}
    for a in args_of(stage(name), "ENV"):
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


@pytest.mark.parametrize("build_stage,image_stage", [GPU_STAGES, CPU_STAGES])
def test_dockerfile_image_files(tmp_path, build_stage, image_stage):
    """A build stage's install command, run into a temporary root, gives its image stage what
    it needs: the ENTRYPOINT's edged on the image's PATH, the openapi.yaml EDGED_OPENAPI names,
    and every file copied from the repo exists (no stale paths)."""
    words = make_install_words(build_stage)
    dest = [w.split("=", 1)[1] for w in words if w.startswith("DESTDIR=")]
    assert dest, f"make install without DESTDIR: {words}"
    build = stage(build_stage)
    for a in args_of(build, "COPY") + [a for a in args_of(stage(image_stage), "COPY") if "--from" not in a]:
        srcs = shlex.split(a)[:-1]
        for src in srcs:
            assert src == "." or os.path.exists(os.path.join(ROOT, src)), f"COPY of a missing path: {src}"
    copies = [shlex.split(a) for a in args_of(stage(image_stage), "COPY") if "--from" in a]
    assert any(c[-2].rstrip("/") == dest[0].rstrip("/") and c[-1] == "/" for c in copies), \
        f"the runtime stage does not copy {dest[0]} to /: {copies}"
    root = str(tmp_path)
    knobs = [w for w in words if re.match(r"(PREFIX|BINDIR|DATADIR|DOCDIR|MANDIR)=", w)]
    run_make("install", "DESTDIR=" + root, *knobs)
    prefix = next((w.split("=", 1)[1] for w in knobs if w.startswith("PREFIX=")), "/usr/local")
    assert prefix + "/bin" in "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".split(":")
    binary = os.path.join(root + prefix, "bin", "edged")
    assert os.access(binary, os.X_OK), f"no executable {binary}"
    openapi = runtime_env(image_stage)["EDGED_OPENAPI"]
    assert filecmp.cmp(root + openapi, conftest.OPENAPI, shallow=False), openapi


def test_install_and_uninstall(tmp_path):
    """make install DESTDIR=... PREFIX=... puts the binary, the man page (help2man) or says why not,
    the docs and openapi.yaml in place; make uninstall takes every one of them away again."""
    root, prefix = str(tmp_path), "/opt/edged-test"
    # -W: the man page made anew from the binary under test (run_make keeps the binary as it is)
    out = run_make("-W", "server/cli/man_commands.sh", "install", "DESTDIR=" + root, "PREFIX=" + prefix)
    base = root + prefix
    binary = os.path.join(base, "bin", "edged")
    assert filecmp.cmp(binary, installed_binary(), shallow=False) and os.access(binary, os.X_OK)
    assert filecmp.cmp(os.path.join(base, "share", "doc", "edged", "README.md"), os.path.join(ROOT, "README.md"),
                       shallow=False)
    for doc in glob.glob(os.path.join(ROOT, "docs", "*.md")):
        assert os.path.exists(os.path.join(base, "share", "doc", "edged", os.path.basename(doc))), doc
    assert filecmp.cmp(os.path.join(base, "share", "edged", "openapi.yaml"), conftest.OPENAPI, shallow=False)
    man = os.path.join(base, "share", "man", "man1", "edged.1")
    if shutil.which("help2man"):
        text = read(man)
        assert re.search(r"^\.TH EDGED \"?1", text, re.M), text[:200]
        for cmd in ("serve", "filter", "bench", "health"):
            assert f'.SS "edged {cmd}"' in text, f"man page lacks the {cmd} command's help"
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
        assert re.search(r"\bedged\s+health\s+--live\b", cmd), test  # liveness, as the image's
        assert any(str(p).split(":")[-1] == "8080" for p in svc["ports"]), svc["ports"]
        assert svc.get("build") or svc.get("image")
        env = env_dict(svc.get("environment"))
        assert env.get("EDGED_PORT", "8080") == "8080", "container port and EDGED_PORT disagree"
        mport = env.get("EDGED_METRICS_LISTEN", "").rpartition(":")[2]  # the health check's and the scrape's
        assert mport and any(str(p).split(":")[-1] == mport for p in svc["ports"]), (mport, svc["ports"])
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


# ---------------------------------------------------------------- configuration variables


def used_edged_vars():
    """Every EDGED_* name set in the Dockerfile (ENV), compose and the k8s manifests."""
    names = set()
    for ins, args in dockerfile_instructions(read(DOCKERFILE)):
        if ins == "ENV":
            names |= set(re.findall(r"\b(EDGED_[A-Z0-9_]+)=", args))
    for svc in compose_services().values():
        names |= {k for k in env_dict(svc.get("environment")) if k.startswith("EDGED_")}
    names |= {k for k in k8s_env_names() if k.startswith("EDGED_")}
    return names


def k8s_env_names():
    """Every environment variable name a container sets in docker/k8s (base, overlays and
    components, as written: the overlays' patches add to the base's list)."""
    names = set()

    def walk(node):
        if isinstance(node, dict):
            for c in node.get("containers") or []:
                names.update(e["name"] for e in c.get("env") or [])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
    files = sorted(glob.glob(os.path.join(K8S, "**", "*.yaml"), recursive=True))
    assert files, "no docker/k8s/**/*.yaml"
    for path in files:
        for doc in yaml.safe_load_all(read(path)):
            walk(doc)
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
