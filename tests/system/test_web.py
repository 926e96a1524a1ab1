"""test_web.py — the page at GET /, driven in headless Chromium (Selenium + chromedriver)
against a real `edged serve` (backend from EDGED_TEST_BACKEND, default cpu; binary EDGED_BIN).

Outcomes asserted: the page and its files are served from the binary (byte-identical to server/http/web),
nothing is fetched from elsewhere, the filter and variant lists come from the API, the result the
page shows has the input's size and the very pixels the API returns for the parameters set in the
form (exact match), the timing bar shows the stages, compare draws one bar per API row, API errors
appear with the API's own message beside the run button and in place of the result, and at 375 px
width nothing overflows sideways. With API keys on (EDGED_API_KEYS), the page asks for a key, keeps
it in sessionStorage and sends it as a Bearer token; the before/after divider follows drags and keys;
"copy as curl" gives a command that, run with curl, returns the very PNG the page shows.
Screenshots: tests/out/web/*.png. Without chromium, chromedriver or python3-selenium the browser
tests are skipped (visibly); the HTTP checks of the page still run.
Seed of the generated images: SEED below.
"""
import base64
import http.client
import json
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np
import pytest
import requests

from conftest import ROOT, Server, png_bytes, png_decode, random_image

SEED = 8
WEB = os.path.join(ROOT, "server", "http", "web")
OUT = os.path.join(ROOT, "tests", "out", "web")
STAGES = ["decode", "queue", "upload", "kernel", "download", "encode"]
W, H = 97, 61  # odd sizes: a transposed or padded result would show
WAIT_S = 30


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def srv():
    s = Server([])
    yield s
    s.stop()


KEY = "web-test-key.0123456789"


@pytest.fixture(scope="module")
def keyed_srv():
    """A server that wants Authorization: Bearer KEY on its API."""
    s = Server([], env=dict(os.environ, EDGED_API_KEYS="other-key-abcdef," + KEY))
    yield s
    s.stop()


@pytest.fixture(scope="module")
def images():
    """Input files: an RGB PNG (W x H, seeded) and a text file that is not a PNG."""
    print("seed", SEED)
    d = tempfile.mkdtemp(prefix="edged-web-")
    png = png_bytes(random_image(H, W, 3, SEED))
    paths = {"png": os.path.join(d, "photo.png"), "text": os.path.join(d, "notes.txt")}
    with open(paths["png"], "wb") as f:
        f.write(png)
    with open(paths["text"], "wb") as f:
        f.write(b"these are notes, not a picture\n" * 4)
    yield paths
    shutil.rmtree(d)


def first_program(env, names):
    """$env if set (and executable), else the first of names found on PATH or as an absolute path."""
    if os.environ.get(env):
        return os.environ[env] if os.access(os.environ[env], os.X_OK) else None
    for n in names:
        p = n if os.path.isabs(n) else shutil.which(n)
        if p and os.access(p, os.X_OK):
            return p
    return None


def chrome_paths():
    return (first_program("EDGED_CHROMIUM", ["chromium", "chromium-browser", "google-chrome"]),
            first_program("EDGED_CHROMEDRIVER", ["chromedriver", "/usr/lib/chromium/chromedriver"]))


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip("selenium.webdriver",
                                    reason="python3-selenium not installed: browser tests skipped")
    from selenium.webdriver.chrome.service import Service

    chromium, driver = chrome_paths()
    if not chromium or not driver:
        pytest.skip("chromium (%s) or chromedriver (%s) not found: browser tests skipped; install the Debian "
                    "packages chromium and chromium-driver" % (chromium, driver))
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1280,900", "--no-first-run", "--disable-extensions"]:
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(driver), options=opts)
    d.set_script_timeout(WAIT_S)
    yield d
    d.quit()


# ---------------------------------------------------------------- helpers


def api_filter(srv, path, params):
    with open(path, "rb") as f:
        data = f.read()
    return requests.post(srv.url + "/v1/filter", files={"image": (os.path.basename(path), data, "image/png")},
                         data={"params": json.dumps(params)}, timeout=60)


