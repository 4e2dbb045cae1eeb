#!/usr/bin/env bash
# A Debian bookworm base image made without any image registry (debootstrap from the Debian
# mirror, then `docker import`), for building the Homarus image where registries are unreachable:
#   bash scripts/docker-offline-base.sh             # -> homarus-base:bookworm
#   docker build --build-arg BASE_IMAGE=homarus-base:bookworm -t homarus .
#   bash scripts/docker-offline-base.sh --systemd   # -> homarus-systemd-base:bookworm (systemd as PID 1,
#                                                   #    for trying `homarus gateway install` for real)
# Needs root, debootstrap and a running Docker engine.
set -euo pipefail
packages="python3,python3-venv,ca-certificates"
tag="homarus-base:bookworm"
if [ "${1:-}" = "--systemd" ]; then
  packages="$packages,systemd,systemd-sysv,dbus,dbus-user-session,libpam-systemd,procps"
  tag="homarus-systemd-base:bookworm"
  shift
fi
tag="${1:-$tag}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase --include="$packages" bookworm "$root" "$mirror" >/dev/null
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb
tar -C "$root" -c . | docker import - "$tag" >/dev/null
echo "$tag"
