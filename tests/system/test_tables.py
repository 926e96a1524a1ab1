"""test_tables.py — the copies of edged's tables in other languages agree with what the server
serves. The C code holds each table once (the filter bank and its knobs in api/filter.c, the
variants in api/variant.h, the request stages in api/result.h, the output formats in
api/params_field.c); openapi.yaml, the web page
(server/http/web/app.js, index.html), the CLI usage and the Python tools write them out again. Each
test here reads the table from a real `edged serve` (GET /v1/filters, /v1/variants, a JSON result,
Server-Timing, /metrics) and compares every copy with it, strictly (same names, same order where
order shows).
Backend from EDGED_TEST_BACKEND (cpu by default); binary EDGED_BIN."""
import ast
import json
import os
import re
import subprocess

import pytest
import requests
import yaml

from conftest import BIN, OPENAPI, ROOT, png_bytes, random_image

WEB = os.path.join(ROOT, "server", "http", "web")


def read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


def py_list(text, name):
    """The list literal assigned to `name` at the start of a line of Python source."""
    m = re.search(r"^%s\s*=\s*(\[[^\]]*\])" % re.escape(name), text, re.M)
    assert m, "no %s = [...] list" % name
    return ast.literal_eval(m.group(1))


def py_set(text, name):
    m = re.search(r"^%s\s*=\s*(\{[^}]*\})" % re.escape(name), text, re.M)
    assert m, "no %s = {...} set" % name
    return ast.literal_eval(m.group(1))


def js_list(text, name):
    """The string array of `const name = [...]` in JavaScript source."""
    m = re.search(r"const\s+%s\s*=\s*\[([^\]]*)\]" % re.escape(name), text)
    assert m, "no const %s = [...] array" % name
    return re.findall(r"'([^']*)'", m.group(1))


@pytest.fixture(scope="module")
def catalogue(server):
    return requests.get(server.url + "/v1/filters", timeout=10).json()


@pytest.fixture(scope="module")
def openapi(server):
    r = requests.get(server.url + "/openapi.yaml", timeout=10)
    assert r.status_code == 200, r.text
    with open(OPENAPI, encoding="utf-8") as f:
        assert r.text == f.read(), "the served openapi.yaml is not the one the build joined"
    return yaml.safe_load(r.text)


@pytest.fixture(scope="module")
def result(server):
    """A JSON result and its Server-Timing header: the API's stage list as served."""
    png = png_bytes(random_image(24, 32, 3, seed=5))
    r = requests.post(server.url + "/v1/filter", files={"image": ("x.png", png, "image/png")},
                      data={"params": json.dumps({"filter": "edge", "output": "json"})}, timeout=60)
    assert r.status_code == 200, r.text
    return r


@pytest.fixture(scope="module")
def metric_stages(server, result):
    text = requests.get(server.url + "/metrics", timeout=10).text
    return list(dict.fromkeys(re.findall(r'^edged_stage_seconds_count\{stage="([a-z_]+)"\}', text, re.M)))


def knob_takers(catalogue):
    """knob -> the filters whose "params" list it, in catalogue order; knobs in first-seen order."""
    takers = {}
    for f in catalogue["filters"]:
        for k in f["params"]:
            takers.setdefault(k, []).append(f["name"])
    return takers


# ---------------------------------------------------------------- which knob applies to which filter


def test_openapi_knob_filters_match_the_catalogue(catalogue, openapi):
    takers = knob_takers(catalogue)
    params = openapi["components"]["parameters"]
    assert len(takers) >= 5, takers
    for knob, filters in takers.items():
        assert knob in params, "openapi.yaml has no parameter %r" % knob
        assert params[knob].get("x-filters") == filters, knob
    stale = {n for n, p in params.items() if "x-filters" in p} - set(takers)
    assert not stale, "openapi.yaml lists x-filters for knobs no filter takes: %s" % stale
    body = openapi["components"]["schemas"]["Params"]["properties"]
    assert set(takers) <= set(body), set(takers) - set(body)