def wait(d, js, what, timeout=WAIT_S):
    """Waits until the JavaScript expression js is truthy; fails naming what it waited for."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(d, timeout, poll_frequency=0.05).until(lambda drv: drv.execute_script("return " + js))
    except TimeoutException:
        err = d.execute_script("const e = document.getElementById('error'); return e.hidden ? '' : e.textContent")
        pytest.fail("timed out waiting for %s (page error box: %r)" % (what, err))


def open_page(d, srv, ready=True):
    r = requests.get(srv.url + "/", timeout=10)
    if r.status_code != 200 or not r.headers.get("Content-Type", "").startswith("text/html"):
        pytest.fail("GET / does not serve the page (%d %s): is the web hook in server/http/http_daemon.c and the "
                    "web_data.inc rule in the Makefile there?" % (r.status_code, r.text[:200]))
    d.get_log("browser")  # drop what earlier tests left (their expected 4xx answers)
    d.get(srv.url + "/")
    if ready:
        wait(d, "document.body.dataset.ready === 'true'", "the catalogues to load")


def by_id(d, id_):
    from selenium.webdriver.common.by import By
    return d.find_element(By.ID, id_)


def visible(d, id_):
    """Rendered with a size (so CSS that overrides `hidden` shows up as visible)."""
    return d.execute_script("""const e = document.getElementById(arguments[0]);
        if (!e || getComputedStyle(e).visibility === 'hidden') return false;
        const r = e.getBoundingClientRect();
        return r.width > 0 && r.height > 0""", id_)


def choose(d, id_, value):
    from selenium.webdriver.support.ui import Select
    Select(by_id(d, id_)).select_by_value(value)


def type_into(d, id_, text):
    e = by_id(d, id_)
    e.clear()
    e.send_keys(text)


def set_checked(d, id_, on):
    e = by_id(d, id_)
    if e.is_selected() != on:
        e.click()


def upload(d, path):
    by_id(d, "file").send_keys(path)
    wait(d, "document.getElementById('run').disabled === false", "the run button to be enabled")


def click_and_settle(d, button):
    """Clicks run or compare and waits until the page is idle again; returns the error text ('' if none)."""
    before = d.execute_script("return document.getElementById('result-img').src")
    by_id(d, button).click()
    wait(d, "document.getElementById('busy').textContent === '' && !document.getElementById('run').disabled",
         "the %s request to finish" % button)
    err = d.execute_script("const e = document.getElementById('error'); return e.hidden ? '' : e.textContent")
    if button == "run" and not err:
        assert d.execute_script("return document.getElementById('result-img').src") != before, "no new result"
    return err


def shown_pixels(d):
    """The result image as the browser decoded it: H x W x 4 RGBA from a canvas."""
    js = """const img = document.getElementById('result-img');
            const c = document.createElement('canvas');
            c.width = img.naturalWidth; c.height = img.naturalHeight;
            const g = c.getContext('2d');
            g.drawImage(img, 0, 0);
            const px = g.getImageData(0, 0, c.width, c.height).data;
            let s = '';
            for (let i = 0; i < px.length; i += 0x8000) s += String.fromCharCode.apply(null, px.subarray(i, i + 0x8000));
            return [c.width, c.height, btoa(s)];"""
    w, h, b64 = d.execute_script(js)
    return np.frombuffer(base64.b64decode(b64), np.uint8).reshape(h, w, 4)


def assert_same_pixels(shown, api_png):
    want = png_decode(api_png)
    if want.ndim == 2:
        want = np.repeat(want[..., None], 3, axis=2)
    assert shown.shape[:2] == want.shape[:2]
    diff = np.abs(shown[..., :want.shape[2]].astype(int) - want.astype(int))
    assert diff.max() == 0, "page shows other pixels than the API returns: max diff %d at %s" % (
        diff.max(), np.unravel_index(diff.argmax(), diff.shape))


def screenshot(d, name):
    """Full-page PNG into tests/out/web/NAME.png."""
    os.makedirs(OUT, exist_ok=True)
    m = d.execute_cdp_cmd("Page.getLayoutMetrics", {})
    size = m.get("cssContentSize") or m["contentSize"]
    shot = d.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}})
    path = os.path.join(OUT, name + ".png")
    with open(path, "wb") as f:
        f.write(base64.b64decode(shot["data"]))
    return path


def page_errors(d):
    """Console errors and CSP violations logged by the page."""
    return [e["message"] for e in d.get_log("browser") if e["level"] == "SEVERE"]


# ---------------------------------------------------------------- the page over HTTP (no browser)


def web_file(name):
    with open(os.path.join(WEB, name), "rb") as f:
        return f.read()


def test_page_and_files_served_from_the_binary(srv):
    r = requests.get(srv.url + "/", timeout=10)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("text/html")
    assert r.content == web_file("index.html"), "GET / is not server/http/web/index.html (binary not rebuilt?)"
    refs = re.findall(r'(?:src|href)="(web/[^"]+)"', r.text)
    assert sorted(refs) == ["web/app.js", "web/style.css"]
    types = {".js": "text/javascript", ".css": "text/css"}
    for ref in refs:
        a = requests.get(srv.url + "/" + ref, timeout=10)
        assert a.status_code == 200, (ref, a.text)
        assert a.headers["Content-Type"].startswith(types[os.path.splitext(ref)[1]]), a.headers["Content-Type"]
        assert a.content == web_file(os.path.basename(ref)), ref + " differs from the file in server/http/web"
    h = requests.head(srv.url + "/", timeout=10)
    assert h.status_code == 200 and int(h.headers["Content-Length"]) == len(r.content)


@pytest.mark.parametrize("path", ["/web/nope.js", "/web/", "/web", "/index.html", "/web/../web/app.js",
                                  "/web/%2e%2e/server/http/http_daemon.c", "/web/app.js/x"])
def test_other_paths_are_not_found(srv, path):
    c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    c.request("GET", path)  # sent as is: no client-side normalisation of ..
    r = c.getresponse()
    body = json.loads(r.read())
    c.close()
    assert r.status == 404, path
    assert body["error"]["code"] == "not_found"


def test_page_takes_only_get(srv):
    r = requests.post(srv.url + "/", data=b"x", timeout=10)
    assert r.status_code == 405
    assert r.json()["error"]["code"] == "method_not_allowed"
    assert "GET" in r.headers["Allow"]


def test_nothing_from_elsewhere_and_no_duplicated_lists(srv):
    html, js, css = (web_file(n).decode() for n in ("index.html", "app.js", "style.css"))
    # every URL the page loads is relative to the server
    for text in (html, js, css):
        assert not re.search(r'(?:src|href|action)\s*=\s*["\']?(?:[a-z]+:)?//', text, re.I)
        assert not re.search(r'(?:fetch|import)\s*\(\s*["\'`](?:[a-z]+:)?//', text, re.I)
        assert not re.search(r'url\(\s*["\']?(?!data:)', text), "css url() outside data:"
        assert "@import" not in text
    # the filter and variant names live in the API, not in the page ("auto" is also a colour/post mode;
    # a filter named as a knob, threshold, is named by the page as that knob)
    filters = requests.get(srv.url + "/v1/filters", timeout=10).json()["filters"]
    knobs = {k for f in filters for k in f["params"]}
    names = [f["name"] for f in filters if f["name"] not in knobs]
    names += [v["name"] for v in requests.get(srv.url + "/v1/variants", timeout=10).json()["variants"]]
    assert len(names) >= 4
    for n in names:
        if n == "auto":
            continue
        assert not re.search(r"""['"`]%s['"`]""" % re.escape(n), js), "app.js hard-codes %r" % n
        assert not re.search(r""">\s*%s\s*<|value="%s\"""" % (re.escape(n), re.escape(n)), html), \
            "index.html hard-codes %r" % n


