"""What the gateway lends to tools (:class:`ToolServices`), each service typed by what its tools
use: a ``Protocol`` here where the real object lives in a layer above the tools."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from homarus.security.approvals import ApprovalOutcome
    from homarus.sessions.manager import SessionManager

__all__ = ["CronControl", "ExecApprover", "MemoryService", "SubagentHost", "ToolHooks", "ToolServices"]


class CronControl(Protocol):
    def status(self) -> dict[str, Any]: ...

    def list_jobs(self, *, include_disabled: bool = ..., limit: int = ..., offset: int = ...) -> dict[str, Any]: ...

    async def add(self, spec: dict[str, Any], *, default_agent_id: str | None = ...) -> dict[str, Any]: ...

    async def update(self, job_id: str, patch: dict[str, Any]) -> dict[str, Any]: ...

    async def remove(self, job_id: str) -> dict[str, Any]: ...

    async def run(self, job_id: str, *, mode: Literal["force", "due"] = ..., wait: bool = ...) -> dict[str, Any]: ...

    async def runs(self, job_id: str, *, limit: int = ..., offset: int = ...) -> dict[str, Any]: ...


class ExecApprover(Protocol):
    """Asks the operators (``ToolContext.services.exec_approvals``); the gateway provides it."""

    async def __call__(
        self, request: dict[str, Any], timeout_ms: int, abort: asyncio.Event | None
    ) -> ApprovalOutcome: ...


class ToolHooks(Protocol):
    def has(self, hook: str) -> bool: ...

    async def modify(self, hook: str, event: Any, *, tool_name: str | None = None) -> Any: ...


class _Dictable(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


class MemoryService(Protocol):
    """What the tools need from ``homarus.memory.manager.MemoryManager``."""

    async def search(self, query: str, max_results: int | None = None, min_score: float | None = None) -> _Dictable: ...

    async def read(self, path: str, from_line: int | None = None, lines: int | None = None) -> Any: ...


class SubagentHost(Protocol):
    """What sub-agents need of the agent runtime, lent as ``ToolContext.services.runtime``: it runs a
    request (of the type its ``submit`` declares); its ``models``, ``hooks`` and ``spawn`` are used
    when it has them."""

    async def submit(self, req: Any) -> Any: ...


@dataclass(frozen=True, slots=True)
class ToolServices:
    """What the gateway lends to tools, each typed by what its tools use (a ``Protocol`` in the
    tool's module where the real object lives in a layer above); None: not available here."""

    sessions: SessionManager | None = None
    #: runs sub-agents and agent-to-agent messages (``sessions_spawn``, ``sessions_send``)
    runtime: SubagentHost | None = None
    #: the plugin hook runner (``exec`` asks ``before_tool_call``-style hooks about environments)
    hooks: ToolHooks | None = None
    exec_approvals: ExecApprover | None = None
    cron: CronControl | None = None
    #: the chat channels service, when the config has channels (``message``)
    channels: Callable[[], Any] | None = None
    memory: MemoryService | None = None
    #: the real directories of the skills this run's prompt lists (``read`` may open files there)
    skills: frozenset[str] | None = None
