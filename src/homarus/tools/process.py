"""Where ``exec`` commands run: the :class:`ExecBackend` seam, the host backend, background processes.

:class:`ExecBackend` is what the sandbox swaps: ``run`` one command to completion (bounded output,
timeout, abort) and ``start`` one in the background, tracked in its :class:`ProcessRegistry`
(read by the ``process`` tool). :class:`HostBackend` runs commands as plain subprocesses of the
gateway:

* each command is the leader of its own session and process group (``start_new_session``), and
  the **whole group** is killed with SIGKILL on timeout, on abort, when the call is cancelled, and
  also when the leader exits (a foreground command leaves nothing behind; use ``background``);
* stdout and stderr are read through a protocol without back-pressure and kept up to a bound
  each (the head and the tail; what is between is counted and dropped, with a note);
* stdin is ``/dev/null`` unless bytes are given; background processes get a pipe for ``write``.

A process that leaves its group (``setsid``) escapes the kill: containing that is the sandbox's
job (a PID namespace), not this backend's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Literal, Protocol, cast

from homarus.sandbox.bwrap import Launch
from homarus.sandbox.output import BoundedOutput, ExecResult

__all__ = [
    "Command",
    "ExecBackend",
    "ExecResult",
    "HostBackend",
    "ProcessRegistry",
    "ProcessSession",
    "kill_group",
]

#: a ``str`` runs through ``/bin/sh -c``; a sequence is an argv executed directly (no shell)
Command = str | Sequence[str]
Status = Literal["running", "exited", "killed", "timed out"]

#: after SIGKILL, how long to wait for the exit status, and for the pipes to close
KILL_WAIT_S = 5.0
DRAIN_WAIT_S = 2.0
MAX_FINISHED = 32


class ExecBackend(Protocol):
    """What ``exec`` and ``process`` need from wherever commands run."""

    @property
    def processes(self) -> ProcessRegistry: ...

    async def run(
        self,
        command: Command,
        cwd: str,
        env: Mapping[str, str],
        timeout: float,
        stdin: bytes | None = None,
        *,
        abort: asyncio.Event | None = None,
    ) -> ExecResult: ...

    async def start(
        self, command: Command, cwd: str, env: Mapping[str, str], timeout: float, *, owner: str, label: str
    ) -> ProcessSession: ...

    async def aclose(self) -> None: ...


def kill_group(pgid: int) -> None:
    """SIGKILL every process of the group; a group that is already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class _Ring:
    """The last ``cap`` bytes of a stream, addressed by absolute offsets."""

    __slots__ = ("buf", "cap", "total")

    def __init__(self, cap: int) -> None:
        self.cap = max(cap, 1)
        self.buf = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        self.buf += data
        if len(self.buf) > self.cap:
            del self.buf[: len(self.buf) - self.cap]

    def since(self, offset: int) -> tuple[int, bytes]:
        """(bytes dropped before they could be read, the retained bytes from ``offset``)."""
        start = self.total - len(self.buf)
        dropped = max(0, start - offset)
        return dropped, bytes(self.buf[max(0, offset - start) :])


class _Protocol(asyncio.SubprocessProtocol):
    def __init__(self, on_data: Callable[[int, bytes], None]) -> None:
        self.on_data = on_data
        self.exited = asyncio.Event()
        self.closed = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self.on_data(fd, data if isinstance(data, bytes) else data.encode())

    def process_exited(self) -> None:
        self.exited.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()


_reaping: set[asyncio.Task[None]] = set()


def _close_when_reaped(transport: asyncio.SubprocessTransport, proto: _Protocol) -> None:
    """Close the transport once the (killed) process has been reaped.

    Closing it while the child still runs — a cancelled call — would leave a ``Popen`` that warns
    "still running" when collected; the group was already sent SIGKILL, so this waits briefly.
    """
    if proto.exited.is_set():
        transport.close()
        return

    async def reap() -> None:
        try:
            await _wait_for(proto.exited, KILL_WAIT_S)
        finally:
            transport.close()

    task = asyncio.get_running_loop().create_task(reap())
    _reaping.add(task)
    task.add_done_callback(_reaping.discard)


