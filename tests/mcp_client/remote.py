"""The SDK-written demo server over HTTP on loopback, for the tests: ``serve_demo("http")``
(streamable HTTP, at ``/mcp``) or ``serve_demo("sse")`` (the older transport only, at ``/sse``)."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

DEMO = str(Path(__file__).with_name("demo_server.py"))


@contextlib.contextmanager
def serve_demo(mode: str) -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, DEMO, mode, str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/{'mcp' if mode == 'http' else 'sse'}"
    finally:
        proc.kill()
        proc.wait(10)
