"""test_cli.py — the edged command line: `--opt value` and `--opt=value` for every subcommand, the
version, the variants' availability column, bench without a GPU, `-` for stdin/stdout, refused
output extensions, the microsecond rounding of --json timings, and many images in one `edged filter`
(pairs, --out-dir, refused name clashes, a bad file among good ones, JSON lines, progress)."""
import json
import os
import re
import socket
import subprocess
import threading

import pytest
import requests

from conftest import BIN, free_port, png_bytes, random_image


def edged(*args, **kw):
    return subprocess.run([BIN] + [str(a) for a in args], capture_output=True, timeout=120, **kw)


def edged_text(*args, **kw):
    return subprocess.run([BIN] + [str(a) for a in args], capture_output=True, text=True, timeout=120, **kw)


@pytest.fixture
def photo(tmp_path):
    """A 48 x 40 RGB PNG file."""
    path = tmp_path / "in.png"
    path.write_bytes(png_bytes(random_image(40, 48, 3, seed=7)))
    return path


def gpu_here():
    """True when `edged variants` says the GPU variants run on this machine."""
    out = edged_text("variants").stdout
    return re.search(r"^naive\s+gpu\s+yes\b", out, re.M) is not None


# ---- --opt value and --opt=value ------------------------------------------------------------------

def test_filter_option_forms(photo, tmp_path):
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    pa = edged_text("filter", photo, a, "--filter", "gaussian", "--size", "5", "--variant", "cpu")
    pb = edged_text("filter", photo, b, "--filter=gaussian", "--size=5", "--variant=cpu")
    assert pa.returncode == 0 and pb.returncode == 0, pa.stderr + pb.stderr
    assert a.read_bytes() == b.read_bytes()
    for form in (["--size", "4", "--filter", "box"], ["--size=4", "--filter=box"]):
        p = edged_text("filter", photo, tmp_path / "c.png", *form)
        assert p.returncode == 2 and "size" in p.stderr, p.stderr


