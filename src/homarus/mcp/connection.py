"""One configured MCP server: its client session, kept open in a task of its own, restarted with
backoff when it dies, and the tools it lists.

The official SDK's client is an async context manager that must be entered and left by the same
task, so each server gets a runner task that opens it, lists the tools, then waits until the
gateway stops or a call finds the connection broken; tool calls from runs use the open session
from their own tasks. A server that fails to start, hangs or dies fails only its own calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from homarus.tasks import cancel_and_wait

if TYPE_CHECKING:
    from mcp import Client
    from mcp_types import CallToolResult, Tool

    from homarus.config.mcp import McpServerConfig
    from homarus.mcp.egress import GuardedBackend

__all__ = ["McpConnection", "McpUnavailable"]

log = logging.getLogger("homarus.mcp")

#: the JSON-RPC error code the SDK gives calls pending when the server's side closed
CONNECTION_CLOSED = -32000
REQUEST_TIMEOUT = -32001
State = Literal["stopped", "starting", "ready", "failed", "stopping"]
BACKOFF_S = (1.0, 2.0, 5.0, 15.0, 60.0)
#: the least time a start (and its tool listing) gets, whatever the per-call timeoutMs
START_FLOOR_S = 10.0
#: a server's stderr log is cut back to nothing when it outgrows this at a (re)start
STDERR_MAX_BYTES = 1_000_000


class McpUnavailable(Exception):
    """The server cannot take calls now (not started, failed, restarting): the message says why."""


class McpConnection:
    def __init__(
        self,
        name: str,
        cfg: McpServerConfig,
        *,
        log_dir: Path,
        on_tools: Callable[[McpConnection], None],
    ) -> None:
        self.name = name
        self.cfg = cfg
        self.state: State = "stopped"
        self.tools: list[Tool] = []
        self.last_error: str | None = None
        self.started_at: int | None = None
        self.restarts = 0
        self._log_dir = log_dir
        self._on_tools = on_tools
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        #: set (and replaced) at every state change: what a caller waiting for the server waits on
        self._changed = asyncio.Event()
        self._stop = asyncio.Event()
        self._broken = asyncio.Event()
        self._relist = asyncio.Event()
        self._retry = asyncio.Event()
        #: a remote server's connection guard (where each connection went)
        self.egress: GuardedBackend | None = None
        #: the transport spoken: ``auto`` starts as streamable HTTP and becomes SSE when only that answers
        self.kind: Literal["stdio", "http", "sse"] = cfg.kind

    # -- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        """Start the runner if it is not running and wait (``timeoutMs``) until the server is usable.

        A caller that arrives while the server is broken or waiting out its backoff after a crash
        wakes the restart and waits for it, within the same timeout; only a start that this
        caller asked for and that failed, or the timeout, fails the call."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._start_timeout()
        asked = False
        while not self._usable():
            if self._task is None or self._task.done():
                self._stop.clear()
                self._task = asyncio.create_task(self._run(), name=f"mcp:{self.name}")
                asked = True
            elif self.state == "failed":
                if asked:
                    raise McpUnavailable(self._why())  # the start this call asked for failed
                self._retry.set()  # waiting out its backoff: a call wants it now
                asked = True
            changed = self._changed
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise McpUnavailable(self._why())
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await changed.wait()

    def _usable(self) -> bool:
        return self.state == "ready" and self._client is not None and not self._broken.is_set()

    def _set_state(self, state: State) -> None:
        self.state = state
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def stop(self) -> None:
        self._stop.set()
        task, self._task = self._task, None
        if task is not None:
            try:
                async with asyncio.timeout(5.0):
                    await asyncio.shield(task)
            except (TimeoutError, Exception):
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        self._set_state("stopped")
        self.tools = []
        self._on_tools(self)

    def _why(self) -> str:
        if self.state == "starting":
            return f"MCP server {self.name!r} did not start within {self._start_timeout() * 1000:.0f} ms"
        return f"MCP server {self.name!r} is {self.state}" + (f": {self.last_error}" if self.last_error else "")

    async def _run(self) -> None:
        attempt = 0
        while not self._stop.is_set():
            self._broken.clear()
            self._set_state("starting")
            try:
                await self._session()
                attempt = 0  # it was up; a later failure starts the backoff over
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # anyio raises groups; every failure is this server's own
                self.last_error = _describe(exc)
                log.warning("MCP server %s: %s", self.name, self.last_error)
            self._client = None  # its tools stay listed: a call waits for the restart or says why it failed
            if self._stop.is_set():
                break
            self._set_state("failed")  # waiters learn it failed now, not after their timeout
            delay = BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)]
            attempt += 1
            self.restarts += 1
            await _first(self._stop, self._retry, timeout=delay)
            self._retry.clear()
        self._set_state("stopped")

    async def _session(self) -> None:
        if self.cfg.kind == "stdio":
            with self._stderr() as errlog:
                await self._serve(self._transport(errlog, "stdio"), "stdio")
            return
        if self.cfg.transport != "auto" or self.kind == "sse":
            await self._serve(self._transport(None, self.kind), self.kind)
            return
        try:
            await self._serve(self._transport(None, "http"), "http")
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            if self.started_at is not None or self._stop.is_set():
                raise  # it spoke streamable HTTP before: this is a failure, not a missing endpoint
            first = _describe(exc)
            try:  # an older server: the SSE transport at the same URL
                await self._serve(self._transport(None, "sse"), "sse")
            except asyncio.CancelledError:
                raise
            except BaseException as again:
                if self.started_at is not None:
                    raise  # it did speak SSE, then failed
                raise McpUnavailable(f"streamable HTTP: {first}; SSE: {_describe(again)}") from again

    async def _serve(self, transport: Any, kind: Literal["stdio", "http", "sse"]) -> None:
        from mcp import Client

        async with Client(transport, message_handler=self._message, raise_exceptions=True) as client:
            self._client = client
            await self._list(client)
            self.kind = kind  # restarts speak what answered
            self.last_error = None
            self.started_at = int(time.time() * 1000)
            self._set_state("ready")
            listener = asyncio.create_task(self._listen(client))
            try:
                while not self._stop.is_set() and not self._broken.is_set():
                    await _first(self._stop, self._broken, self._relist)
                    if self._relist.is_set():
                        self._relist.clear()
                        await self._list(client)
            finally:
                await cancel_and_wait(listener)
            if self._broken.is_set():
                raise McpUnavailable(self.last_error or "the connection broke")

    async def _list(self, client: Client) -> None:
        tools: list[Tool] = []
        cursor: str | None = None
        for _ in range(100):  # pages
            async with asyncio.timeout(self._start_timeout()):
                page = await client.list_tools(cursor=cursor, cache_mode="refresh")
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        self.tools = tools
        self._on_tools(self)

    async def _listen(self, client: Client) -> None:
        """Tool-list changes: a 2026-07-28 server sends them on a ``subscriptions/listen`` stream
        the client opens; an older one sends them unasked (see :meth:`_message`)."""
        from mcp.client.subscriptions import ListenNotSupportedError

        try:
            async with client.listen(tools_list_changed=True) as changes:
                async for _event in changes:
                    self._relist.set()
        except ListenNotSupportedError:
            return
        except Exception as exc:  # a lost stream: the session's own failure shows on the next call
            log.debug("MCP server %s: change stream ended: %s", self.name, _describe(exc))

    async def _message(self, message: Any) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if method == "notifications/tools/list_changed":
            self._relist.set()

    def _timeout(self) -> float:
        return self.cfg.timeout_ms / 1000

    def _start_timeout(self) -> float:
        # a start (spawning an interpreter, importing an SDK) on a busy machine takes seconds: a
        # short per-call timeoutMs must not make a healthy server unreachable
        return max(self._timeout(), START_FLOOR_S)

    def _transport(self, errlog: Any, kind: str) -> Any:
        cfg = self.cfg
        if kind == "stdio":
            from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client

            assert cfg.command is not None
            env = {k: v.get_secret_value() for k, v in cfg.env.items()}
            if cfg.sandbox:
                from homarus.mcp.sandboxing import sandboxed_command

                command, args, cwd = sandboxed_command(self.name, cfg, self._log_dir.parent / "mcp")
                params = StdioServerParameters(command=command, args=args, env=env, cwd=cwd)
            else:
                env = {**get_default_environment(), **env}
                params = StdioServerParameters(command=cfg.command, args=cfg.args, env=env, cwd=cfg.cwd)
            return stdio_client(params, errlog=errlog)
        assert cfg.url is not None
        _check_egress(cfg.url, allow_private=cfg.allow_private_network)  # a clear error before any connect
        from homarus.mcp.egress import guarded_client

        headers = {k: v.get_secret_value() for k, v in cfg.headers.items()}
        if kind == "sse":
            from mcp.client.sse import sse_client

            def factory(headers: Any = None, timeout: Any = None, auth: Any = None) -> Any:
                client, self.egress = guarded_client(
                    allow_private=cfg.allow_private_network, headers=headers or {}, timeout=self._timeout()
                )
                return client

            return sse_client(cfg.url, headers=headers, timeout=self._timeout(), httpx_client_factory=factory)
        from mcp.client.streamable_http import streamable_http_client

        http, self.egress = guarded_client(
            allow_private=cfg.allow_private_network, headers=headers, timeout=self._timeout()
        )
        return streamable_http_client(cfg.url, http_client=http)

    def _stderr(self) -> Any:
        self._log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self._log_dir / f"mcp-{self.name}.log"
        if path.exists() and path.stat().st_size > STDERR_MAX_BYTES:
            path.unlink()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        return os.fdopen(fd, "a", encoding="utf-8", errors="replace")

    # -- calls ------------------------------------------------------------------------------------
    async def call(self, tool: str, arguments: dict[str, Any], *, on_progress: Any = None) -> CallToolResult:
        """Call ``tool``; a broken connection fails this call and restarts the server."""
        if not self._usable():
            await self.start()
        client = self._client
        if client is None:
            raise McpUnavailable(self._why())
        try:
            async with asyncio.timeout(self._timeout() + 1):
                return await client.call_tool(
                    tool, arguments, read_timeout_seconds=self._timeout(), progress_callback=on_progress
                )
        except TimeoutError:
            raise McpUnavailable(self._late(tool)) from None
        except Exception as exc:
            if getattr(exc, "code", None) == REQUEST_TIMEOUT:
                raise McpUnavailable(self._late(tool)) from None
            if _transport_failure(exc):
                self.last_error = _describe(exc)
                self._broken.set()
                raise McpUnavailable(f"MCP server {self.name!r} went away: {self.last_error}") from None
            raise

    def _late(self, tool: str) -> str:
        return f"MCP server {self.name!r} did not answer {tool!r} within {self.cfg.timeout_ms} ms"

    def status(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "transport": self.kind,
            "sandbox": self.cfg.sandbox,
            "state": self.state,
            "tools": [t.name for t in self.tools],
            "lastError": self.last_error,
            "startedAt": self.started_at,
            "restarts": self.restarts,
            "startup": self.cfg.startup,
        }


async def _first(*events: asyncio.Event, timeout: float | None = None) -> None:
    """Wait until one of ``events`` is set (or ``timeout`` passed)."""
    waiters = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()


def _check_egress(url: str, *, allow_private: bool) -> None:
    """The URL's own rules (scheme, literal addresses, names like ``*.internal``), without DNS: the
    name is resolved and checked when each connection is opened (:mod:`homarus.mcp.egress`)."""
    from homarus.security.ssrf_rules import SsrfPolicy, check_url

    check_url(url, SsrfPolicy(allow_private_network=allow_private))


def _transport_failure(exc: BaseException) -> bool:
    import anyio

    broken = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, ConnectionError, EOFError)
    if isinstance(exc, broken) or getattr(exc, "code", None) == CONNECTION_CLOSED:
        return True
    inner = getattr(exc, "exceptions", None) or ()
    return any(_transport_failure(e) for e in inner)


def _describe(exc: BaseException) -> str:
    inner = getattr(exc, "exceptions", None)
    if inner:
        return "; ".join(_describe(e) for e in inner)
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 300 else text[:300] + "…"
