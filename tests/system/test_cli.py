"""test_cli.py — the edged command line: `--opt value` and `--opt=value` for every subcommand, the
version, the variants' availability column, bench without a GPU, `-` for stdin/stdout, refused
output extensions, and the microsecond rounding of --json timings."""
import json
import os
import re
import subprocess

import pytest
import requests

from conftest import BIN, png_bytes, random_image


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
    for form in (["--url"], ["--url=ftp://x"], ["--nope=1"]):
        p = edged_text("health", *form)
        assert p.returncode == 2 and p.stderr.strip(), form


def test_serve_option_forms(make_server):
    s = make_server("--max-side=555", "--queue-depth", "7")
    limits = requests.get(s.url + "/version").json()["limits"]
    assert limits["max_side"] == 555 and limits["queue_depth"] == 7
    for form in (["--port=0"], ["--port", "0"], ["--backend=tpu"], ["--no-such-flag=1"]):
        p = edged_text("serve", *form)
        assert p.returncode == 2 and p.stderr.strip(), form


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
    footer = lines[-1]
    assert footer.startswith("here:")
    if not gpu:
        assert "cannot run" in footer and len(footer) > len("here: the GPU variants cannot run ()"), footer
    if "built without CUDA" in edged_text("version").stdout:
        assert "built without CUDA" in footer


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

@pytest.mark.parametrize("name", ["out.jpg", "out.jpeg", "out.JPG", "out.webp", "out.gif", "out.bmp", "out.tif",
                                  "out.tiff"])
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