def test_openapi_knob_descriptions_name_their_filters(catalogue, openapi):
    """Each knob's description says which filters take it, in words: "<filters> only" names exactly
    the catalogue's takers, "not for <filters>" exactly the others."""
    names = [f["name"] for f in catalogue["filters"]]
    for knob, filters in knob_takers(catalogue).items():
        text = openapi["components"]["parameters"][knob].get("description", "")
        only = re.search(r"([^.:;(]*) only\b", text)
        not_for = re.search(r"not for ([^.:;)]*)", text)
        assert only or not_for, "%s: the description does not say which filters take it" % knob
        clause = (only or not_for).group(1)
        named = [n for n in names if re.search(r"\b%s\b" % n, clause)]
        assert named == (filters if only else [n for n in names if n not in filters]), (knob, text)


def test_openapi_filter_and_variant_enums(server, catalogue, openapi):
    params = openapi["components"]["parameters"]
    assert params["filter"]["schema"]["enum"] == [f["name"] for f in catalogue["filters"]]
    assert params["filter"]["schema"]["default"] == catalogue["default"]
    variants = requests.get(server.url + "/v1/variants", timeout=10).json()["variants"]
    assert params["variant"]["schema"]["enum"] == [v["name"] for v in variants]


def test_web_page_knobs_match_the_catalogue(catalogue):
    knobs = set(knob_takers(catalogue))
    html, js = read("server", "http", "web", "index.html"), read("server", "http", "web", "app.js")
    assert set(re.findall(r'data-knob="([a-z_0-9]+)"', html)) == knobs
    assert set(re.findall(r"knobs\.has\('([a-z_0-9]+)'\)", js)) == knobs


def cli_usage_options():
    """`edged filter --help` as {option: its text, continuation lines joined}."""
    out = subprocess.run([BIN, "filter", "--help"], capture_output=True, text=True, timeout=10)
    opts, cur = {}, None
    for line in (out.stdout + out.stderr).splitlines():
        m = re.match(r"\s+--([a-z0-9-]+)\s+(?:[A-Z]+\s+)?(.*)", line)
        if m:
            cur = m.group(1).replace("-", "_")
            opts[cur] = m.group(2)
        elif cur and line.startswith(" " * 8):
            opts[cur] += " " + line.strip()
        else:
            cur = None
    return opts


def test_cli_usage_matches_the_catalogue(catalogue):
    """`--filter` lists every filter in catalogue order; a knob's line that starts with filter
    names ("gaussian, box: ...") names exactly the filters that take it."""
    names = [f["name"] for f in catalogue["filters"]]
    opts = cli_usage_options()
    assert re.findall(r"[a-z_0-9]+", opts["filter"].split("(edged filters")[0].replace("(default)", "")) == names
    prefixed = 0
    for knob, filters in knob_takers(catalogue).items():
        assert knob in opts, "edged filter --help has no --%s" % knob.replace("_", "-")
        m = re.match(r"([a-z_0-9, ]+):", opts[knob])
        if m and set(re.findall(r"[a-z_0-9]+", m.group(1))) <= set(names):
            assert re.findall(r"[a-z_0-9]+", m.group(1)) == filters, (knob, opts[knob])
            prefixed += 1
    assert prefixed >= 4, "the CLI usage no longer says which filters take a knob: %s" % opts


# ---------------------------------------------------------------- the stages of a request


def test_api_stages_agree(result, openapi):
    stages = list(result.json()["timings_ms"])
    assert stages[-1] == "total" and len(stages) >= 5, stages
    timing = [part.split(";")[0].strip() for part in result.headers["Server-Timing"].split(",")]
    assert timing == stages
    assert list(openapi["components"]["schemas"]["Timings"]["properties"]) == stages
    header = openapi["components"]["headers"]["Server-Timing"]["description"]
    assert re.findall(r"([a-z_]+);dur=", header) == stages
    assert re.findall(r"[a-z]+", openapi["info"]["description"].split("stages", 1)[1].split("(")[0]) == \
        stages[:-1] + ["and"] + stages[-1:]


