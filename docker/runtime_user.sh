#!/bin/sh
# runtime_user.sh — the images' unprivileged user, edged (uid and gid 10001, the ids that
# docker/k8s/base/deployment.yaml runs as), for both runtime stages of the Dockerfile.
set -eu
groupadd --system --gid 10001 edged
useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin edged
