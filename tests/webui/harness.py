"""Helpers for the Control UI tests: real gateways (serving exactly what ``homarus gateway``
serves, the UI included) that can be restarted."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from homarus.config.paths import StatePaths
from homarus.config.store import ConfigStore
from homarus.gateway.app import Gateway, GatewayOptions
from homarus.gateway.server import GatewayServer, make_server
from tests.conftest import TEST_TOKEN, collect_loop_garbage, make_paths


@dataclass
class Served:
    """A gateway started (and restartable) on a fixed loopback port."""

    paths: StatePaths
    port: int
    gateway: Gateway
    server: GatewayServer
    loop: asyncio.AbstractEventLoop
    thread: threading.Thread

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def call_soon(self, fn: Callable[[], Any]) -> None:
        self.loop.call_soon_threadsafe(fn)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(15)
        collect_loop_garbage()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_gateway(paths: StatePaths, port: int, token: str | None = TEST_TOKEN) -> Served:
    """Start a gateway on ``port`` in a thread (the same way tests.conftest.run_gateway does)."""
    opts = GatewayOptions()
    opts.port = port
    opts.host = "127.0.0.1"
    opts.token = token
    gateway = Gateway(paths, ConfigStore.open(paths, env={}), opts)
    server = make_server(gateway)
    ready = threading.Event()
    loops: list[asyncio.AbstractEventLoop] = []
    errors: list[BaseException] = []

    def target() -> None:
        async def main() -> None:
            loops.append(asyncio.get_running_loop())
            task = asyncio.create_task(server.serve())
            while not server.started and not task.done():
                await asyncio.sleep(0.005)
            ready.set()
            await task

        try:
            asyncio.run(main())
        except BaseException as exc:
            errors.append(exc)
            ready.set()

    thread = threading.Thread(target=target, name="gateway", daemon=True)
    thread.start()
    assert ready.wait(10), "gateway did not start"
    if errors:
        raise errors[0]
    if not server.started:
        raise OSError(f"gateway could not listen on {port}")
    loops[0].call_soon_threadsafe(gateway.on_listening, port)
    return Served(paths, port, gateway, server, loops[0], thread)


@contextmanager
def served(root: Path, config: dict[str, Any] | None = None, token: str | None = TEST_TOKEN) -> Iterator[Served]:
    paths = make_paths(root, config)
    running = start_gateway(paths, free_port(), token)
    try:
        yield running
    finally:
        running.stop()