# ---------------------------------------------------------------- the page in Chromium


def test_lists_and_server_info_come_from_the_api(srv, browser):
    d = browser
    open_page(d, srv)
    filters = requests.get(srv.url + "/v1/filters", timeout=10).json()
    variants = requests.get(srv.url + "/v1/variants", timeout=10).json()["variants"]
    version = requests.get(srv.url + "/version", timeout=10).json()
    opts = d.execute_script("return [...document.getElementById('filter').options].map(o => o.value)")
    assert opts == [f["name"] for f in filters["filters"]]
    assert by_id(d, "filter").get_attribute("value") == filters["default"]
    vopts = d.execute_script("return [...document.getElementById('variant').options].map(o => [o.value, o.disabled])")
    assert vopts == [[v["name"], not v["available"]] for v in variants]
    info = by_id(d, "server-info").text
    assert version["backend"] in info and version["device"] in info and version["version"] in info
    # the knobs shown are the ones the API lists for the chosen filter
    for f in filters["filters"]:
        choose(d, "filter", f["name"])
        shown = d.execute_script("return [...document.querySelectorAll('.knob')].filter(k => !k.hidden)"
                                 ".map(k => k.dataset.knob)")
        assert sorted(shown) == sorted(f["params"]), f["name"]
    assert page_errors(d) == []


