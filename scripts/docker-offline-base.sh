#!/usr/bin/env bash
# A Debian bookworm base image made without any image registry (debootstrap from the Debian
# mirror that apt uses, then `docker import`), for building images where registries are unreachable:
#   bash scripts/docker-offline-base.sh             # -> homarus-base:bookworm (python3, for the gateway image)
#   docker build --build-arg BASE_IMAGE=homarus-base:bookworm -t homarus .
#   bash scripts/docker-offline-base.sh --sandbox   # -> homarus-sandbox-base:bookworm (docker/sandbox-packages.txt
#                                                   #    already in: `make sandbox-image` uses it)
#   bash scripts/docker-offline-base.sh --systemd   # -> homarus-systemd-base:bookworm (systemd as PID 1,
#                                                   #    for trying `homarus gateway install` for real)
# An optional last argument names the image. Needs root, debootstrap and a running Docker engine.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
packages="python3,python3-venv,ca-certificates"
tag="homarus-base:bookworm"
case "${1:-}" in
  --systemd)
    packages="$packages,systemd,systemd-sysv,dbus,dbus-user-session,libpam-systemd,procps"
    tag="homarus-systemd-base:bookworm"
    shift ;;
  --sandbox)
    packages="$(grep -v '^#' "$here/../docker/sandbox-packages.txt" | grep . | paste -sd, -)"
    tag="homarus-sandbox-base:bookworm"
    shift ;;
esac
tag="${1:-$tag}"
if ! command -v debootstrap >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 || { echo "debootstrap is missing (apt-get install debootstrap)" >&2; exit 1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi
# the mirror apt itself uses (a deb822 or a one-line source), unless DEBIAN_MIRROR says otherwise
mirror="${DEBIAN_MIRROR:-$( (grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}'; \
  grep -hs '^deb ' /etc/apt/sources.list | awk '{print $2}') | grep -v security | head -1 || true)}"
mirror="${mirror:-http://deb.debian.org/debian}"
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase --include="$packages" bookworm "$root" "$mirror" >/dev/null
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb
tar -C "$root" -c . | docker import - "$tag" >/dev/null
echo "$tag"
