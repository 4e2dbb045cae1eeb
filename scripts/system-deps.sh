#!/usr/bin/env bash
# System packages Homarus uses: bubblewrap (the Linux sandbox for exec). Installed with apt when we
# are root and it is missing; otherwise a hint is printed and the sandbox reports itself unavailable.
set -u
if command -v bwrap >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null 2>&1 || true
  if apt-get install -y -qq bubblewrap >/dev/null 2>&1; then
    echo "installed bubblewrap ($(bwrap --version))"
    exit 0
  fi
fi
echo "note: bubblewrap (bwrap) is not installed; sandboxed exec will be unavailable." \
     "Install it with: sudo apt-get install bubblewrap" >&2
exit 0