def test_edge_result_has_the_input_size_and_the_api_pixels(srv, browser, images):
    d = browser
    open_page(d, srv)
    upload(d, images["png"])
    wait(d, "document.getElementById('input-img').naturalWidth > 0", "the input preview")
    assert by_id(d, "input-cap").text == "input: %d × %d" % (W, H)
    assert click_and_settle(d, "run") == ""
    size = d.execute_script("const i = document.getElementById('result-img'); return [i.naturalWidth, i.naturalHeight]")
    assert size == [W, H]
    assert visible(d, "result-img")
    assert_same_pixels(shown_pixels(d), api_filter(srv, images["png"], {
        "filter": "edge", "border": "reflect", "color": "auto", "variant": "auto"}).content)
    # the timing bar: visible, segments named by stage, widths adding up to the bar
    assert visible(d, "timing-bar")
    segs = d.execute_script("""return [...document.querySelectorAll('#timing-bar .seg')]
        .map(s => [s.dataset.stage, s.getBoundingClientRect().width])""")
    assert segs and all(name in STAGES + ["other"] and w > 0 for name, w in segs), segs
    assert {"decode", "kernel", "encode"} <= {name for name, _ in segs}
    bar_w = d.execute_script("return document.getElementById('timing-bar').clientWidth")
    assert abs(sum(w for _, w in segs) - bar_w) <= 2 + 2 * len(segs), (segs, bar_w)  # min-width 2px slivers
    legend = d.execute_script("return [...document.querySelectorAll('#timing-legend li')].map(l => l.dataset.stage)")
    assert legend[:6] == STAGES
    assert re.search(r"total [0-9.]+ ms", by_id(d, "timing-total").text)
    screenshot(d, "desktop_edge")
    assert page_errors(d) == []


# (form settings, the params the API gets for them)
CASES = [
    ({"filter": "gaussian", "size": "7", "sigma": "2.5", "border": "reflect", "color": "gray"},
     {"filter": "gaussian", "size": 7, "sigma": 2.5, "border": "reflect", "color": "gray"}),
    ({"filter": "custom", "taps": "1 2 1\n2, 4, 2\n1 2 1", "normalize": True, "border": "replicate"},
     {"filter": "custom", "taps": [[1, 2, 1], [2, 4, 2], [1, 2, 1]], "normalize": True, "border": "replicate"}),
    ({"filter": "box", "size": "5", "post": "offset", "color": "rgb"},
     {"filter": "box", "size": 5, "post": "offset", "color": "rgb"}),
    ({"filter": "edge", "threshold": "12", "bit_depth": True},
     {"filter": "edge", "threshold": 12, "bit_depth": 1}),
    ({"filter": "sobel", "variant": "cpu_serial"}, {"filter": "sobel", "variant": "cpu_serial"}),
]


def fill_form(d, form):
    choose(d, "filter", form["filter"])
    for key, value in form.items():
        if key == "filter":
            continue
        if isinstance(value, bool):
            set_checked(d, key, value)
        elif by_id(d, key).tag_name == "select":
            choose(d, key, value)
        else:
            type_into(d, key, value)


@pytest.mark.parametrize("form,params", CASES, ids=[c[0]["filter"] for c in CASES])
def test_form_parameters_reach_the_api(srv, browser, images, form, params):
    d = browser
    open_page(d, srv)
    upload(d, images["png"])
    fill_form(d, form)
    assert click_and_settle(d, "run") == ""
    want = dict({"border": "reflect", "color": "auto", "variant": "auto"}, **params)
    r = api_filter(srv, images["png"], want)
    assert r.status_code == 200, r.text
    assert_same_pixels(shown_pixels(d), r.content)
    assert "variant " + r.headers["X-Edged-Variant"] in by_id(d, "result-cap").text