async def _wait_for(event: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await event.wait()


class ProcessSession:
    """One background process: its status and its combined (stdout + stderr) output."""

    def __init__(self, session_id: str, owner: str, label: str, max_output: int) -> None:
        self.id = session_id
        self.owner = owner
        self.label = label
        self.pid = 0
        self.started_at = time.time()
        self.ended_at: float | None = None
        self.exit_code: int | None = None
        self.status: Status = "running"
        self._ring = _Ring(max_output)
        self._cursor = 0
        self._transport: asyncio.SubprocessTransport | None = None
        self._protocol: _Protocol | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._watcher: asyncio.Task[None] | None = None

    def feed(self, fd: int, data: bytes) -> None:
        self._ring.add(data)

    def attach(self, transport: asyncio.SubprocessTransport, protocol: _Protocol, timeout: float) -> None:
        self._transport, self._protocol = transport, protocol
        self.pid = transport.get_pid()
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(timeout, self._stop, "timed out")
        self._watcher = loop.create_task(self._watch(), name=f"exec-bg-{self.id}")

    @property
    def running(self) -> bool:
        return self.ended_at is None

    def _stop(self, status: Status) -> None:
        if self.running:
            self.status = status
            kill_group(self.pid)

    async def _watch(self) -> None:
        assert self._transport is not None and self._protocol is not None
        try:
            await self._protocol.exited.wait()
            kill_group(self.pid)  # what it left in its group
            await _wait_for(self._protocol.closed, DRAIN_WAIT_S)
        finally:
            self.exit_code = self._transport.get_returncode()
            self.ended_at = time.time()
            if self.status == "running":
                self.status = "exited"
            if self._timer is not None:
                self._timer.cancel()
            self._transport.close()

    def kill(self) -> None:
        self._stop("killed")

    async def wait(self, seconds: float = KILL_WAIT_S) -> None:
        if self._watcher is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(seconds):
                    await asyncio.shield(self._watcher)

    def write(self, data: bytes | None) -> None:
        """Write to the process's stdin; ``None`` closes it (end of input). ValueError when impossible."""
        pipe = self._transport.get_pipe_transport(0) if self._transport is not None else None
        if not self.running or pipe is None or pipe.is_closing():
            raise ValueError("the process has exited or its stdin is closed")
        stdin = cast(asyncio.WriteTransport, pipe)
        if data is None:
            stdin.write_eof()
        else:
            stdin.write(data)

    def poll(self) -> tuple[int, str]:
        """(bytes dropped unread, output produced since the last poll)."""
        dropped, data = self._ring.since(self._cursor)
        self._cursor = self._ring.total
        return dropped, data.decode("utf-8", "replace")

    def log(self) -> tuple[int, str]:
        """(bytes no longer retained, the retained output)."""
        dropped, data = self._ring.since(0)
        return dropped, data.decode("utf-8", "replace")

    def runtime_s(self) -> float:
        return (self.ended_at or time.time()) - self.started_at


class ProcessRegistry:
    """Background processes by id, each visible only to the session that started it."""

    def __init__(self, *, max_running: int = 8, max_finished: int = MAX_FINISHED) -> None:
        self.max_running = max_running
        self.max_finished = max_finished
        self._sessions: dict[str, ProcessSession] = {}

    def new_id(self) -> str:
        while True:
            session_id = "proc_" + secrets.token_hex(4)
            if session_id not in self._sessions:
                return session_id

    def check_capacity(self) -> None:
        running = sum(1 for s in self._sessions.values() if s.running)
        if running >= self.max_running:
            raise ValueError(f"too many background processes ({running} running; the limit is {self.max_running})")

    def add(self, session: ProcessSession) -> None:
        self._sessions[session.id] = session
        finished = [s for s in self._sessions.values() if not s.running]
        for old in sorted(finished, key=lambda s: s.ended_at or 0.0)[: max(0, len(finished) - self.max_finished)]:
            del self._sessions[old.id]

    def get(self, session_id: str, owner: str) -> ProcessSession | None:
        session = self._sessions.get(session_id)
        return session if session is not None and session.owner == owner else None

    def list(self, owner: str) -> list[ProcessSession]:
        return sorted((s for s in self._sessions.values() if s.owner == owner), key=lambda s: s.started_at)

    async def kill_all(self) -> None:
        sessions = [s for s in self._sessions.values() if s.running]
        for session in sessions:
            session.kill()
        await asyncio.gather(*(s.wait() for s in sessions))


class HostBackend:
    """Commands as subprocesses of this process (no isolation beyond the workdir and environment)."""

    def __init__(self, *, max_output_bytes: int = 200_000, max_background: int = 8, shell: str = "/bin/sh") -> None:
        self.max_output_bytes = max_output_bytes
        self.shell = shell
        self._processes = ProcessRegistry(max_running=max_background)

    @property
    def processes(self) -> ProcessRegistry:
        return self._processes

    def argv_for(self, command: Command) -> list[str]:
        """The argv to spawn (a sandbox backend prefixes its own launcher here)."""
        if isinstance(command, str):
            return [self.shell, "-c", command]
        argv = list(command)
        if not argv:
            raise ValueError("empty argv")
        return argv

    async def launch_for(self, command: Command, cwd: str, env: Mapping[str, str]) -> Launch:
        """How to spawn ``command``: here as it is; a sandbox backend returns its launcher's."""
        return Launch(self.argv_for(command), dict(env), cwd)

    async def _spawn(
        self, command: Command, cwd: str, env: Mapping[str, str], on_data: Callable[[int, bytes], None], stdin: bool
    ) -> tuple[asyncio.SubprocessTransport, _Protocol]:
        """The one place a command's process is started (its own session: a group to kill)."""
        launch = await self.launch_for(command, cwd, env)
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
        if abort is not None and abort.is_set():
            return ExecResult(None, "", "", aborted=True)
        out, err = BoundedOutput(self.max_output_bytes), BoundedOutput(self.max_output_bytes)
        sinks = {1: out, 2: err}
        started = time.monotonic()
        try:
            transport, proto = await self._spawn(command, cwd, env, lambda fd, d: sinks[fd].add(d), stdin is not None)
        except OSError as exc:
            return ExecResult(None, "", "", error=f"could not start the command: {exc.strerror or exc}")
        pid = transport.get_pid()
        timed_out = aborted = False
        try:
            if stdin is not None:
                pipe = cast(asyncio.WriteTransport, transport.get_pipe_transport(0))
                pipe.write(stdin)
                pipe.write_eof()
            waiters = [asyncio.ensure_future(proto.exited.wait())]
            if abort is not None:
                waiters.append(asyncio.ensure_future(abort.wait()))
            try:
                await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiter in waiters:
                    waiter.cancel()
            if not proto.exited.is_set():
                aborted = abort is not None and abort.is_set()
                timed_out = not aborted
                kill_group(pid)
                await _wait_for(proto.exited, KILL_WAIT_S)
            kill_group(pid)  # what the command left behind in its group
            await _wait_for(proto.closed, DRAIN_WAIT_S)
        finally:
            if not proto.closed.is_set():  # cancelled, or a pipe still held by an escaped process
                kill_group(pid)
            _close_when_reaped(transport, proto)
        return ExecResult(
            transport.get_returncode(),
            out.text(),
            err.text(),
            timed_out=timed_out,
            truncated=out.truncated or err.truncated,
            aborted=aborted,
            duration_ms=int((time.monotonic() - started) * 1000),
        )

    async def start(
        self, command: Command, cwd: str, env: Mapping[str, str], timeout: float, *, owner: str, label: str
    ) -> ProcessSession:
        """Start a background process; ValueError past the registry's limit, OSError if it cannot start."""
        self._processes.check_capacity()
        session = ProcessSession(self._processes.new_id(), owner, label, self.max_output_bytes)
        transport, proto = await self._spawn(command, cwd, env, session.feed, True)
        session.attach(transport, proto, timeout)
        self._processes.add(session)
        return session

    async def aclose(self) -> None:
        """Kill every background process (gateway shutdown)."""
        await self._processes.kill_all()
