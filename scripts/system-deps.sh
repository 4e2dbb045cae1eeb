#!/usr/bin/env bash
# System packages Homarus uses: bubblewrap (the Linux sandbox for exec), python3.11-doc (the
# reST sources of the Python docs, the data of bench/memory_retrieval_bench.py), and chromium (the
# headless browser of the Control UI tests in tests/webui; never needed at run time), and libmagic1
# (python-magic's library, which the personal WhatsApp engine, neonize, loads), and postgresql (the
# server binaries the storage tests start a throw-away cluster with; a gateway on PostgreSQL talks to
# a server of the operator's). Installed with apt
# when we are root and they are missing; otherwise a hint is printed and the feature reports itself
# unavailable.
set -u
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
[ -d /usr/share/doc/python3.11/html/_sources/faq ] || missing+=(python3.11-doc)
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)  # the TLS tests make their certificate with it
ldconfig -p 2>/dev/null | grep -q 'libmagic\.so\.1 ' || missing+=(libmagic1)  # neonize imports python-magic
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)  # tests/storage start one
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null 2>&1 || true
  for pkg in "${missing[@]}"; do
    if apt-get install -y -qq "$pkg" >/dev/null 2>&1; then
      echo "installed $pkg"
    fi
  done
fi
if ! command -v bwrap >/dev/null 2>&1; then
  echo "note: bubblewrap (bwrap) is not installed; sandboxed exec will be unavailable." \
       "Install it with: sudo apt-get install bubblewrap" >&2
fi
if [ ! -d /usr/share/doc/python3.11/html/_sources/faq ]; then
  echo "note: python3.11-doc is not installed; bench/memory_retrieval_bench.py has no data." \
       "Install it with: sudo apt-get install python3.11-doc" >&2
fi
if [ ! -x /usr/bin/chromium ]; then
  echo "note: chromium is not installed; the browser tests of the Control UI (tests/webui) will be skipped." \
       "Install it with: sudo apt-get install chromium" >&2
fi
exit 0
