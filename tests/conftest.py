"""Shared fixtures: a real gateway on 127.0.0.1:0 in a background thread, and a raw WS client."""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
import threading
import uuid
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from homarus.config.paths import StatePaths
from homarus.config.store import ConfigStore
from homarus.gateway.app import Gateway, GatewayOptions
from homarus.gateway.server import GatewayServer, make_server
from tests.pg_cluster import PgCluster, pg_binaries, pg_cluster
from tests.wsclient import close_all

TEST_TOKEN = "test-token-0123456789abcdef"


@dataclass
class RunningGateway:
    gateway: Gateway
    server: GatewayServer
    port: int
    paths: StatePaths
    token: str | None
    loop: asyncio.AbstractEventLoop

    def call_soon(self, fn: Callable[[], Any]) -> None:
        """Run ``fn`` on the gateway's event loop (its objects are not thread-safe)."""
        self.loop.call_soon_threadsafe(fn)

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def python_output(code: str) -> str:
    """What ``code`` prints when run by a fresh interpreter (what a module imports is only seen
    there: this test process has imported everything already); a failure fails the test."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout


def make_paths(root: Path, config: dict[str, Any] | None = None) -> StatePaths:
    state = root / "state"
    state.mkdir(parents=True, exist_ok=True, mode=0o700)
    paths = StatePaths(state_dir=state, config_path=state / "homarus.json")
    if config is not None:
        paths.config_path.write_text(json.dumps(config), encoding="utf-8")
    return paths


@contextmanager
def run_gateway(
    root: Path,
    config: dict[str, Any] | None = None,
    options: GatewayOptions | None = None,
    *,
    token: str | None = TEST_TOKEN,
) -> Iterator[RunningGateway]:
    """Start a real uvicorn gateway on an ephemeral loopback port; stop it on exit."""
    paths = make_paths(root, config)
    opts = options or GatewayOptions()
    opts.port = 0
    opts.host = opts.host or "127.0.0.1"
    if token is not None and opts.token is None:
        opts.token = token
    store = ConfigStore.open(paths, env={})
    gateway = Gateway(paths, store, opts)
    server = make_server(gateway)
    loop_ready = threading.Event()
    errors: list[BaseException] = []
    loops: list[asyncio.AbstractEventLoop] = []

    def target() -> None:
        async def main() -> None:
            loops.append(asyncio.get_running_loop())
            await gateway.open_storage()
            task = asyncio.create_task(server.serve())
            while not server.started and not task.done():
                await asyncio.sleep(0.005)
            loop_ready.set()
            await task

        try:
            asyncio.run(main())
        except BaseException as exc:  # surfaced to the test below
            errors.append(exc)
            loop_ready.set()

    thread = threading.Thread(target=target, name="gateway", daemon=True)
    thread.start()
    assert loop_ready.wait(10), "gateway did not start"
    if errors:
        raise errors[0]
    port = server.bound_port
    assert port is not None
    loops[0].call_soon_threadsafe(gateway.on_listening, port)
    try:
        yield RunningGateway(gateway, server, port, paths, opts.token, loops[0])
    finally:
        server.should_exit = True
        thread.join(15)
        collect_loop_garbage()


def collect_loop_garbage() -> None:
    """Collect what a finished event loop left behind, now rather than in a later test.

    A gateway thread's loop ends with `asyncio.run`; sockets of connections a client dropped
    mid-stream can linger until the next garbage collection, and their ResourceWarning would then
    fail whichever test happens to be running (warnings are errors here). Leaks that matter are
    asserted where they happen (processes, files); these are teardown noise.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


@pytest.fixture(autouse=True)
async def _close_ws_clients() -> AsyncIterator[None]:
    yield
    await close_all()


@pytest.fixture(scope="session")
def pg() -> Iterator[PgCluster]:
    """A real PostgreSQL (tests/pg_cluster.py), one for the whole session."""
    if pg_binaries() is None:
        pytest.skip("no PostgreSQL server installed (apt-get install postgresql; make install does it)")
    with pg_cluster() as cluster:
        yield cluster


@pytest.fixture
def pg_url(pg: PgCluster) -> str:
    """A fresh database of the session's PostgreSQL."""
    return pg.create_database(f"t_{uuid.uuid4().hex[:12]}")


@pytest.fixture
def gw(tmp_path: Path) -> Iterator[RunningGateway]:
    with run_gateway(tmp_path) as running:
        yield running
