#!/bin/sh
# deps.sh — the one list of Debian/Ubuntu packages edged needs, and their installer.
# Used by `make deps` (groups build and test) and by the Dockerfile (build, runtime).
# Usage: docker/deps.sh [--check] GROUP...   GROUP: build | test | runtime | dev (fuzz, valgrind)
#        | bench (the load generator of `make bench-service`)
# Installs only what is missing and says what; --check only lists it (exit 1 if any).
# The test group also has PyPI packages, which pip installs into the user's site of $PYTHON
# (default /usr/bin/python3, the Makefile's; no root needed).
set -eu

BUILD="make gcc g++ pkg-config libpng-dev zlib1g-dev libdeflate-dev libmicrohttpd-dev libcjson-dev libturbojpeg0-dev libjpeg62-turbo-dev|libjpeg-turbo8-dev libwebp-dev help2man"
# prometheus brings promtool (checks of /metrics and of the alert rules, tests/system/test_monitoring.py):
# 22 MB to download with the JavaScript libraries it depends on (Debian 12); on a host run by systemd
# its server is started too. libjpeg-turbo-progs: cjpeg writes the test JPEGs of uncommon sampling
# factors.
TEST="python3 python3-numpy python3-prometheus-client python3-opencv python3-pil python3-pytest python3-jsonschema python3-requests python3-skimage python3-yaml python3-matplotlib shellcheck chromium chromium-driver python3-selenium python3-pip curl prometheus libjpeg-turbo-progs"
# package=module: kubernetes-validate checks the Kubernetes manifests (tests/system/test_deploy.py),
# openapi-spec-validator of the joined openapi.yaml (tests/system/test_contract.py).
PIP_TEST="kubernetes-validate=kubernetes_validate openapi-spec-validator=openapi_spec_validator"
DEV="clang valgrind"
BENCH="wrk"
# Library names differ between Debian 12 and Ubuntu 24.04 (the t64 transition; libjpeg62-turbo is
# Ubuntu's libjpeg-turbo8): a|b takes the first name the package index knows.
RUNTIME="libpng16-16t64|libpng16-16 zlib1g libdeflate0 libmicrohttpd12t64|libmicrohttpd12 libcjson1 libturbojpeg0|libturbojpeg libjpeg62-turbo|libjpeg-turbo8 libwebp7 curl ca-certificates"

check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
[ $# -gt 0 ] || set -- build test

test_python() { command -v "${PYTHON:-/usr/bin/python3}" || command -v python3 || echo python3; }
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
known() { apt-cache show "$1" >/dev/null 2>&1; }

# pick a|b: the installed alternative, else the first one apt knows, else the first.
pick() {
    for p in $(echo "$1" | tr '|' ' '); do installed "$p" && { echo "$p"; return; }; done
    for p in $(echo "$1" | tr '|' ' '); do known "$p" && { echo "$p"; return; }; done
    echo "$1" | cut -d'|' -f1
}

# A fresh image has no package index: fetch it first so that pick() sees real names.
if [ "$check" -eq 0 ] && [ "$(id -u)" -eq 0 ] && ! ls /var/lib/apt/lists/*_Packages >/dev/null 2>&1; then
    apt-get update -q
fi

want=""
pip_want=""
for group in "$@"; do
    case "$group" in
    build) want="$want $BUILD" ;;
    test) want="$want $TEST"; pip_want="$pip_want $PIP_TEST" ;;
    runtime) want="$want $RUNTIME" ;;
    dev) want="$want $DEV" ;;
    bench) want="$want $BENCH" ;;
    *) echo "deps.sh: unknown group '$group' (build, test, runtime, dev, bench)" >&2; exit 2 ;;
    esac
done

missing=""
for alt in $want; do
    p=$(pick "$alt")
    installed "$p" || missing="$missing $p"
done

pip_missing=""
for pm in $pip_want; do
    "$(test_python)" -c "import ${pm#*=}" 2>/dev/null || pip_missing="$pip_missing ${pm%%=*}"
done

if [ -z "$missing$pip_missing" ]; then
    echo "deps: all present ($*)"
    exit 0
fi
echo "deps: missing:$missing$pip_missing"
[ "$check" -eq 0 ] || exit 1
if [ -n "$missing" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "deps: not root; run:  sudo apt-get update && sudo apt-get install -y$missing" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    echo "deps: installing:$missing"
    apt-get update -q
    # shellcheck disable=SC2086
    apt-get install -y -q --no-install-recommends $missing
fi
if [ -n "$pip_missing" ]; then
    # --user leaves the distribution's packages alone, which is why pip may pass the
    # externally-managed marker of Debian and Ubuntu.
    echo "deps: pip installing:$pip_missing"
    # shellcheck disable=SC2086
    PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore "$(test_python)" -m pip install --user -q \
        --disable-pip-version-check --no-warn-script-location $pip_missing
fi
