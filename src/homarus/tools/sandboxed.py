"""Exec inside the bubblewrap sandbox: the host backend's process handling, a sandboxed launch."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

from homarus.sandbox.bwrap import BwrapBackend
from homarus.tools.process import Command, HostBackend, _Protocol

__all__ = ["SandboxExecBackend"]


class SandboxExecBackend(HostBackend):
    """Same timeouts, output caps and background registry as :class:`HostBackend`; every command
    is started through ``bwrap`` (own namespaces, seccomp filter, resource limits, no host env)."""

    def __init__(self, sandbox: BwrapBackend, *, max_output_bytes: int = 200_000, max_background: int = 8) -> None:
        super().__init__(max_output_bytes=max_output_bytes, max_background=max_background)
        self.sandbox = sandbox

    async def _spawn(
        self, command: Command, cwd: str, env: Mapping[str, str], on_data: Callable[[int, bytes], None], stdin: bool
    ) -> tuple[asyncio.SubprocessTransport, _Protocol]:
        launch = self.sandbox.prepare(command, cwd, env)
        try:
            return await asyncio.get_running_loop().subprocess_exec(
                lambda: _Protocol(on_data),
                *launch.argv,
                stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=launch.cwd,
                env=launch.env,
                start_new_session=True,
                close_fds=True,
                pass_fds=launch.pass_fds,
                preexec_fn=launch.preexec_fn,
            )
        finally:
            launch.close()

    async def aclose(self) -> None:
        await super().aclose()
        await self.sandbox.aclose()
