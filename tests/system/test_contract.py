"""test_contract.py — openapi.yaml (api/openapi/*.yaml as the build joins it) holds to itself and to
the running server. The document is valid OpenAPI 3.0 (against the OpenAPI 3.0 JSON Schema kept
beside this file, and with openapi-spec-validator where it is installed), every operation has an
operationId and says whether it needs the API key. Then every documented operation, and every
documented error status that can be provoked cheaply (400, 401, 404, 405, 413, 415, 422, 429, 503,
504), is driven on a real `edged serve`, and each answer is checked against what the document says
of it: the status is listed for the operation, the content type is one it lists, the headers it
marks required are there and match their schemas, and a JSON body validates against the component
schema ($refs resolved, `nullable` turned into JSON Schema). Last, the `params` echo of a JSON
filter result: every parameter as applied, defaults resolved, only the knobs the filter takes.
Backend from EDGED_TEST_BACKEND (cpu by default); binary EDGED_BIN."""
import concurrent.futures as cf
import json
import os
import re
import time

import pytest
import requests

jsonschema = pytest.importorskip("jsonschema", reason="python3-jsonschema is not installed (make deps installs it)")
yaml = pytest.importorskip("yaml", reason="python3-yaml is not installed (make deps installs it)")
from requests.structures import CaseInsensitiveDict

from conftest import BACKEND, OPENAPI, ROOT, png_bytes, random_image
from helpers import exchange, metrics, post_head, total
from test_api import SLOW, slow_png  # noqa: F401 (a fixture): with SLOW a job of ~0.3-0.5 s
from test_api import deadline_exceeded
from test_api import post as upload  # multipart: the image part, JSON params, form fields, query

HERE = os.path.dirname(os.path.abspath(__file__))
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
KEY = "contract-key.1"


# ---- the document -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def doc():
    with open(OPENAPI, encoding="utf-8") as f:
        return yaml.safe_load(f)


def operations(doc):
    """(path, method, operation) for every operation of the document."""
    return [(p, m, op) for p, item in doc["paths"].items() for m, op in item.items() if m in METHODS]


def ref_target(doc, ref):
    assert ref.startswith("#/"), "only local $refs: %s" % ref
    node = doc
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def deref(doc, node):
    """node with its top-level $ref followed (repeatedly)."""
    seen = 0
    while isinstance(node, dict) and "$ref" in node:
        node = ref_target(doc, node["$ref"])
        seen += 1
        assert seen < 20, "a $ref cycle"
    return node


