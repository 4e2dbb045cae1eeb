"""Exec inside a sandbox: the host backend's process handling, a sandboxed launch.

Two launchers share :class:`HostBackend`'s timeouts, output caps and background registry:
:class:`SandboxExecBackend` starts every command through ``bwrap`` (own namespaces, seccomp
filter, resource limits, no host env); :class:`DockerExecBackend` through ``docker exec`` in the
scope's long-lived container (created on first use by :class:`DockerSandbox`).
"""

from __future__ import annotations

import asyncio
import contextvars
import secrets
from collections.abc import Mapping
from typing import Any

from homarus.errors import HomarusError
from homarus.sandbox.bwrap import BwrapBackend, Launch
from homarus.sandbox.docker import REAP_TIMEOUT_S, DockerSandbox
from homarus.sandbox.output import ExecResult
from homarus.tools.process import Command, HostBackend, ProcessSession

__all__ = ["IN_CONTAINER_GRACE_S", "DockerExecBackend", "SandboxExecBackend"]

#: the in-container time limit of a command is its call's timeout plus this (the host side acts first)
IN_CONTAINER_GRACE_S = 5.0
#: (exec id, timeout) of the ``run`` call whose command is being spawned
_CALL: contextvars.ContextVar[tuple[str, float] | None] = contextvars.ContextVar("docker_exec_call", default=None)


class SandboxExecBackend(HostBackend):
    """Every command started through ``bwrap``."""

    def __init__(self, sandbox: BwrapBackend, *, max_output_bytes: int = 200_000, max_background: int = 8) -> None:
        super().__init__(max_output_bytes=max_output_bytes, max_background=max_background)
        self.sandbox = sandbox

    async def launch_for(self, command: Command, cwd: str, env: Mapping[str, str]) -> Launch:
        return self.sandbox.prepare(command, cwd, env)

    async def aclose(self) -> None:
        await super().aclose()
        await self.sandbox.aclose()


class DockerExecBackend(HostBackend):
    """Every command started with ``docker exec`` in the container of ``scope_key``.

    Killing the docker client does not reach into the container; the in-container
    ``timeout -s KILL`` of :meth:`DockerSandbox.launch` (the sandbox's ``exec_timeout_s``) does.
    """

    def __init__(
        self, sandbox: DockerSandbox, scope_key: str, *, max_output_bytes: int = 200_000, max_background: int = 8
    ) -> None:
        super().__init__(max_output_bytes=max_output_bytes, max_background=max_background)
        self.sandbox = sandbox
        self.scope_key = scope_key
        self._reapers: set[asyncio.Future[Any]] = set()

    async def run(
        self,
        command: Command,
        cwd: str,
        env: Mapping[str, str],
        timeout: float,
        stdin: bytes | None = None,
        *,
        abort: asyncio.Event | None = None,
    ) -> ExecResult:
        """As on the host; a command that timed out or was aborted has its processes in the
        container killed too (the docker client's death does not reach them)."""
        exec_id = secrets.token_hex(8)
        token = _CALL.set((exec_id, timeout))
        try:
            result = await super().run(command, cwd, env, timeout, stdin, abort=abort)
        except asyncio.CancelledError:
            self._keep(asyncio.ensure_future(self.sandbox.reap(self.scope_key, exec_id)))
            raise
        finally:
            _CALL.reset(token)
        if result.timed_out or result.aborted:
            await self.sandbox.reap(self.scope_key, exec_id)
        return result

    async def start(
        self, command: Command, cwd: str, env: Mapping[str, str], timeout: float, *, owner: str, label: str
    ) -> ProcessSession:
        """A background command; killed or timed out, its processes in the container are killed too."""
        exec_id = secrets.token_hex(8)
        token = _CALL.set((exec_id, timeout))
        try:
            session = await super().start(command, cwd, env, timeout, owner=owner, label=label)
        finally:
            _CALL.reset(token)
        self._keep(asyncio.ensure_future(self._reap_when_stopped(session, exec_id)))
        return session

    async def _reap_when_stopped(self, session: ProcessSession, exec_id: str) -> None:
        while session.running:
            await session.wait(3600)
        if session.status in ("killed", "timed out"):
            await self.sandbox.reap(self.scope_key, exec_id)

    async def aclose(self) -> None:
        """Kill the background commands, and (before the gateway goes) theirs in the container."""
        await super().aclose()
        if self._reapers:
            await asyncio.wait(list(self._reapers), timeout=REAP_TIMEOUT_S)

    def _keep(self, task: asyncio.Future[Any]) -> None:
        self._reapers.add(task)
        task.add_done_callback(self._reapers.discard)

    async def launch_for(self, command: Command, cwd: str, env: Mapping[str, str]) -> Launch:
        call = _CALL.get()
        exec_id, limit = (call[0], call[1] + IN_CONTAINER_GRACE_S) if call is not None else (None, None)
        if limit is not None and self.sandbox.exec_timeout_s is not None:
            limit = min(limit, self.sandbox.exec_timeout_s)
        try:
            launch = await self.sandbox.launch(self.scope_key, command, cwd, env, timeout_s=limit, exec_id=exec_id)
        except HomarusError as exc:  # the engine failed or the config is refused: the command did not start
            raise OSError(exc.message) from exc
        return launch