def test_compare_draws_one_bar_per_variant(srv, browser, images):
    d = browser
    open_page(d, srv)
    upload(d, images["png"])
    assert click_and_settle(d, "compare") == ""
    with open(images["png"], "rb") as f:
        api = requests.post(srv.url + "/v1/compare", files={"image": ("p.png", f.read(), "image/png")},
                            data={"params": json.dumps({"filter": "edge"})}, timeout=120).json()
    bars = d.execute_script("""return [...document.querySelectorAll('#compare-chart rect.cbar')]
        .map(b => [b.dataset.variant, b.getBoundingClientRect().width, b.classList.contains('fastest')])""")
    assert [b[0] for b in bars] == [r["variant"] for r in api["rows"]]
    assert len(bars) >= 2 and all(w >= 2 for _, w, _ in bars)
    assert sum(f for _, _, f in bars) >= 1
    skipped = d.execute_script("return document.querySelectorAll('#compare-skipped li').length")
    assert skipped == len(api["skipped"])
    widest = max(w for _, w, _ in bars)
    set_checked(d, "log-scale", True)
    log_bars = d.execute_script("return [...document.querySelectorAll('#compare-chart rect.cbar')]"
                                ".map(b => b.getBoundingClientRect().width)")
    assert len(log_bars) == len(bars) and abs(max(log_bars) - widest) <= 1
    set_checked(d, "log-scale", False)
    screenshot(d, "desktop_compare")
    assert page_errors(d) == []


def test_api_errors_show_the_api_message(srv, browser, images):
    d = browser
    open_page(d, srv)
    # a file that is not a PNG: 415 and the API's own words
    upload(d, images["text"])
    want = api_filter(srv, images["text"], {"filter": "edge"}).json()["error"]
    err = click_and_settle(d, "run")
    assert want["message"] in err and want["code"] in err, (err, want)
    assert visible(d, "error") and by_id(d, "error").get_attribute("role") == "alert"
    assert not visible(d, "result-img") and not visible(d, "input-img"), "broken image shown"
    screenshot(d, "desktop_error")
    # parameter errors from the API (the page does no range checks of its own)
    upload(d, images["png"])
    for form, params in [({"filter": "gaussian", "size": "4"}, {"filter": "gaussian", "size": 4}),
                         ({"filter": "custom", "taps": "1 2 1\n1 2"}, {"filter": "custom", "taps": [[1, 2, 1], [1, 2]]}),
                         ({"filter": "custom", "taps": ""}, {"filter": "custom"})]:
        fill_form(d, form)
        want = api_filter(srv, images["png"], params).json()["error"]
        assert want["code"] == "invalid_parameter"
        err = click_and_settle(d, "run")
        assert want["message"] in err, (form, err, want)
    # a typo the page cannot turn into JSON is named by the page
    fill_form(d, {"filter": "custom", "taps": "1 x 1"})
    assert "'x' is not a number" in click_and_settle(d, "run")
    # and the error goes away with the next good run
    choose(d, "filter", "edge")
    assert click_and_settle(d, "run") == "" and not visible(d, "error")


def test_phone_width(srv, browser, images):
    d = browser
    d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                      {"width": 375, "height": 812, "deviceScaleFactor": 1, "mobile": True})
    try:
        open_page(d, srv)
        assert d.execute_script("return window.innerWidth") == 375
        upload(d, images["png"])
        assert click_and_settle(d, "run") == ""
        assert click_and_settle(d, "compare") == ""
        over = d.execute_script("""return [...document.querySelectorAll('body *')]
            .filter(e => e.getClientRects().length && e.getBoundingClientRect().right > 375.5
                         && !e.closest('.visually-hidden'))
            .map(e => e.tagName + '#' + e.id + '.' + e.className)""")
        assert over == [], "wider than the screen: %s" % over
        assert d.execute_script("return document.documentElement.scrollWidth") <= 375
        for id_ in ["result-img", "timing-bar", "compare-chart", "run", "compare"]:
            assert visible(d, id_), id_
        # input and result stack: the result sits below the input
        tops = d.execute_script("return ['input-img', 'result-img'].map(i => "
                                "document.getElementById(i).getBoundingClientRect().top)")
        assert tops[1] > tops[0]
        screenshot(d, "phone_375")
    finally:
        d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    assert page_errors(d) == []


# ---------------------------------------------------------------- API key, error placement, divider, curl


