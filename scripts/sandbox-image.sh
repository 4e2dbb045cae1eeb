#!/usr/bin/env bash
# `make sandbox-image`: the Docker sandbox backend's image (default homarus-sandbox:bookworm-slim).
# Built FROM debian:bookworm-slim when the engine has it or a registry gives it; where no registry
# answers, FROM a base made offline from Debian's packages with the sandbox's tools in
# (scripts/docker-offline-base.sh --sandbox), made once and reused. Needs a running Docker engine.
set -euo pipefail
cd "$(dirname "$0")/.."
tag="${1:-homarus-sandbox:bookworm-slim}"
if ! docker info >/dev/null 2>&1; then
  echo "sandbox-image: no Docker engine answers (start dockerd, or check DOCKER_HOST)" >&2
  exit 1
fi
base="debian:bookworm-slim"
if ! docker image inspect "$base" >/dev/null 2>&1 && ! timeout 120 docker pull -q "$base" >/dev/null 2>&1; then
  base="homarus-sandbox-base:bookworm"
  if ! docker image inspect "$base" >/dev/null 2>&1; then
    echo "sandbox-image: no image registry answers; making $base from Debian's packages (debootstrap, a few minutes)" >&2
    bash scripts/docker-offline-base.sh --sandbox "$base" >/dev/null
  fi
fi
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! docker build --build-arg BASE_IMAGE="$base" -t "$tag" -f docker/sandbox.Dockerfile docker >"$log" 2>&1; then
  cat "$log" >&2
  echo "sandbox-image: the build of $tag failed (above)" >&2
  exit 1
fi
echo "sandbox-image: $tag (from $base)"