def test_metrics_stages_are_the_api_stages_receive_and_codec_wait(result, metric_stages):
    api = list(result.json()["timings_ms"])
    assert [s for s in metric_stages if s not in ("receive", "codec_wait")] == api
    assert set(metric_stages) - set(api) == {"receive", "codec_wait"}


def test_python_and_page_copies_of_the_stages(result, metric_stages):
    api = list(result.json()["timings_ms"])
    assert py_list(read("tests", "bench", "load.py"), "STAGES") == metric_stages
    assert py_set(read("tests", "system", "test_api.py"), "TIMING_KEYS") == set(api)
    # the page draws the parts of total (its own order: the order the request meets them)
    assert sorted(js_list(read("server", "http", "web", "app.js"), "STAGES") + ["total"]) == sorted(api)
    assert sorted(py_list(read("tests", "system", "test_web.py"), "STAGES") + ["total"]) == sorted(api)


# ---------------------------------------------------------------- the output formats


@pytest.fixture(scope="module")
def formats(server):
    """The `format` names of the C table (api/params_field.c), from the server's own refusal of an
    unknown one: "(png, jpeg (or jpg), webp)" -> (["png", "jpeg", "webp"], ["jpg"])."""
    png = png_bytes(random_image(8, 8, 1, seed=3))
    r = requests.post(server.url + "/v1/filter", params={"format": "bmp"}, data=png,
                      headers={"Content-Type": "image/png"}, timeout=30)
    assert r.status_code == 400, r.text
    listed = re.search(r"\(([a-z ,()]+)\)$", r.json()["error"]["message"]).group(1)
    aliases = re.findall(r"\(or ([a-z]+)\)", listed)
    names = re.findall(r"[a-z]+", re.sub(r"\(or [a-z]+\)", "", listed))
    assert "png" in names and len(names) >= 3, listed
    return names, aliases


def test_openapi_format_enums(formats, openapi):
    names, aliases = formats
    s = openapi["components"]["schemas"]
    enum = openapi["components"]["parameters"]["format"]["schema"]["enum"]
    assert [v for v in enum if v not in aliases] == names and set(enum) - set(names) == set(aliases), enum
    assert s["AppliedParams"]["properties"]["format"]["enum"] == names
    assert s["FilterResult"]["properties"]["output"]["properties"]["format"]["enum"] == names
    assert s["ImageInfo"]["properties"]["format"]["enum"] == names


def test_page_and_cli_format_lists(formats):
    """The page's selector offers each format by its name; `edged filter --help` names each, the
    aliases in parentheses ("png, jpeg (or jpg) or webp: ...")."""
    names, aliases = formats
    html = read("server", "http", "web", "index.html")
    select = re.search(r'<select id="format">(.*?)</select>', html, re.S).group(1)
    assert re.findall(r'<option value="([a-z]+)"', select) == names
    listed = cli_usage_options()["format"].split(":")[0]
    assert re.findall(r"\(or ([a-z]+)\)", listed) == aliases, listed
    assert [w for w in re.findall(r"[a-z]+", re.sub(r"\(or [a-z]+\)", "", listed)) if w != "or"] == names, listed


def test_each_format_answers_its_name(server, formats):
    png = png_bytes(random_image(8, 8, 3, seed=4))
    for name in formats[0] + formats[1]:
        r = requests.post(server.url + "/v1/filter", params={"format": name, "output": "json"}, data=png,
                          headers={"Content-Type": "image/png"}, timeout=30)
        assert r.status_code == 200, r.text
        assert r.json()["output"]["format"] == (name if name in formats[0] else "jpeg"), name