def in_viewport(d, id_):
    return d.execute_script("""const r = document.getElementById(arguments[0]).getBoundingClientRect();
        return r.top >= 0 && r.bottom <= window.innerHeight && r.height > 0""", id_)


def test_api_key_field(keyed_srv, browser, images):
    d = browser
    open_page(d, keyed_srv, ready=False)
    d.execute_script("sessionStorage.clear()")
    d.refresh()
    # no key: the server is up and says so; the page asks for the key instead of "not reachable"
    wait(d, "document.getElementById('key-status').textContent !== ''", "the key status")
    info = by_id(d, "server-info").text
    assert "not reachable" not in info and "API key required" in info, info
    assert "required" in by_id(d, "key-status").text
    assert by_id(d, "api-key").get_attribute("aria-invalid") == "true"
    assert "API key required" in by_id(d, "error").text and visible(d, "error")
    assert d.execute_script("return document.body.dataset.ready") is None
    assert by_id(d, "run").get_attribute("disabled") is not None
    screenshot(d, "desktop_key_required")
    # a wrong key: rejected, named as such
    type_into(d, "api-key", "wrong-key-123456")
    by_id(d, "key-use").click()
    wait(d, "document.getElementById('key-status').textContent.includes('rejected')", "the wrong key to be rejected")
    assert "API key rejected" in by_id(d, "error").text
    assert "unauthorized" in by_id(d, "error").text and "HTTP 401" in by_id(d, "error").text
    # the right key (Enter in the field): catalogues load, the key sits in sessionStorage only
    type_into(d, "api-key", KEY + "\n")
    wait(d, "document.body.dataset.ready === 'true'", "the catalogues to load with the key")
    assert d.execute_script("return sessionStorage.getItem('edged.apiKey')") == KEY
    assert d.execute_script("return localStorage.length") == 0
    assert not visible(d, "error") and by_id(d, "api-key").get_attribute("aria-invalid") is None
    upload(d, images["png"])
    assert click_and_settle(d, "run") == ""
    want = requests.post(keyed_srv.url + "/v1/filter", headers={"Authorization": "Bearer " + KEY},
                         files={"image": ("p.png", open(images["png"], "rb").read(), "image/png")},
                         data={"params": json.dumps({"filter": "edge", "border": "reflect", "color": "auto",
                                                     "variant": "auto"})}, timeout=60)
    assert want.status_code == 200
    assert_same_pixels(shown_pixels(d), want.content)
    assert by_id(d, "key-status").text == "key accepted"
    # a reload in the same tab keeps the key
    d.refresh()
    wait(d, "document.body.dataset.ready === 'true'", "the catalogues to load after a reload")
    assert by_id(d, "api-key").get_attribute("value") == KEY
    # forget: the key leaves sessionStorage and the server asks again
    by_id(d, "key-forget").click()
    wait(d, "document.getElementById('key-status').textContent.includes('required')", "the key to be asked again")
    assert d.execute_script("return sessionStorage.getItem('edged.apiKey')") is None
    d.execute_script("sessionStorage.clear()")


def test_error_shown_beside_the_button_and_the_result(srv, browser, images):
    d = browser
    open_page(d, srv)
    upload(d, images["png"])
    fill_form(d, {"filter": "gaussian", "size": "4"})
    d.execute_script("window.scrollTo(0, 0)")
    err = click_and_settle(d, "run")
    assert "even" in err
    # under the run button, in view
    run, box = (d.execute_script("return document.getElementById(arguments[0]).getBoundingClientRect().toJSON()", i)
                for i in ("run", "error"))
    assert 0 <= box["top"] - run["bottom"] <= 60, (run, box)
    assert in_viewport(d, "error")
    # and in the result panel, with the same text
    assert visible(d, "result-error")
    assert by_id(d, "result-error").text == by_id(d, "error").text
    assert d.execute_script("return !!document.getElementById('result-error').closest('#images')")
    # both go with the next good run
    fill_form(d, {"filter": "gaussian", "size": "5"})
    assert click_and_settle(d, "run") == ""
    assert not visible(d, "error") and not visible(d, "result-error")


