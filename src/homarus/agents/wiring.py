"""What the gateway connects an agent runtime to: one typed object, built in one place.

Each field is a seam the runtime calls during a run; None turns that part off (no audit trail, no
sandboxes, no memory, ...). The gateway builds it once (``gateway/services/agent_runtime.py``);
an embedder or a test gives only what it needs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from homarus.tools.base import ToolContext
from homarus.tools.services import ToolServices

if TYPE_CHECKING:
    import asyncio
    from pathlib import Path

    from homarus.agents.request import RunRequest
    from homarus.audit.trail import AuditSink
    from homarus.sessions.keys import SessionKey
    from homarus.tools.sandbox_sessions import SandboxView
    from homarus.usage.ledger import RunUsage

__all__ = ["RuntimeWiring"]


@dataclass(slots=True)
class RuntimeWiring:
    #: what tools are lent (the runtime itself fills ``runtime`` when it is left out)
    services: ToolServices = field(default_factory=ToolServices)
    #: (session key, provider, model) → the tool names the session may use; None = all
    tool_filter: Callable[[SessionKey, str | None, str | None], set[str]] | None = None
    #: the tools of a run asked for by someone other than an owner (``policy_key`` set): an
    #: allowlist over what the session's policy gives; without it such a run gets no tools
    untrusted_filter: Callable[[RunRequest, set[str]], set[str]] | None = None
    #: the agent's memory manager (lent to tools as ``services.memory``); None: no memory
    memory_for: Callable[[str], Any] | None = None
    #: a session's run is starting (memory syncs in the background on a session's first run)
    on_session_run: Callable[[SessionKey], None] | None = None
    #: where run records go (None: no audit trail)
    audit: AuditSink | None = None
    #: a run has ended: what its model calls used (``homarus.usage``; None: not accounted). Called
    #: on the loop; it must not block (the gateway hands the write to its file-work lane)
    on_run_usage: Callable[[RunUsage], None] | None = None
    #: where provider stream events go (None: not recorded; ``logging.rawStream``)
    raw_stream: AuditSink | None = None
    #: system events (wake, hooks, cron) waiting for a session's next turn, drained with the injections
    system_events: Callable[[str], list[dict[str, Any]]] | None = None
    #: the sandbox a session's tools run in (None, or returning None: unsandboxed)
    sandbox_for: Callable[[SessionKey], SandboxView | None] | None = None
    #: operator hooks for ``agent:bootstrap`` (may change the bootstrap file list)
    bootstrap_hook: Callable[[dict[str, Any]], Awaitable[Any]] | None = None
    #: records that a run began and the runs whose messages it takes in (blocking: called in the
    #: run's first trip to a worker thread, before anything else of it happens; if it raises, the
    #: run fails without starting), so a crash before this point leaves them queued, never half-run
    on_run_start: Callable[[str, list[str]], None] | None = None
    #: directories of plugins' skills (a callable: they change as plugins load)
    skill_dirs: Callable[[], Any] | None = None
    #: starts the lazy tool servers (MCP) an agent may use; the tool names it must not see
    tool_prepare: Callable[[str], Awaitable[set[str]]] | None = None

    def tool_context(
        self,
        key: SessionKey,
        run_id: str,
        call_id: str,
        workspace: Path,
        abort: asyncio.Event,
        skill_roots: frozenset[str] | None = None,
        sandbox_key: SessionKey | None = None,
        *,
        trusted: bool = True,
    ) -> ToolContext:
        """A tool call's context; a sandboxed session's tools see the sandbox's workspace.

        ``skill_roots`` (the real dirs of the skills this run's prompt lists) is lent to the
        file tools as ``services.skills``: ``read`` may open files inside them, nowhere else.
        """
        view = self.sandbox_for(sandbox_key or key) if self.sandbox_for is not None else None
        ws = view.root if view is not None else workspace
        services = dataclasses.replace(self.services, skills=skill_roots) if skill_roots else self.services
        if self.memory_for is not None:
            services = dataclasses.replace(services, memory=self.memory_for(key.agent_id))
        return ToolContext(
            key.canonical, key.agent_id, run_id, call_id, ws, abort, services, sandbox=view, trusted=trusted
        )
