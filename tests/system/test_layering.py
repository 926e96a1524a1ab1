"""test_layering.py — the tree keeps its shape: inside server/, includes run from the top folder
down (cli -> http -> jobs -> codec, ops), api/, cpu_ref/ and gpu/ include nothing of server/, and
no two modules (a name.c with its name.h; a header without a .c of its name, such as http.h, is
the face of several) reach each other through includes.

Outcomes asserted: every include of the product's C and CUDA files names a file that exists, no
include goes up a floor, and the module graph has no circle (each failure names the files)."""
import os
import re

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
# Floors of the product, the top first. A file may include files of its own folder and of the
# folders on lower floors; codec/ and ops/ share the ground floor of server/ and do not use each
# other; gpu/ takes Canny's integer thresholds from cpu_ref/; api/ is the ground of everything.
FLOORS = {"server/cli": 6, "server/http": 5, "server/jobs": 4, "server/codec": 3, "server/ops": 3,
          "gpu": 2, "cpu_ref": 1, "api": 0}
SOURCES = (".c", ".h", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SEARCH = ["server", "api", "cpu_ref", "gpu"]  # the Makefile's -I folders, in its order


def product_files():
    for top in ("server", "api", "cpu_ref", "gpu"):
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            for n in names:
                if n.endswith(SOURCES):
                    yield os.path.relpath(os.path.join(dirpath, n), ROOT)


def folder(path):
    d = os.path.dirname(path)
    return d if d in FLOORS else None


def resolve(src, name):
    """The repo path an include of src names: its own folder first, then the -I folders."""
    for d in [os.path.dirname(src)] + SEARCH:
        p = os.path.normpath(os.path.join(d, name))
        if os.path.exists(os.path.join(ROOT, p)):
            return p
    return None


def edges():
    out = []
    for f in product_files():
        text = open(os.path.join(ROOT, f), encoding="utf-8").read()
        for name in INCLUDE.findall(text):
            if name.endswith(".inc"):  # generated into the build folder (the web page's bytes)
                continue
            out.append((f, name, resolve(f, name)))
    return out


def module(path):
    return os.path.splitext(path)[0]


def find_circles(graph):
    """Each circle of a graph {node: set of nodes} met by a depth-first walk, as "a -> b -> a"."""
    state, path, circles = {}, [], []

    def visit(m):
        state[m] = 1
        path.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                circles.append(" -> ".join(path[path.index(n):] + [n]))
            elif n not in state:
                visit(n)
        path.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return circles


def test_includes_name_existing_files():
    missing = ["%s includes \"%s\"" % (f, n) for f, n, p in edges() if p is None]
    assert not missing, "includes that name no file of the tree: " + "; ".join(missing)


def test_includes_run_downward():
    up = []
    for f, n, p in edges():
        a, b = folder(f), p and folder(p)
        if a and b and a != b and FLOORS[b] >= FLOORS[a]:
            up.append("%s (%s) includes %s (%s)" % (f, a, p, b))
    assert not up, "includes that run up or sideways between folders: " + "; ".join(up)


def test_no_module_circles():
    graph = {}
    for f, _, p in edges():
        if p and module(p) != module(f):
            graph.setdefault(module(f), set()).add(module(p))
    circles = find_circles(graph)
    assert not circles, "modules that include each other: " + "; ".join(circles)


def build_objects():
    """The product's object files of the build the tests run (EDGED_BIN's folder)."""
    build = os.path.dirname(os.environ.get("EDGED_BIN", os.path.join(ROOT, "build", "edged")))
    objs = []
    for top in ("server", "api", "cpu_ref", "gpu"):
        for dirpath, _, names in os.walk(os.path.join(build, top)):
            objs += [os.path.join(dirpath, n) for n in names if n.endswith(".o")]
    return build, objs


def test_no_call_circles():
    """A call is a use too, where a shared header declares what another file defines (the
    includes alone do not show it): from the object files, which module calls which."""
    import shutil
    import subprocess
    import pytest

    build, objs = build_objects()
    if not objs or not shutil.which("nm"):
        pytest.skip("no object files under %s or no nm: call circles not checked" % build)
    defined, undefined = {}, {}
    for o in objs:
        m = os.path.relpath(os.path.splitext(o)[0], build)
        out = subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "U":
                undefined.setdefault(m, set()).add(parts[1])
            elif len(parts) == 3 and parts[1] in "TDRB":
                defined[parts[2]] = m
    graph = {m: {defined[s] for s in syms if s in defined and defined[s] != m} for m, syms in undefined.items()}
    circles = find_circles(graph)
    assert not circles, "modules that call each other: " + "; ".join(circles)