def test_before_after_divider(srv, browser, images):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    d = browser
    open_page(d, srv)
    upload(d, images["png"])
    assert not visible(d, "ba")
    assert click_and_settle(d, "run") == ""
    assert visible(d, "ba-frame")
    srcs = d.execute_script("return ['ba-before', 'ba-after', 'input-img', 'result-img']"
                            ".map(i => document.getElementById(i).src)")
    assert srcs[0] == srcs[2] and srcs[1] == srcs[3], srcs
    wait(d, "document.getElementById('ba-after').naturalWidth > 0", "the before/after images")
    frame = d.execute_script("return document.getElementById('ba-frame').getBoundingClientRect().toJSON()")
    d.execute_script("document.getElementById('ba-frame').scrollIntoView({block: 'center'})")
    frame = d.execute_script("return document.getElementById('ba-frame').getBoundingClientRect().toJSON()")

    def divider_at():
        return d.execute_script("""const f = document.getElementById('ba-frame').getBoundingClientRect();
            const v = document.getElementById('ba-divider').getBoundingClientRect();
            return [(v.left + v.width / 2 - f.left) / f.width, Number(document.getElementById('ba-pos').value),
                    getComputedStyle(document.getElementById('ba-after')).clipPath]""")

    pos, value, clip = divider_at()
    assert abs(pos - 0.5) < 0.02 and value == 50 and "50%" in clip
    # drag from the middle to a quarter of the width
    el = by_id(d, "ba-frame")
    ActionChains(d).move_to_element(el).click_and_hold().move_by_offset(-frame["width"] / 4, 0).release().perform()
    pos, value, clip = divider_at()
    assert abs(pos - 0.25) < 0.03 and abs(value - 25) <= 2 and "inset" in clip, (pos, value, clip)
    # the pixels: left of the divider the input, right of it the result
    shot = d.execute_script("""const f = document.getElementById('ba-frame').getBoundingClientRect();
        return [document.elementFromPoint(f.left + f.width * 0.1, f.top + f.height / 2).id,
                document.elementFromPoint(f.left + f.width * 0.9, f.top + f.height / 2).id]""")
    assert shot == ["ba-before", "ba-after"], shot
    # keyboard: the range input moves it too
    by_id(d, "ba-pos").send_keys(Keys.END)
    pos, value, clip = divider_at()
    assert value == 100 and abs(pos - 1.0) < 0.03
    by_id(d, "ba-pos").send_keys(Keys.HOME)
    assert divider_at()[1] == 0
    screenshot(d, "desktop_before_after")
    assert page_errors(d) == []


def run_curl(command, cwd, env):
    """Runs the copied command in a POSIX shell; returns (exit status, stdout bytes, stderr text)."""
    p = subprocess.run(["sh", "-c", command], cwd=cwd, env=env, capture_output=True, timeout=60)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


@pytest.mark.skipif(not shutil.which("curl"), reason="curl not installed: copy-as-curl command not run")
def test_copy_as_curl(keyed_srv, browser, images, tmp_path):
    d = browser
    open_page(d, keyed_srv, ready=False)
    d.execute_script("sessionStorage.setItem('edged.apiKey', arguments[0])", KEY)
    d.refresh()
    wait(d, "document.body.dataset.ready === 'true'", "the catalogues to load with the key")
    d.get_log("browser")  # the 401s of the first load, before the key was set
    upload(d, images["png"])
    assert not visible(d, "curl")
    fill_form(d, {"filter": "gaussian", "size": "7", "sigma": "1.5", "border": "reflect"})
    assert click_and_settle(d, "run") == ""
    by_id(d, "copy-curl").click()
    wait(d, "document.getElementById('curl-status').textContent !== ''", "the copy status")
    assert visible(d, "curl-text")
    cmd = by_id(d, "curl-text").get_attribute("value")
    print(cmd)
    assert KEY not in cmd, "the key itself must not be in the command"
    assert '-H "Authorization: Bearer $EDGED_API_KEY"' in cmd
    assert cmd.startswith("curl ") and "'%s/v1/filter'" % keyed_srv.url in cmd
    params = json.loads(re.search(r"--form-string 'params=(\{.*?\})'", cmd).group(1))
    assert params == {"filter": "gaussian", "size": 7, "sigma": 1.5, "border": "reflect", "color": "auto",
                      "variant": "auto"}
    assert "-F 'image=@photo.png;type=image/png'" in cmd
    out = re.search(r"-o '([^']+)'", cmd).group(1)
    assert out == "photo-gaussian.png"
    # run it where photo.png is: the same PNG the page shows
    shutil.copy(images["png"], tmp_path / "photo.png")
    rc, _, err = run_curl(cmd, tmp_path, dict(os.environ, EDGED_API_KEY=KEY))
    assert rc == 0, err
    got = (tmp_path / out).read_bytes()
    assert got[:8] == b"\x89PNG\r\n\x1a\n", got[:200]
    assert_same_pixels(shown_pixels(d), got)
    # without the variable the server refuses it, so the header really is the one sent
    (tmp_path / out).unlink()
    rc, _, err = run_curl(cmd, tmp_path, {k: v for k, v in os.environ.items() if k != "EDGED_API_KEY"})
    assert json.loads((tmp_path / out).read_bytes())["error"]["code"] == "unauthorized"
    # compare: the command prints the JSON rows
    assert click_and_settle(d, "compare") == ""
    by_id(d, "copy-curl").click()
    wait(d, "document.getElementById('curl-text').value.includes('/v1/compare')", "the compare command")
    cmd = by_id(d, "curl-text").get_attribute("value")
    assert "-o " not in cmd and "'Accept: application/json'" in cmd
    rc, stdout, err = run_curl(cmd, tmp_path, dict(os.environ, EDGED_API_KEY=KEY))
    assert rc == 0, err
    assert json.loads(stdout)["filter"] == "gaussian" and len(json.loads(stdout)["rows"]) >= 2
    assert page_errors(d) == []
    d.execute_script("sessionStorage.clear()")


