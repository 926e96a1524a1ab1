#!/usr/bin/env python3
"""edged_client.py — a client of the edged HTTP API with requests: the API key, the JSON error body,
bounded retries on 429 and 503 that honour Retry-After, and the answer (the filtered image, PNG,
JPEG or WebP, or the JSON result) written to a file.

    python3 edged_client.py URL INPUT OUTPUT [--param NAME=VALUE]... [--json] [--key KEY] [--retries N]

INPUT is a PNG, JPEG or WebP (the server tells them from the bytes); OUTPUT is a PNG, or a JPEG or
WebP with --param format=jpeg or format=webp.

--param values are JSON where they parse as JSON (size=9, taps=[[1,2,1]], normalize=true), text
otherwise (filter=gaussian). The key may come from EDGED_API_KEY instead of --key. OUTPUT `-` with
--json prints the result. Exit status: 0 done, 1 an error answer or no answer (printed on stderr as
`edged: STATUS CODE: MESSAGE (request ID)`), 2 bad usage. Import it to use filter_image() directly."""
import argparse
import json
import os
import sys
import time

import requests

RETRY_STATUSES = (429, 503)  # queue full; draining, not ready, out of memory: worth another try


class EdgedError(Exception):
    """An error answer: the HTTP status and the code, message and request id of its JSON body."""

    def __init__(self, status, code, message, request_id):
        super().__init__("%d %s: %s (request %s)" % (status, code, message, request_id))
        self.status, self.code, self.message, self.request_id = status, code, message, request_id


def error_of(r):
    """The EdgedError of a non-200 answer; a body that is not edged's JSON error still gives one."""
    try:
        e = r.json()["error"]
        return EdgedError(r.status_code, e["code"], e["message"], e["request_id"])
    except (ValueError, KeyError, TypeError):
        return EdgedError(r.status_code, "http_%d" % r.status_code, r.text[:200], r.headers.get("X-Request-ID", "-"))


def retry_delay(r, attempt, base=0.5, cap=30.0):
    """Seconds to wait before retry number attempt+1: at least the server's Retry-After, growing
    exponentially from base with each attempt, never more than cap."""
    try:
        after = float(r.headers.get("Retry-After", 0))
    except ValueError:
        after = 0.0
    return min(max(after, base * 2 ** attempt), cap)


def filter_image(url, image, params=None, key=None, output="png", retries=4, log=None, timeout=120):
    """Filters image (the bytes of a PNG, JPEG or WebP) on the edged server at url with params (a dict
    of request parameters). Returns the filtered image's bytes (PNG, or JPEG or WebP with format
    "jpeg" or "webp" in params), or with output="json" the JSON result as a dict. Retries up to `retries` times on
    429/503; raises EdgedError for an error answer, requests' exceptions when no answer came."""
    headers = {"Authorization": "Bearer " + key} if key else {}
    fields = json.dumps(dict(params or {}, output=output))
    for attempt in range(retries + 1):
        r = requests.post(url.rstrip("/") + "/v1/filter", headers=headers, timeout=timeout,
                          files={"image": ("image", image, "application/octet-stream"),
                                 "params": (None, fields, "application/json")})
        if r.status_code == 200:
            return r.json() if output == "json" else r.content
        if r.status_code not in RETRY_STATUSES or attempt == retries:
            raise error_of(r)
        delay = retry_delay(r, attempt)
        if log:
            log("edged: %s; retry %d of %d in %.1f s" % (error_of(r), attempt + 1, retries, delay))
        time.sleep(delay)
    raise AssertionError("unreachable")


def param(text):
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError("expected NAME=VALUE, got %r" % text)
    try:
        return name, json.loads(value)
    except ValueError:
        return name, value


def main(argv):
    ap = argparse.ArgumentParser(description="Filter an image (PNG, JPEG or WebP) with an edged server; the result "
                                 "is a PNG, a JPEG or WebP with --param format=jpeg or format=webp, or the JSON "
                                 "report with --json.")
    ap.add_argument("url", help="the server, e.g. http://localhost:8080")
    ap.add_argument("input", help="the PNG, JPEG or WebP to filter")
    ap.add_argument("output", help="where to write the image (or the JSON result with --json; - prints it)")
    ap.add_argument("--param", type=param, action="append", default=[], metavar="NAME=VALUE",
                    help="a request parameter, e.g. filter=gaussian, size=9, format=jpeg (JSON values as JSON)")
    ap.add_argument("--json", action="store_true", help="ask for the JSON result instead of the image")
    ap.add_argument("--key", default=os.environ.get("EDGED_API_KEY"), help="API key (default $EDGED_API_KEY)")
    ap.add_argument("--retries", type=int, default=4, metavar="N", help="retries on 429/503 (default 4)")
    args = ap.parse_args(argv)
    with open(args.input, "rb") as f:
        image = f.read()
    try:
        got = filter_image(args.url, image, dict(args.param), key=args.key, output="json" if args.json else "png",
                           retries=args.retries, log=lambda line: print(line, file=sys.stderr))
    except EdgedError as e:
        print("edged: %s" % e, file=sys.stderr)
        return 1
    except requests.RequestException as e:
        print("edged: no answer from %s: %s" % (args.url, e), file=sys.stderr)
        return 1
    if args.json and args.output == "-":
        print(json.dumps(got, indent=2))
    elif args.json:
        with open(args.output, "w", encoding="utf-8") as f:
            json.dump(got, f, indent=2)
    else:
        with open(args.output, "wb") as f:
            f.write(got)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
