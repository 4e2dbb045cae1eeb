#!/usr/bin/env bash
# A Debian bookworm base image made without any image registry (debootstrap from the Debian
# mirror, then `docker import`), for building the Homarus image where registries are unreachable:
#   bash scripts/docker-offline-base.sh            # -> homarus-base:bookworm
#   docker build --build-arg BASE_IMAGE=homarus-base:bookworm -t homarus .
# Needs root, debootstrap and a running Docker engine.
set -euo pipefail
tag="${1:-homarus-base:bookworm}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$root" "$mirror" >/dev/null
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb
tar -C "$root" -c . | docker import - "$tag" >/dev/null
echo "$tag"