def test_jpeg_input_and_jpeg_output(srv, browser, images, tmp_path):
    """A JPEG from the picker, filtered to a JPEG at the chosen quality: the page shows what the API
    returns (both decoded by libjpeg-turbo builds; within 2 levels for IDCT/upsampling differences)."""
    import cv2
    d = browser
    jpg = str(tmp_path / "photo.jpg")
    cv2.imwrite(jpg, cv2.imread(images["png"]), [cv2.IMWRITE_JPEG_QUALITY, 90])
    open_page(d, srv)
    upload(d, jpg)
    wait(d, "document.getElementById('input-img').naturalWidth > 0", "the JPEG input preview")
    fill_form(d, {"filter": "box", "size": "3", "color": "rgb", "format": "jpeg"})
    assert visible(d, "quality")
    type_into(d, "quality", "80")
    assert click_and_settle(d, "run") == ""
    with open(jpg, "rb") as f:
        r = requests.post(srv.url + "/v1/filter", files={"image": ("photo.jpg", f.read(), "image/jpeg")},
                          data={"params": json.dumps({"filter": "box", "size": 3, "color": "rgb", "format": "jpeg",
                                                      "quality": 80, "variant": "auto"})},
                          timeout=60)
    assert r.status_code == 200 and r.headers["Content-Type"] == "image/jpeg", r.text
    want = cv2.cvtColor(cv2.imdecode(np.frombuffer(r.content, np.uint8), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
    shown = shown_pixels(d)[..., :3]
    assert shown.shape == want.shape and np.abs(shown.astype(int) - want).max() <= 2
    assert d.execute_script("return document.getElementById('download').download").endswith("-box.jpg")
    assert page_errors(d) == []


def test_webp_output_and_compare_without_output_options(srv, browser, images):
    """WebP from the format selector: lossless by default (the page shows exactly the API's PNG
    pixels), lossy with the box cleared (then the quality field shows). Compare sends none of the
    output options, which /v1/compare refuses, even with the 1-bit box and WebP chosen."""
    d = browser
    open_page(d, srv)
    upload(d, images["png"])
    fill_form(d, {"filter": "edge", "format": "webp"})
    assert visible(d, "lossless") and not visible(d, "quality")
    set_checked(d, "bit_depth", True)
    assert click_and_settle(d, "run") == ""
    assert_same_pixels(shown_pixels(d), api_filter(srv, images["png"], {"filter": "edge", "variant": "auto"}).content)
    assert d.execute_script("return document.getElementById('download').download").endswith("-edge.webp")
    assert click_and_settle(d, "compare") == ""
    set_checked(d, "lossless", False)
    assert visible(d, "quality")
    type_into(d, "quality", "75")
    assert click_and_settle(d, "run") == ""
    assert page_errors(d) == []
