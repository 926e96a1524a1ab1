"""test_strict_input.py — input held to JSON's own rules (docs/api.md, Requests): numbers exactly
as JSON writes them, no U+0000 in strings, valid UTF-8 only and never echoed raw, each key once
per source, and the query string's documented limits answered with 414 in the JSON error shape."""
import http.client
import json
import time

import numpy as np

import pytest
import requests

from conftest import png_bytes, random_image
from helpers import error_of, metrics, multipart, total


@pytest.fixture(scope="module")
def small():
    return png_bytes(random_image(12, 10, 1, seed=5))


def raw_post(url, path_and_query, body, ctype="image/png"):
    """POST with the request target sent byte for byte (requests would re-quote it)."""
    host, port = url.split("//")[1].split(":")
    c = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        c.request("POST", path_and_query, body=body, headers={"Content-Type": ctype})
        r = c.getresponse()
        return r.status, r.getheader("Content-Type"), r.read()
    finally:
        c.close()


def refused(status, ctype, body, field, http_status=400, code="invalid_parameter"):
    assert status == http_status, (status, body)
    assert ctype.startswith("application/json"), ctype
    assert all(b < 0x80 for b in body), body  # nothing of the input echoed raw
    e = json.loads(body)["error"]
    assert e["code"] == code and field in e["message"], e
    return e


def test_numbers_must_be_json_numbers(server, small):
    for bad in ["05", "5.", "-05", "5.e3", "+5", "0x10", "1e"]:
        s, t, b = raw_post(server.url, "/v1/filter?threshold=" + bad.replace("+", "%2B"), small)
        refused(s, t, b, "threshold")
        body, ctype = multipart([("image", small, ""), ("threshold", bad.encode(), "")])
        refused(*raw_post(server.url, "/v1/filter", body, ctype), "threshold")
        body, ctype = multipart([("image", small, ""), ("params", b'{"threshold":' + bad.encode() + b"}", "")])
        refused(*raw_post(server.url, "/v1/filter", body, ctype), "threshold")
    for good in ["5", "0.5", "5e1", "50E-1"]:
        s, _, b = raw_post(server.url, "/v1/filter?threshold=" + good, small)
        assert s == 200, (good, b)
    body, ctype = multipart([("image", small, ""),
                             ("params", b'{"filter":"custom","taps":[[1,2,1],[2,04,2],[1,2,1]]}', "")])
    refused(*raw_post(server.url, "/v1/filter", body, ctype), "taps")


def test_no_nul_in_strings(server, small):
    for params in [b'{"filter":"edge\\u0000junk"}', b'{"border":"zero\\u0000"}']:
        body, ctype = multipart([("image", small, ""), ("params", params, "")])
        field = params.split(b'"')[1].decode()
        refused(*raw_post(server.url, "/v1/filter", body, ctype), field)
    s, t, b = raw_post(server.url, "/v1/filter?filter=edge%00junk", small)
    refused(s, t, b, "filter")


def test_invalid_utf8_refused_never_echoed(server, small):
    for q, field in [("filter=edge%FF", "filter"), ("border=%C0%AE", "border"), ("filter=%ED%A0%80", "filter")]:
        refused(*raw_post(server.url, "/v1/filter?" + q, small), field)
    refused(*raw_post(server.url, "/v1/filter?k%C3%A9y%01=1", small), "unknown parameter")
    e = refused(*raw_post(server.url, "/v1/filter?filter=%C3%A9%1B%5B31m", small), "filter")
    assert "\x1b" not in e["message"] and "\u00e9" not in e["message"], e
    body, ctype = multipart([("image", small, ""), ("params", b'{"filter":"ed\xffge"}', "")])
    refused(*raw_post(server.url, "/v1/filter", body, ctype), "UTF-8")
    body, ctype = multipart([("image", small, ""), ("color", b"gr\xe9y", "")])
    refused(*raw_post(server.url, "/v1/filter", body, ctype), "color")
    # Any message that quotes input (here the path of a 404) is ASCII: result_escape writes '?'.
    refused(*raw_post(server.url, "/v1/filt%FF%C3%A9r", small), "no resource", http_status=404, code="not_found")


def test_repeated_keys_refused_within_a_source(server, small):
    refused(*raw_post(server.url, "/v1/filter?filter=edge&filter=box", small), "filter")
    refused(*raw_post(server.url, "/v1/filter?threshold=3&threshold=3", small), "threshold")
    body, ctype = multipart([("image", small, ""), ("threshold", b"3", ""), ("threshold", b"4", "")])
    refused(*raw_post(server.url, "/v1/filter", body, ctype), "threshold")
    # Across sources the documented precedence holds: the form overrides the query, JSON the form.
    body, ctype = multipart([("image", small, ""), ("filter", b"box", ""), ("params", b'{"filter":"sobel"}', "")])
    s, _, b = raw_post(server.url, "/v1/filter?filter=edge&output=json", body, ctype)
    assert s == 200 and json.loads(b)["filter"] == "sobel", b


def test_query_limits_answer_414(server, small):
    before = metrics(server.url)
    cases = {
        "65 arguments": "&".join("a%d=1" % i for i in range(65)),
        "3000 arguments": "&".join("a%d=1" % i for i in range(3000)),
        "4096 bare keys in 8 KiB": "&".join(["a"] * 4096),
        "8 KiB and a byte": "a=" + "x" * 8190,
        "60 KB value": "a=" + "x" * 60000,
    }
    for name, q in cases.items():
        s, t, b = raw_post(server.url, "/v1/filter?" + q, small)
        refused(s, t, b, "at most", http_status=414, code="uri_too_long")
    s, t, b = raw_post(server.url, "/v1/filter?" + "&".join("a%d=1" % i for i in range(64)), small)
    refused(s, t, b, "unknown parameter 'a0'")  # 64 arguments are within the limit
    r = requests.get(server.url + "/healthz?" + "&".join(["x"] * 100), timeout=10)
    assert r.status_code == 414 and error_of(r)["code"] == "uri_too_long", r.text
    # a request is counted by the server's completion callback, which can run a moment after the
    # client has read its answer: judge on the sample that ends the wait
    want, until = total(before, "edged_requests_total", code="414") + len(cases) + 1, time.time() + 5
    while (got := total(metrics(server.url), "edged_requests_total", code="414")) < want and time.time() < until:
        time.sleep(0.02)
    assert got == want, (got, want)