def test_filter_ops_and_value(photo, tmp_path):
    """--ops runs a pipeline (its --json line names it "pipeline"), --ops=JSON as well and with a
    1-bit map; --value sets threshold's cut; a bad step or a knob beside ops is a usage error naming it."""
    ops = [{"filter": "gaussian", "size": 5}, {"filter": "scharr"}, {"filter": "threshold", "value": 60}]
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    p = edged_text("filter", photo, a, "--ops", json.dumps(ops), "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["filter"] == "pipeline"
    q = edged_text("filter", photo, b, "--ops=" + json.dumps(ops), "--bit-depth", "1", "--variant", "cpu_serial")
    assert q.returncode == 0, q.stderr
    p = edged_text("filter", photo, a, "--filter", "threshold", "--value", "99.5")
    assert p.returncode == 0, p.stderr
    for bad, words in [(["--ops", "[]"], ["ops"]), (["--ops", '[{"filter":"box","size":4}]'], ["ops[0].size"]),
                       (["--ops", '[{"filter":"box"}]', "--filter", "sobel"], ["filter", "inside"]),
                       (["--filter", "threshold", "--value", "x"], ["value"]),
                       (["--filter", "box", "--value", "3"], ["value", "threshold"])]:
        p = edged_text("filter", photo, tmp_path / "c.png", *bad)
        assert p.returncode == 2 and all(w in p.stderr for w in words), (bad, p.stderr)


def test_bench_option_forms():
    base = ["--sizes", "32", "--ksizes", "3", "--warmup", "0", "--cpu", "--variants", "naive", "--csv"]
    pa = edged_text("bench", *base, "--reps", "1")
    pb = edged_text("bench", "--sizes=32", "--ksizes=3", "--warmup=0", "--cpu", "--variants=naive", "--csv",
                    "--reps=1")
    assert pa.returncode == 0 and pb.returncode == 0, pa.stderr + pb.stderr
    impl = lambda out: [line.split(",")[2] for line in out.splitlines()[1:]]
    assert impl(pa.stdout) == impl(pb.stdout) and "cpu" in impl(pa.stdout)
    for form in (["--reps", "0"], ["--reps=0"]):
        p = edged_text("bench", *form)
        assert p.returncode == 2 and "--reps" in p.stderr, p.stderr


def test_health_option_forms(server):
    assert edged("health", "--url", server.url).returncode == 0
    assert edged("health", "--url=" + server.url).returncode == 0
    for form in (["--url"], ["--url=ftp://x"], ["--nope=1"], ["--live=1"]):
        p = edged_text("health", *form)
        assert p.returncode == 2 and p.stderr.strip(), form


def test_health_names_why_it_failed(server):
    """Without an HTTP answer the probe says why (exit 1); a non-200 answer is named by its status."""
    port = free_port()  # nothing listens there
    p = edged_text("health", "--url", "http://127.0.0.1:%d" % port)
    assert p.returncode == 1, p
    assert p.stderr.strip() == "edged health: cannot connect to 127.0.0.1:%d: Connection refused" % port, p.stderr
    with socket.socket() as quiet:  # accepts, then closes without a word
        quiet.bind(("127.0.0.1", 0))
        quiet.listen(1)
        closer = threading.Thread(target=lambda: quiet.accept()[0].close())
        closer.start()
        p = edged_text("health", "--url", "http://127.0.0.1:%d" % quiet.getsockname()[1])
        closer.join()
    assert p.returncode == 1 and p.stderr.startswith("edged health: no HTTP answer from 127.0.0.1:"), p.stderr
    p = edged_text("health", "--url", server.url + "/nowhere")
    assert p.returncode == 1 and p.stderr.strip() == "edged health: /nowhere/readyz answered 404", p.stderr
    p = edged_text("health", "--live", "--url", server.url + "/nowhere")
    assert p.returncode == 1 and p.stderr.strip() == "edged health: /nowhere/healthz answered 404", p.stderr


def test_health_live_is_liveness(make_server):
    """--live asks /healthz: a server that cannot serve (no backend) is alive but not ready."""
    if gpu_here():
        pytest.skip("a GPU is present: --backend gpu would be ready")
    s = make_server("--backend", "gpu", wait_ready=False)
    p = edged_text("health", "--url", s.url)
    assert p.returncode == 1 and p.stderr.strip() == "edged health: /readyz answered 503", p.stderr
    p = edged_text("health", "--live", "--url", s.url)
    assert p.returncode == 0 and not p.stderr, p.stderr
    assert edged("health", "--url=" + s.url, "--live").returncode == 0


def test_serve_option_forms(make_server):
    s = make_server("--max-side=555", "--queue-depth", "7")
    limits = requests.get(s.url + "/version").json()["limits"]
    assert limits["max_side"] == 555 and limits["queue_depth"] == 7
    for form in (["--port=0"], ["--port", "0"], ["--backend=tpu"], ["--no-such-flag=1"]):
        p = edged_text("serve", *form)
        assert p.returncode == 2 and p.stderr.strip(), form


SERVE_ERRORS = [  # (environment, arguments, what the one line must name)
    ({"EDGED_PORT": "abc"}, [], ["EDGED_PORT", "'abc'", "1..65535"]),
    ({}, ["--host", "localhost"], ["--host", "EDGED_HOST", "'localhost'", "dotted"]),
    ({}, ["--log-format", "xml"], ["--log-format", "'xml'", "auto, text or json"]),
    ({"EDGED_API_KEYS": "a,,b"}, [], ["EDGED_API_KEYS", "key 2"]),
    ({}, ["--no-such-flag=1"], ["--no-such-flag"]),
    ({}, ["--gpus", "0,0"], ["--gpus", "EDGED_GPUS", "device 0 is listed twice"]),
    ({"EDGED_GPUS": "first"}, [], ["EDGED_GPUS", "'first'", "0..63"]),
    ({}, ["--gpus", "1,64"], ["--gpus", "0..63"]),
]


@pytest.mark.parametrize("env,args,names", SERVE_ERRORS)
def test_serve_config_error_is_one_log_line(env, args, names):
    """A bad setting stops the start with exit 2 and one error line in the log's format (JSON when
    stderr is no terminal, as in a container), naming the flag or variable, the value and what is
    allowed: no usage dump after it."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("EDGED_")}
    p = subprocess.run([BIN, "serve"] + args, capture_output=True, text=True, timeout=30, env=dict(base, **env))
    lines = p.stderr.splitlines()
    assert p.returncode == 2 and len(lines) == 1, (p.returncode, p.stderr)
    line = json.loads(lines[0])
    assert line["level"] == "error" and line["event"] == "config", line
    assert all(n in line["msg"] for n in names), (names, line["msg"])
    p = subprocess.run([BIN, "serve"] + args, capture_output=True, text=True, timeout=30,
                       env=dict(base, EDGED_LOG_FORMAT="text", **env))
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and " error config " in p.stderr, p.stderr


@pytest.mark.parametrize("cmd,bad", [("filter", "--bogus"), ("bench", "--sizes=x"), ("health", "--bogus"),
                                     ("variants", "--bogus"), ("frob", None)])
def test_usage_errors_are_one_line(cmd, bad):
    p = edged_text(cmd, *([bad] if bad else []))
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "--help" in p.stderr, p.stderr


@pytest.mark.parametrize("cmd", ["variants", "filters", "version"])
def test_commands_without_options(cmd):
    assert edged_text(cmd, "--help").stdout.startswith("usage")
    for bad in (["--bogus"], ["--bogus=1"], ["extra"]):
        p = edged_text(cmd, *bad)
        assert p.returncode == 2 and p.stderr.strip(), (cmd, bad)


# ---- version ------------------------------------------------------------------------------------

def test_version(server):
    a, b = edged_text("--version"), edged_text("version")
    assert a.returncode == 0 and b.returncode == 0 and a.stdout == b.stdout
    first = a.stdout.splitlines()[0]
    assert re.fullmatch(r"edged \d+\.\d+\.\d+\S*", first), first
    assert first == "edged " + requests.get(server.url + "/version").json()["version"]
    assert re.search(r"^gpu: built (with|without) CUDA", a.stdout, re.M), a.stdout


# ---- variants: can each run here ----------------------------------------------------------------

def test_variants_here_column():
    p = edged_text("variants")
    assert p.returncode == 0
    lines = p.stdout.splitlines()
    assert lines[0].split()[:4] == ["variant", "runs", "on", "here"]
    rows = {l.split()[0]: l for l in lines[1:] if not l.startswith("here:")}
    for name in ("auto", "cpu_serial", "cpu"):
        assert re.match(r"%s\s+\S+\s+yes\b" % name, rows[name]), rows[name]
    gpu = gpu_here()
    for name in ("naive", "tiled", "fast"):
        assert re.search(r"\s%s\s" % ("yes" if gpu else "no"), rows[name]), rows[name]
    assert re.search(r"\sno\s", rows["fft"]) or gpu, rows["fft"]  # fft: listed, runs only with a GPU and cuFFT
    footer = lines[-1]
    assert footer.startswith("here:")
    if not gpu:
        assert "cannot run" in footer and len(footer) > len("here: the GPU variants cannot run ()"), footer
    if "built without CUDA" in edged_text("version").stdout:
        assert "built without CUDA" in footer


def test_variants_json_and_devices():
    """--json: the same variants as the lines, and the devices this process sees; without CUDA an
    empty list and the reason, and the lines say "devices: none (REASON)"."""
    p = edged_text("variants", "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    lines = edged_text("variants").stdout.splitlines()
    rows = [l.split()[0] for l in lines[1:] if not l.startswith(("here:", "devices:", " "))]
    assert [v["name"] for v in doc["variants"]] == rows
    for v in doc["variants"]:
        assert v["runs_on"] in ("any", "cpu", "gpu") and isinstance(v["here"], bool), v
        assert ("reason" in v) == (not v["here"]), v
    assert [v["here"] for v in doc["variants"] if v["name"] == "naive"] == [gpu_here()]
    devices = [l for l in lines if l.startswith("devices:")]
    assert len(devices) == 1, lines
    if "built without CUDA" in edged_text("version").stdout:
        assert doc["devices"] == [] and doc["devices_reason"] == "built without CUDA", doc
    if not doc["devices"]:
        assert devices[0] == "devices: none (%s)" % doc["devices_reason"] and doc["devices_reason"], devices
        return
    assert "devices_reason" not in doc
    assert [d["number"] for d in doc["devices"]] == list(range(len(doc["devices"])))
    for d in doc["devices"]:
        assert d["name"] and re.fullmatch(r"\d+\.\d+", d["compute_capability"]) and d["sms"] > 0, d
        assert d["memory_bytes"] > 0, d
    assert devices[0].startswith("devices: %d " % len(doc["devices"])), devices


@pytest.mark.parametrize("cmd", [["filter", "IN", "OUT"], ["bench"], ["bench", "--codec", "IN"]])
def test_device_option_parse_errors(cmd, photo, tmp_path):
    """--device takes a CUDA device number 0..63: anything else is a usage error naming --device
    (filter: the request parameter `device`), before any image is read or device opened."""
    args = [str(photo) if a == "IN" else str(tmp_path / "out.png") if a == "OUT" else a for a in cmd]
    for bad in ("-1", "64", "x", "1.5", ""):
        for form in (["--device", bad], ["--device=" + bad]):
            p = edged_text(*args, *form)
            assert p.returncode == 2 and "device" in p.stderr and len(p.stderr.splitlines()) == 1, (form, p.stderr)
    assert not (tmp_path / "out.png").exists()


def test_device_option_needs_the_gpu(photo, tmp_path):
    """A --device given requires the GPU: with a CPU variant it is a usage error; without CUDA, or a
    number that does not exist, a usage error saying why (no fallback to the CPU rows or backend)."""
    out = tmp_path / "out.png"
    for cpu in ("cpu", "cpu_serial"):
        p = edged_text("filter", photo, out, "--device", "0", "--variant", cpu)
        assert p.returncode == 2 and "device: applies to GPU variants, not %s" % cpu in p.stderr, p.stderr
    if gpu_here():
        n = len(json.loads(edged_text("variants", "--json").stdout)["devices"])
        p = edged_text("bench", "--sizes", "32", "--ksizes", "3", "--reps", "1", "--warmup", "0", "--device", n)
        assert p.returncode == 2 and "CUDA device %d does not exist (%d present)" % (n, n) in p.stderr, p.stderr
        p = edged_text("filter", photo, out, "--device", n)
        assert p.returncode == 2 and "CUDA device %d does not exist (%d present)" % (n, n) in p.stderr, p.stderr
        p = edged_text("bench", "--sizes", "32", "--ksizes", "3", "--reps", "1", "--warmup", "0", "--json",
                       "--device", "0")
        assert p.returncode == 0 and json.loads(p.stdout)["device"]["number"] == 0, p.stderr
        return
    p = edged_text("bench", "--sizes", "32", "--ksizes", "3", "--reps", "1", "--warmup", "0", "--device", "0")
    assert p.returncode == 2 and p.stderr.startswith("edged bench: --device 0: ") and p.stdout == "", p.stderr
    p = edged_text("bench", "--codec", "--device", "0", photo)
    assert p.returncode == 2 and "--device 0: " in p.stderr and p.stdout == "", p.stderr
    p = edged_text("filter", photo, out, "--device", "0")
    assert p.returncode == 2 and "variant_unavailable" in p.stderr and not out.exists(), p.stderr


# ---- bench without a GPU --------------------------------------------------------------------------

def test_bench_cpu_rows_without_gpu():
    if gpu_here():
        pytest.skip("a GPU is present: bench runs its GPU rows (the CPU rows are covered by --cpu above)")
    p = edged_text("bench", "--sizes", "32", "--ksizes", "3", "--reps", "1", "--warmup", "0", "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert [r["variant"] for r in doc["rows"]] == ["cpu_serial", "cpu"]
    assert all(r["ms"] is not None and r["ms"] > 0 for r in doc["rows"])
    assert "no GPU" in p.stderr


def test_bench_progress_on_stderr_only():
    p = edged_text("bench", "--sizes", "16,32", "--ksizes", "3", "--reps", "1", "--warmup", "0", "--cpu",
                   "--variants", "naive", "--json", "--progress")
    assert p.returncode == 0, p.stderr
    json.loads(p.stdout)  # stdout stays one JSON document
    steps = re.findall(r"step (\d+)/(\d+)", p.stderr)
    assert steps == [("1", "2"), ("2", "2")], p.stderr
    quiet = edged_text("bench", "--sizes", "16", "--ksizes", "3", "--reps", "1", "--warmup", "0", "--cpu",
                       "--variants", "naive", "--csv")
    assert "step" not in quiet.stderr  # stderr is not a terminal here and --progress is absent


# ---- - for stdin and stdout -----------------------------------------------------------------------

def test_stdin_stdout(photo, tmp_path):
    ref = tmp_path / "ref.png"
    assert edged("filter", photo, ref, "--filter", "sobel").returncode == 0
    data = photo.read_bytes()
    p = edged("filter", "-", "-", "--filter", "sobel", input=data)
    assert p.returncode == 0, p.stderr
    assert p.stdout == ref.read_bytes()
    out = tmp_path / "from_stdin.png"
    assert edged("filter", "-", out, "--filter", "sobel", input=data).returncode == 0
    assert out.read_bytes() == ref.read_bytes()
    p = edged("filter", photo, "-", "--filter", "sobel")
    assert p.returncode == 0 and p.stdout == ref.read_bytes()
    p = edged("filter", "-", "-", input=b"not a png at all")
    assert p.returncode == 3 and p.stdout == b""
    p = edged_text("filter", photo, "-", "--json")
    assert p.returncode == 2 and "standard output" in p.stderr


# ---- output names ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["out.gif", "out.bmp", "out.tif", "out.tiff", "out.avif"])
def test_foreign_extension_refused(photo, tmp_path, name):
    p = edged_text("filter", photo, tmp_path / name)
    assert p.returncode == 2, p.stderr
    assert "PNG" in p.stderr and name in p.stderr
    assert not (tmp_path / name).exists()


@pytest.mark.parametrize("name", ["out.png", "out.PNG", "out", "dir.v2/out"])
def test_png_names_accepted(photo, tmp_path, name):
    (tmp_path / "dir.v2").mkdir(exist_ok=True)
    p = edged("filter", photo, tmp_path / name)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("name", ["out.jpg", "out.jpeg", "out.JPG"])
def test_jpeg_names_written_as_jpeg(photo, tmp_path, name):
    p = edged("filter", photo, tmp_path / name)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / name).read_bytes()[:3] == b"\xff\xd8\xff"


# ---- --json timings -------------------------------------------------------------------------------

def test_json_timings_in_microseconds(photo, tmp_path):
    p = edged_text("filter", photo, tmp_path / "o.png", "--filter", "gaussian", "--size", "7", "--json")
    assert p.returncode == 0, p.stderr
    raw = json.loads(p.stdout)["timings_ms"]
    assert set(raw) == {"queue", "decode", "filter", "upload", "kernel", "download", "encode", "total"}
    text = re.search(r'"timings_ms":\{[^}]*\}', p.stdout).group(0)
    for number in re.findall(r":(-?[0-9.eE+-]+)", text):
        assert "e" not in number.lower() and len(number.partition(".")[2]) <= 3, (number, text)
    assert raw["total"] > 0


# ---- many images in one process ---------------------------------------------------------------------

def write_images(folder, n, names=None):
    """n random RGB PNGs of different sizes in folder; returns their paths."""
    folder.mkdir(exist_ok=True)
    paths = []
    for i, name in enumerate(names or ["img%d.png" % i for i in range(n)]):
        path = folder / name
        path.write_bytes(png_bytes(random_image(30 + i, 40 + 3 * i, 3, seed=100 + i)))
        paths.append(path)
    return paths


def single_run(src, dst, *opts):
    p = edged("filter", src, dst, *opts)
    assert p.returncode == 0, p.stderr
    return dst.read_bytes()


def test_many_pairs_match_single_runs(tmp_path):
    srcs = write_images(tmp_path / "in", 5)
    outs = [tmp_path / ("o%d.png" % i) for i in range(5)]
    opts = ["--filter", "gaussian", "--size", "5", "--variant", "cpu"]
    p = edged_text("filter", *[x for pair in zip(srcs, outs) for x in pair], *opts, "--threads", "3")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "" and p.stderr == ""
    for src, out in zip(srcs, outs):
        assert out.read_bytes() == single_run(src, tmp_path / "single.png", *opts), out


def test_out_dir_names_and_bytes(tmp_path):
    srcs = write_images(tmp_path / "in", 3, ["a.png", "b.PNG", "c.jpg"])  # c.jpg holds PNG bytes
    out = tmp_path / "new" / "dir"
    (tmp_path / "new").mkdir()
    p = edged_text("filter", "--out-dir", out, *srcs, "--filter", "sobel")
    assert p.returncode == 0, p.stderr
    assert sorted(os.listdir(out)) == ["a.png", "b.PNG", "c.png"]  # made, named after the inputs
    for src, name in zip(srcs, ["a.png", "b.PNG", "c.png"]):
        assert (out / name).read_bytes() == single_run(src, tmp_path / "single.png", "--filter", "sobel")
    again = edged_text("filter", "--out-dir=%s/" % out, srcs[0], "--filter", "sobel")  # existing DIR, DIR/
    assert again.returncode == 0 and sorted(os.listdir(out)) == ["a.png", "b.PNG", "c.png"], again.stderr


def test_name_collisions_refused(tmp_path):
    (a,), (b,) = write_images(tmp_path / "a", 1, ["x.png"]), write_images(tmp_path / "b", 1, ["x.png"])
    out = tmp_path / "out"
    p = edged_text("filter", "--out-dir", out, a, b)
    assert p.returncode == 2 and "would both be written" in p.stderr and str(out / "x.png") in p.stderr, p.stderr
    assert not out.exists()  # refused before any work: DIR is not even made
    p = edged_text("filter", a, tmp_path / "same.png", b, tmp_path / "./same.png")
    assert p.returncode == 2 and "would both be written" in p.stderr, p.stderr
    assert not (tmp_path / "same.png").exists()
    before = a.read_bytes()
    for argv in (["--out-dir", tmp_path / "a", a, b],          # DIR is the input's folder
                 [b, tmp_path / "o.png", a, tmp_path / "a" / ".." / "a" / "x.png"],
                 [a, tmp_path / "o.png", tmp_path / "o.png", tmp_path / "p.png"]):  # an output is an input
        p = edged_text("filter", *argv)
        assert p.returncode == 2 and "input" in p.stderr, (argv, p.stderr)
    assert a.read_bytes() == before and not (tmp_path / "o.png").exists()


def test_keep_ext_keeps_one_name_apart(tmp_path):
    """a.jpg and a.webp would both become out/a.png: refused, naming --keep-ext, which keeps the
    input's extension before the output's (a.png stays a.png); without --out-dir it is refused."""
    srcs = write_images(tmp_path / "in", 3, ["a.jpg", "a.webp", "a.png"])  # PNG bytes under each name
    out = tmp_path / "out"
    p = edged_text("filter", "--out-dir", "out", "in/a.jpg", "in/a.webp", cwd=tmp_path)
    assert p.returncode == 2 and "--keep-ext" in p.stderr and not out.exists(), p.stderr
    p = edged_text("filter", "--out-dir", out, "--keep-ext", *srcs, "--filter", "sobel")
    assert p.returncode == 0, p.stderr
    assert sorted(os.listdir(out)) == ["a.jpg.png", "a.png", "a.webp.png"]
    for src, name in zip(srcs, ["a.jpg.png", "a.webp.png", "a.png"]):
        assert (out / name).read_bytes() == single_run(src, tmp_path / "single.png", "--filter", "sobel")
    p = edged_text("filter", "--out-dir", tmp_path / "j", "--keep-ext", "--format", "jpeg", *srcs)
    assert p.returncode == 0 and sorted(os.listdir(tmp_path / "j")) == ["a.jpg", "a.png.jpg", "a.webp.jpg"], p.stderr
    p = edged_text("filter", "--keep-ext", srcs[2], tmp_path / "o.png")
    assert p.returncode == 2 and "--out-dir" in p.stderr and not (tmp_path / "o.png").exists(), p.stderr


def test_usage_errors_before_any_work(tmp_path):
    srcs = write_images(tmp_path / "in", 2)
    for argv in ([srcs[0], tmp_path / "o0.png", srcs[1]],               # odd number of paths
                 [srcs[0], tmp_path / "o0.png", "-", tmp_path / "o1.png"],  # - with several images
                 ["--out-dir", tmp_path / "d", "-"],
                 [srcs[0], tmp_path / "o0.png", srcs[1], tmp_path / "o1.gif"],
                 [srcs[0], tmp_path / "o0.png", "--threads", "0"],
                 ["--out-dir", tmp_path / "d"]):
        p = edged_text("filter", *argv)
        assert p.returncode == 2 and p.stderr.strip(), (argv, p.stderr)
        assert not (tmp_path / "o0.png").exists() and not (tmp_path / "d").exists(), argv


def test_bad_file_in_the_middle(tmp_path):
    srcs = write_images(tmp_path / "in", 4)
    srcs[1].write_bytes(b"this is not a PNG file")
    srcs[2].write_bytes(srcs[3].read_bytes()[:60])  # truncated inside IDAT
    out = tmp_path / "out"
    out.mkdir()
    (out / "img1.png").write_bytes(b"old")  # a bad input leaves an existing output as it was
    p = edged_text("filter", "--out-dir", out, *srcs, "--threads", "2")
    assert p.returncode == 3, p.stderr
    for bad in srcs[1:3]:
        assert re.search(r"^edged filter: %s: \w+: " % re.escape(str(bad)), p.stderr, re.M), p.stderr
    assert str(srcs[0]) not in p.stderr and str(srcs[3]) not in p.stderr
    assert sorted(os.listdir(out)) == ["img0.png", "img1.png", "img3.png"]  # and no temporary file left
    assert (out / "img1.png").read_bytes() == b"old"
    for i in (0, 3):
        assert (out / ("img%d.png" % i)).read_bytes() == single_run(srcs[i], tmp_path / "single.png")


def test_exit_status_is_the_worst(tmp_path):
    srcs = write_images(tmp_path / "in", 2)
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"nope")
    # bad input (3) and a write that fails (1): 1 is the worse
    p = edged_text("filter", bad, tmp_path / "b.png", srcs[0], tmp_path / "no" / "such" / "dir.png",
                   srcs[1], tmp_path / "ok.png")
    assert p.returncode == 1, p.stderr
    assert "no/such/dir.png" in p.stderr and str(bad) in p.stderr
    assert (tmp_path / "ok.png").exists() and not (tmp_path / "b.png").exists()
    assert [n for n in os.listdir(tmp_path) if "edged-" in n] == []


def test_json_line_per_image(tmp_path):
    srcs = write_images(tmp_path / "in", 4)
    out = tmp_path / "out"
    p = edged_text("filter", "--out-dir", out, *srcs, "--json", "--variant", "cpu")
    assert p.returncode == 0, p.stderr
    lines = [json.loads(line) for line in p.stdout.splitlines()]
    assert len(lines) == 4
    assert sorted(d["input"] for d in lines) == sorted(str(s) for s in srcs)
    for d in lines:
        assert d["output"] == str(out / os.path.basename(d["input"]))
        assert d["output_bytes"] == os.path.getsize(d["output"])
        assert d["variant"] == "cpu" and d["timings_ms"]["total"] > 0
        assert (d["width"], d["height"], d["channels"]) == (40 + 3 * int(d["input"][-5]), 30 + int(d["input"][-5]), 3)
    one = json.loads(edged_text("filter", srcs[0], tmp_path / "one.png", "--json").stdout)
    assert set(one) == set(lines[0])  # one image: the same object, input and output included


def test_progress_on_stderr_only(tmp_path):
    srcs = write_images(tmp_path / "in", 3)
    p = edged_text("filter", "--out-dir", tmp_path / "out", *srcs, "--json", "--progress")
    assert p.returncode == 0, p.stderr
    assert all(json.loads(line) for line in p.stdout.splitlines())  # stdout: JSON lines only
    assert len(p.stdout.splitlines()) == 3
    assert re.search(r"^3/3 images, [0-9.]+ img/s, in [0-9.]+ s$", p.stderr, re.M), p.stderr
    quiet = edged_text("filter", "--out-dir", tmp_path / "out2", *srcs)
    assert quiet.returncode == 0 and quiet.stderr == ""  # stderr is not a terminal and no --progress


def test_progress_on_a_terminal(tmp_path):
    import pty
    srcs = write_images(tmp_path / "in", 3)
    master, slave = pty.openpty()
    p = subprocess.Popen([BIN, "filter", "--out-dir", str(tmp_path / "out")] + [str(s) for s in srcs],
                         stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    out, _ = p.communicate(timeout=120)
    err = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        err += chunk
    os.close(master)
    assert p.returncode == 0 and out == b""
    last = [line for line in re.split(rb"[\r\n]", err) if line.strip()][-1]  # the pty writes \n as \r\n
    assert re.match(rb"(\x1b\[K)?3/3 images, [0-9.]+ img/s, in [0-9.]+ s$", last), err


def test_outputs_replaced_whole(tmp_path):
    srcs = write_images(tmp_path / "in", 2)
    kept = tmp_path / "kept.png"
    kept.write_bytes(b"old")
    os.chmod(kept, 0o640)
    target = tmp_path / "target.png"
    target.write_bytes(b"old")
    link = tmp_path / "link.png"
    os.symlink(target, link)
    p = edged_text("filter", srcs[0], kept, srcs[1], link)
    assert p.returncode == 0, p.stderr
    assert kept.read_bytes() == single_run(srcs[0], tmp_path / "s0.png")
    assert os.stat(kept).st_mode & 0o777 == 0o640  # an existing output keeps its mode
    assert os.path.islink(link) and target.read_bytes() == single_run(srcs[1], tmp_path / "s1.png")
    assert [n for n in os.listdir(tmp_path) if "edged-" in n] == []