def to_jsonschema(doc, node, depth=0):
    """An OpenAPI 3.0 schema as a draft-4 JSON Schema: $refs inlined, nullable as a null type."""
    assert depth < 30, "schema nested too deep (a recursive $ref?)"
    node = deref(doc, node)
    if isinstance(node, list):
        return [to_jsonschema(doc, x, depth + 1) for x in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        if k in ("example", "examples", "nullable", "format", "discriminator", "xml", "externalDocs",
                 "readOnly", "writeOnly", "deprecated") or k.startswith("x-"):
            continue
        if k in ("properties",):
            out[k] = {name: to_jsonschema(doc, s, depth + 1) for name, s in v.items()}
        elif k in ("items", "not", "additionalProperties") and isinstance(v, dict):
            out[k] = to_jsonschema(doc, v, depth + 1)
        elif k in ("allOf", "anyOf", "oneOf"):
            out[k] = [to_jsonschema(doc, s, depth + 1) for s in v]
        else:
            out[k] = v
    if node.get("nullable"):
        if "type" in out:
            out["type"] = [out["type"], "null"]
        if "enum" in out and None not in out["enum"]:
            out["enum"] = out["enum"] + [None]
    return out


def validate(doc, schema, value, what):
    try:
        jsonschema.Draft4Validator(to_jsonschema(doc, schema)).validate(value)
    except jsonschema.ValidationError as e:
        raise AssertionError("%s: %s\n%s" % (what, e.message, json.dumps(value)[:2000])) from None


def test_openapi_is_valid_openapi_3_0(doc):
    with open(os.path.join(HERE, "openapi-3.0-schema.json"), encoding="utf-8") as f:
        meta = json.load(f)
    jsonschema.Draft4Validator(meta).validate(doc)


def test_openapi_spec_validator(doc):
    validator = pytest.importorskip("openapi_spec_validator", reason="openapi-spec-validator not installed "
                                    "(pip install openapi-spec-validator); the JSON Schema check above still ran")
    validator.validate(doc) if hasattr(validator, "validate") else validator.validate_spec(doc)


def test_every_ref_resolves_and_every_schema_converts(doc):
    refs = re.findall(r"\$ref: '([^']+)'", open(OPENAPI, encoding="utf-8").read())
    assert len(refs) > 40
    for ref in set(refs):
        ref_target(doc, ref)
    for name, schema in doc["components"]["schemas"].items():
        jsonschema.Draft4Validator.check_schema(to_jsonschema(doc, schema))


def test_operations_have_ids_security_and_error_answers(doc):
    ops = operations(doc)
    ids = [op.get("operationId") for _, _, op in ops]
    assert all(ids) and len(set(ids)) == len(ids), ids
    assert doc["components"]["securitySchemes"]["apiKey"] == {**doc["components"]["securitySchemes"]["apiKey"],
                                                              "type": "http", "scheme": "bearer"}
    assert {"apiKey": []} in doc["security"]
    for path, method, op in ops:
        open_ = op.get("security") == []
        assert ("401" in op["responses"]) != open_, "%s %s: 401 documented iff the key is needed" % (method, path)
        for status, resp in op["responses"].items():
            resp = deref(doc, resp)
            assert "X-Request-ID" in resp.get("headers", {}), (path, status)
            if status in ("429", "503"):
                assert "Retry-After" in resp["headers"], (path, status)
            if status[0] in "45":
                assert deref(doc, resp["content"]["application/json"]["schema"]) is \
                    doc["components"]["schemas"]["Error"], (path, status)
    for method in ("post",):
        for path in ("/v1/filter", "/v1/compare"):
            assert {"200", "400", "401", "413", "415", "422", "429", "503", "504"} <= \
                set(doc["paths"][path][method]["responses"]), path


def test_devices_schema_takes_what_a_gpu_server_answers(doc):
    """/version's and /readyz's devices list: a CPU-only server answers [] (driven below); a server of
    several GPUs one entry per device, `fault` only on a fenced one. Those shapes, and not others."""
    devices = doc["components"]["schemas"]["Devices"]
    assert deref(doc, doc["components"]["schemas"]["Version"]["properties"]["devices"]) is devices
    ready = doc["paths"]["/readyz"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert "devices" in ready["required"] and deref(doc, ready["properties"]["devices"]) is devices
    validate(doc, devices, [], "no GPU")
    validate(doc, devices, [{"device": 0, "name": "NVIDIA H100 80GB HBM3", "state": "up"},
                            {"device": 2, "name": "NVIDIA H100 80GB HBM3", "state": "fenced",
                             "fault": "GPU 2: sticky CUDA error: GPU context lost"}], "two GPUs, one fenced")
    for bad in ([{"device": 0, "name": "x", "state": "down"}], [{"device": -1, "name": "x", "state": "up"}],
                [{"device": 0, "state": "up"}], [{"device": 0, "name": "x", "state": "up", "index": 0}]):
        with pytest.raises(AssertionError):
            validate(doc, devices, bad, "refused")


def test_error_examples_and_codes(doc):
    """Every example of an error answer validates; the code enum is the error table of api/errors.h."""
    with open(os.path.join(ROOT, "api", "errors.h"), encoding="utf-8") as f:
        table = re.findall(r'X\(EDGED_\w+, -?\d+, (\d+), "([a-z_]+)"', f.read())
    names = [n for _, n in table if n != "ok"]
    enum = doc["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]["enum"]
    assert sorted(enum) == sorted(names)
    status_of = {n: s for s, n in table}
    for name, resp in doc["components"]["responses"].items():
        media = resp["content"]["application/json"]
        examples = [media["example"]] if "example" in media else [e["value"] for e in media["examples"].values()]
        assert examples, name
        for ex in examples:
            validate(doc, media["schema"], ex, "example of %s" % name)
            code = ex["error"]["code"]
            uses = [s for _, _, op in operations(doc) for s, r in op["responses"].items()
                    if r.get("$ref", "").endswith("/" + name)]
            assert uses == [] or all(s == status_of[code] for s in uses), (name, code, uses)


# ---- checking answers ---------------------------------------------------------------------------

class Raw:
    """A response read from a socket, shaped like requests' for check()."""

    def __init__(self, status, headers, body):
        self.status_code, self.headers, self.content = status, CaseInsensitiveDict(headers), body

    def json(self):
        return json.loads(self.content)


def header_value(schema, text):
    return int(text) if schema.get("type") == "integer" else text


def check_response(doc, resp, r, what):
    """r against one documented response: required headers, content type, JSON body schema."""
    resp = deref(doc, resp)
    for name, h in resp.get("headers", {}).items():
        h = deref(doc, h)
        value = r.headers.get(name)
        if h.get("required"):
            assert value is not None, "%s: no %s header" % (what, name)
        if value is not None:
            validate(doc, h["schema"], header_value(h["schema"], value), "%s header %s" % (what, name))
    ctype = r.headers.get("Content-Type", "").split(";")[0].strip()
    content = resp.get("content", {})
    media = content.get(ctype) or content.get("*/*")
    assert media is not None, "%s: Content-Type %r, documented %s" % (what, ctype, list(content))
    if ctype == "application/json":
        validate(doc, media["schema"], r.json(), what)
    return r


def check(doc, r, path, method, status):
    """r is the documented answer `status` of operation (path, method)."""
    op = doc["paths"][path][method]
    what = "%s %s -> %d" % (method.upper(), path, r.status_code)
    assert r.status_code == status, "%s (wanted %d): %s" % (what, status, r.content[:400])
    assert str(status) in op["responses"], "%s: status not documented" % what
    check_response(doc, op["responses"][str(status)], r, what)
    if status >= 400:
        assert r.json()["error"]["request_id"] == r.headers["X-Request-ID"]
    return r


def code(r):
    return r.json()["error"]["code"]


@pytest.fixture(scope="module")
def png():
    return png_bytes(random_image(40, 56, 3, seed=11))


# ---- every operation ----------------------------------------------------------------------------

def drivers(png):
    """operationId -> [(path, method, a call of it on url with headers h that answers 200)]."""
    g = lambda path: (lambda url, h: requests.get(url + path, headers=h, timeout=30))  # noqa: E731
    return {
        "filterImage": [
            ("/v1/filter", "post", lambda url, h: upload(url, png, {"filter": "sobel"}, headers=h)),
            ("/v1/filter", "post", lambda url, h: upload(url, png, {"filter": "gaussian", "output": "json"}, headers=h)),
            ("/v1/filter", "post", lambda url, h: requests.post(url + "/v1/filter?filter=box&output=json", data=png,
                                                                headers=dict(h, **{"Content-Type": "image/png"}))),
            ("/v1/filter", "post", lambda url, h: requests.post(url + "/v1/filter", files={"file": ("x.png", png)},
                                                                headers=dict(h, Accept="application/json"))),
        ],
        "compareVariants": [("/v1/compare", "post", lambda url, h: upload(url, png, {"filter": "edge"},
                                                                           path="/v1/compare", headers=h))],
        "describeImage": [
            ("/v1/info", "post", lambda url, h: requests.post(url + "/v1/info", data=png,
                                                              headers=dict(h, **{"Content-Type": "image/png"}))),
            ("/v1/info", "post", lambda url, h: upload(url, png, path="/v1/info", headers=h)),
        ],
        "listFilters": [("/v1/filters", "get", g("/v1/filters"))],
        "listVariants": [("/v1/variants", "get", g("/v1/variants"))],
        "getHealth": [("/healthz", "get", g("/healthz"))],
        "getReadiness": [("/readyz", "get", g("/readyz"))],
        "getMetrics": [("/metrics", "get", g("/metrics"))],
        "getVersion": [("/version", "get", g("/version"))],
        "getOpenapi": [("/openapi.yaml", "get", g("/openapi.yaml"))],
        "getWebPage": [("/", "get", g("/"))],
        "getWebAsset": [("/web/{name}", "get", g("/web/app.js")), ("/web/{name}", "get", g("/web/style.css"))],
    }


def test_every_operation_answers_as_documented(server, doc, png):
    calls = drivers(png)
    assert sorted(calls) == sorted(op["operationId"] for _, _, op in operations(doc)), \
        "an operation without a driver here, or a driver of an operation the document lost"
    for op_id, runs in calls.items():
        for path, method, call in runs:
            assert doc["paths"][path][method]["operationId"] == op_id
            check(doc, call(server.url, {}), path, method, 200)


def test_head_answers_for_get_operations(server, doc):
    for path, method, op in operations(doc):
        if method == "get" and "{" not in path:
            r = requests.head(server.url + path, timeout=30)
            assert r.status_code == 200 and r.headers["X-Request-ID"], path


# ---- every error status -------------------------------------------------------------------------

def test_400(server, doc, png):
    r = check(doc, upload(server.url, png, {"filter": "gaussian", "size": 4}), "/v1/filter", "post", 400)
    assert code(r) == "invalid_parameter" and "size" in r.json()["error"]["message"]
    r = check(doc, requests.post(server.url + "/v1/filter", files={"params": (None, "{}")}), "/v1/filter", "post", 400)
    assert code(r) == "bad_multipart"
    r = check(doc, upload(server.url, png, {"variant": "cpu"}, path="/v1/compare"), "/v1/compare", "post", 400)
    assert code(r) == "invalid_parameter"
    r = check(doc, upload(server.url, png, {"format": "webp"}, path="/v1/compare"), "/v1/compare", "post", 400)
    assert code(r) == "invalid_parameter"
    r = check(doc, upload(server.url, png, {"filter": "edge"}, path="/v1/info"), "/v1/info", "post", 400)
    assert code(r) == "invalid_parameter"
    status, hdrs, body = exchange(server.port, post_head("/v1/filter", "image/png", 10, "Content-Length: 12\r\n"))
    r = check(doc, Raw(status, hdrs, body), "/v1/filter", "post", 400)
    assert code(r) == "bad_request"


def test_401_with_keys(make_server, doc, png):
    s = make_server(env=dict(os.environ, EDGED_API_KEYS="other-key," + KEY))
    calls = drivers(png)
    for path, method, op in operations(doc):
        for p, m, call in calls[op["operationId"]][:1]:
            if op.get("security") == []:
                check(doc, call(s.url, {}), path, method, 200)
                continue
            for h in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic " + KEY}):
                r = check(doc, call(s.url, h), path, method, 401)
                assert code(r) == "unauthorized"
            check(doc, call(s.url, {"Authorization": "Bearer " + KEY}), path, method, 200)


def test_404_405(server, doc):
    r = requests.get(server.url + "/v2/filter")
    check_response(doc, doc["components"]["responses"]["NotFound"], r, "GET /v2/filter")
    assert r.status_code == 404 and code(r) == "not_found"
    r = check(doc, requests.get(server.url + "/web/no-such-file.js"), "/web/{name}", "get", 404)
    assert code(r) == "not_found"
    for method, path, allow in (("GET", "/v1/filter", "POST"), ("POST", "/healthz", "GET, HEAD"),
                                ("PUT", "/v1/compare", "POST"), ("DELETE", "/version", "GET, HEAD")):
        r = requests.request(method, server.url + path, data=b"x" if method != "GET" else None)
        assert r.status_code == 405 and code(r) == "method_not_allowed" and r.headers["Allow"] == allow
        check_response(doc, doc["components"]["responses"]["MethodNotAllowed"], r, method + " " + path)


def test_413(make_server, doc):
    s = make_server("--max-body-mb", "1")
    head = post_head("/v1/filter", "multipart/form-data; boundary=b", 2000000, "Expect: 100-continue\r\n")
    status, hdrs, body = exchange(s.port, head)
    r = check(doc, Raw(status, hdrs, body), "/v1/filter", "post", 413)
    assert code(r) == "body_too_large"


def test_415(server, doc, png):
    r = check(doc, upload(server.url, b"GIF89a" + b"\0" * 100), "/v1/filter", "post", 415)
    assert code(r) == "unsupported_media_type"
    r = requests.post(server.url + "/v1/compare", data=png, headers={"Content-Type": "text/plain"})
    assert code(check(doc, r, "/v1/compare", "post", 415)) == "unsupported_media_type"
    r = check(doc, upload(server.url, b"GIF89a" + b"\0" * 100, path="/v1/info"), "/v1/info", "post", 415)
    assert code(r) == "unsupported_media_type"


def test_422(make_server, doc, png):
    s = make_server("--max-pixels", "1000")
    small = png_bytes(random_image(20, 20, 1, seed=2))
    assert code(check(doc, upload(s.url, small[:len(small) // 2]), "/v1/filter", "post", 422)) == "bad_png"
    assert code(check(doc, upload(s.url, png), "/v1/filter", "post", 422)) == "image_too_large"
    assert code(check(doc, upload(s.url, png, path="/v1/compare"), "/v1/compare", "post", 422)) == "image_too_large"
    assert code(check(doc, upload(s.url, small[:20], path="/v1/info"), "/v1/info", "post", 422)) == "bad_png"
    info = check(doc, upload(s.url, png, path="/v1/info"), "/v1/info", "post", 200).json()  # over the limit: described
    assert not info["within_limits"] and info["limit_error"]["code"] == "image_too_large", info
    if BACKEND != "gpu":
        assert code(check(doc, upload(s.url, small, {"variant": "shared"}), "/v1/filter", "post", 422)) == \
            "variant_unavailable"


def test_device_parameter(server, doc, png):
    """`device` is a CUDA device number 0..63: out of range or not an integer is 400 naming it, and so
    is a device beside a CPU variant (compare: a list of CPU variants only). On the CPU backend any
    device is 422 variant_unavailable, as a GPU variant is there; on a GPU backend a device it does
    not drive is 422 naming the served ones, and a served one runs the GPU work (device_number)."""
    r = check(doc, upload(server.url, png, {"output": "json", "variant": "cpu"}), "/v1/filter", "post", 200)
    assert r.json()["device_number"] is None, r.text
    for path in ("/v1/filter", "/v1/compare"):
        op = path.rsplit("/", 1)[1]
        for bad in (-1, 64, 1.5, "1", None):
            r = check(doc, upload(server.url, png, {"device": bad}, path=path), path, "post", 400)
            assert code(r) == "invalid_parameter" and r.json()["error"]["message"].startswith("device: "), (bad, r.text)
        for bad in ("x", "64", ""):
            r = check(doc, upload(server.url, png, query={"device": bad}, path=path), path, "post", 400)
            assert code(r) == "invalid_parameter" and "device" in r.json()["error"]["message"], (bad, r.text)
        cpu = {"variant": "cpu"} if op == "filter" else {"variants": ["cpu_serial", "cpu"]}
        r = check(doc, upload(server.url, png, dict(cpu, device=0), path=path), path, "post", 400)
        assert code(r) == "invalid_parameter" and "GPU variants" in r.json()["error"]["message"], r.text
        r = upload(server.url, png, {"device": 63}, path=path)
        if BACKEND != "gpu":
            assert code(check(doc, r, path, "post", 422)) == "variant_unavailable"
            assert r.json()["error"]["message"].startswith("device 63 needs a GPU; the CPU backend"), r.text
            continue
        msg = r.json()["error"]["message"]
        assert code(check(doc, r, path, "post", 422)) == "variant_unavailable" and \
            msg.startswith("device 63 is not served here; devices: 0"), msg
        r = check(doc, upload(server.url, png, {"device": 0, "output": "json"}, path=path), path, "post", 200)
        assert r.json()["backend"] == "gpu", r.text
        if op == "filter":
            assert r.json()["device_number"] == 0, r.text


def test_429(make_server, doc, slow_png):
    s = make_server("--queue-depth", "1", "--cpu-workers", "1", "--threads", "2")
    with cf.ThreadPoolExecutor(8) as ex:
        rs = list(ex.map(lambda _: upload(s.url, slow_png, SLOW), range(8)))
    full = [r for r in rs if r.status_code == 429]
    assert full and any(r.status_code == 200 for r in rs), [r.status_code for r in rs]
    for r in full:
        assert code(check(doc, r, "/v1/filter", "post", 429)) == "queue_full"


def test_503_no_backend(make_server, doc, png):
    if BACKEND == "gpu":
        pytest.skip("GPU backend: a device is present")
    s = make_server("--backend", "gpu", wait_ready=False)
    assert code(check(doc, requests.get(s.url + "/readyz"), "/readyz", "get", 503)) == "unavailable"
    assert code(check(doc, upload(s.url, png), "/v1/filter", "post", 503)) == "unavailable"
    assert code(check(doc, upload(s.url, png, path="/v1/compare"), "/v1/compare", "post", 503)) == "unavailable"


def test_503_draining(make_server, doc, png, slow_png):
    s = make_server("--cpu-workers", "1", "--drain-grace-ms", "1500")
    with cf.ThreadPoolExecutor(2) as ex:
        busy = ex.submit(upload, s.url, slow_png, SLOW)
        until = time.time() + 10
        while total(metrics(s.url), "edged_requests_in_flight") < 2 and time.time() < until:
            time.sleep(0.02)  # the slow job and this /metrics request
        s.signal()
        time.sleep(0.1)
        r = check(doc, requests.get(s.url + "/readyz"), "/readyz", "get", 503)
        assert code(r) == "unavailable" and "draining" in r.json()["error"]["message"]
        assert code(check(doc, upload(s.url, png), "/v1/filter", "post", 503)) == "unavailable"
        assert busy.result().status_code == 200


def test_504(make_server, doc, png, slow_png):
    first, late = deadline_exceeded(make_server, slow_png, png)
    assert first == 200
    assert code(check(doc, late, "/v1/filter", "post", 504)) == "deadline_exceeded"


# ---- the params echo ----------------------------------------------------------------------------

COMMON_HEAD = ["filter", "variant", "variant_requested", "block", "border", "color"]
COMMON_TAIL = ["png_level", "output", "format", "orientation"]
TAPS = [[0, -1, 0], [-1, 5, -1], [0, -1, 0]]


@pytest.fixture(scope="module")
def catalogue(server):
    return requests.get(server.url + "/v1/filters", timeout=10).json()


def filter_json(url, png, params, **kw):
    r = upload(url, png, dict(params, output="json"), **kw)
    assert r.status_code == 200, r.text
    return r.json()


def test_echo_has_exactly_the_knobs_each_filter_takes(server, doc, png, catalogue):
    names = list(doc["components"]["schemas"]["AppliedParams"]["properties"])
    for f in catalogue["filters"]:
        params = {"filter": f["name"]}
        if f["name"] == "custom":
            params["taps"] = TAPS
        got = filter_json(server.url, png, params)
        validate(doc, doc["components"]["schemas"]["FilterResult"], got, f["name"])
        knobs = [k for k in names if k in f["params"]]  # the document's order is FILTER_KNOBS'
        assert list(got["params"]) == COMMON_HEAD + knobs + COMMON_TAIL, (f["name"], got["params"])
        assert set(f["params"]) <= set(names), f
        assert got["params"]["filter"] == f["name"] == got["filter"]
        assert got["params"]["variant"] == got["variant"] and got["params"]["variant_requested"] == "auto"
        assert got["params"]["color"] == f["color"] if "color" in f else got["params"]["color"] in ("gray", "rgb")
        if "post" in f["params"] and "post" in f:
            assert got["params"]["post"] == f["post"], f


def test_pipeline_echo_validates(server, doc, png):
    """A pipeline's JSON report (filter "pipeline", the steps in params.ops) is a FilterResult."""
    ops = [{"filter": "gaussian", "size": 7}, {"filter": "prewitt", "border": "replicate"},
           {"filter": "threshold", "value": 40}]
    got = filter_json(server.url, png, {"ops": ops, "bit_depth": 1})
    validate(doc, doc["components"]["schemas"]["FilterResult"], got, "pipeline")
    p = got["params"]
    assert got["filter"] == p["filter"] == "pipeline" and p["bit_depth"] == 1 and p["color"] == "gray"
    assert [(s["filter"], s["border"]) for s in p["ops"]] == [("gaussian", "reflect"), ("prewitt", "replicate"),
                                                             ("threshold", "reflect")]
    assert p["ops"][0]["size"] == 7 and p["ops"][2]["value"] == 40 and "post" not in p["ops"][1]


def test_echo_resolves_defaults(server, png):
    p = filter_json(server.url, png, {})["params"]
    assert p == {"filter": "edge", "variant": p["variant"], "variant_requested": "auto",
                 "block": 16 if BACKEND == "gpu" and p["variant"] not in ("cpu", "cpu_serial") else None,
                 "border": "reflect", "color": "gray", "threshold": 5, "bit_depth": 8, "png_level": 1, "output": "json",
                 "format": "png", "orientation": "exif"}
    p = filter_json(server.url, png, {"filter": "gaussian"})["params"]
    assert (p["size"], p["sigma"], p["post"], p["color"]) == (5, 1.1, "clamp", "rgb")  # OpenCV: 0.3*((5-1)/2-1)+0.8
    p = filter_json(server.url, png, {"filter": "gaussian", "size": 9})["params"]
    assert (p["size"], p["sigma"]) == (9, 1.7)
    p = filter_json(server.url, png, {"filter": "box"})["params"]
    assert p["size"] == 3 and "sigma" not in p
    p = filter_json(server.url, png, {"filter": "sobel_x"})["params"]
    assert p["post"] == "abs" and p["color"] == "gray"
    r = upload(server.url, png, {"filter": "sharpen"}, headers={"Accept": "application/json"})
    assert r.json()["params"]["output"] == "json" and r.json()["params"]["post"] == "clamp"


GIVEN = [
    {"filter": "edge", "threshold": 0.1, "bit_depth": 1, "border": "replicate", "png_level": 9},
    {"filter": "gaussian", "size": 7, "sigma": 1.5, "border": "reflect", "color": "gray", "post": "abs", "png_level": 4},
    {"filter": "box", "size": 5, "post": "offset", "color": "rgb"},
    {"filter": "custom", "taps": [[0.1, 0.2, 0.3]], "normalize": True, "border": "reflect"},
    {"filter": "custom", "taps": TAPS, "normalize": False, "post": "clamp"},
    {"filter": "emboss", "variant": "cpu_serial", "png_level": 0},
]


@pytest.mark.parametrize("given", GIVEN, ids=lambda g: "-".join(str(v) for v in g.values())[:40])
def test_echo_repeats_what_was_given_and_reproduces_the_image(server, png, given):
    """Each given value comes back as given; sending the echo back (variant pinned to the one
    that ran) gives the same image bytes as the original request."""
    got = filter_json(server.url, png, given)["params"]
    for k, v in given.items():
        assert got[k] == v, (k, got)
    again = {k: v for k, v in got.items() if k not in ("variant_requested", "output") and v is not None}
    first = upload(server.url, png, dict(given, variant=got["variant"]))
    second = upload(server.url, png, dict(again, output="png"))
    assert first.status_code == second.status_code == 200, second.text
    assert first.content == second.content


def test_echo_block_on_gpu(server, png):
    if BACKEND != "gpu":
        pytest.skip("CPU backend: block applies to GPU variants")
    p = filter_json(server.url, png, {"variant": "shared", "block": 8})["params"]
    assert (p["variant"], p["variant_requested"], p["block"]) == ("shared", "shared", 8)


def test_echo_in_the_documents(doc):
    """openapi.yaml's FilterResult carries params, and docs/api.md names its fields."""
    props = doc["components"]["schemas"]["FilterResult"]["properties"]
    assert deref(doc, props["params"]) is doc["components"]["schemas"]["AppliedParams"]
    with open(os.path.join(ROOT, "docs", "api.md"), encoding="utf-8") as f:
        text = f.read()
    for name in doc["components"]["schemas"]["AppliedParams"]["properties"]:
        assert "`%s`" % name in text, name
    assert doc["components"]["schemas"]["AppliedParams"]["additionalProperties"] is False
