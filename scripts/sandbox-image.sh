#!/usr/bin/env bash
# `make sandbox-image`: the Docker sandbox backend's image (default homarus-sandbox:bookworm-slim).
# Built FROM debian:bookworm-slim when the engine has it or a registry gives it; where no registry
# answers, FROM a base made offline from Debian's packages with the sandbox's tools in
# (scripts/docker-offline-base.sh --sandbox), made once and reused. Needs a running Docker engine.
set -euo pipefail
cd "$(dirname "$0")/.."
who="sandbox-image"
. scripts/docker-lib.sh
tag="${1:-homarus-sandbox:bookworm-slim}"
need_engine
base="$(pick_base debian:bookworm-slim homarus-sandbox-base:bookworm --sandbox)"
quietly "the build of $tag" docker build --build-arg BASE_IMAGE="$base" -t "$tag" -f docker/sandbox.Dockerfile docker
echo "$who: $tag (from $base)"
