"""The agent runtime wired to the gateway's services: what a run may reach and where it reports.

Services the runtime only needs during some runs (memory, cron, sandboxes) are reached through
callables, so building the runtime does not build them.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from homarus.agents.runtime import AgentRuntime
from homarus.agents.wiring import RuntimeWiring
from homarus.gateway.services.cron_access import LazyCron
from homarus.gateway.services.memory_access import memory_for, session_started
from homarus.gateway.services.policy import stranger_grant
from homarus.gateway.services.skills import plugin_skill_dirs
from homarus.gateway.services.tooling import prepare_tools
from homarus.tools.services import ToolServices

if TYPE_CHECKING:
    from homarus.agents.request import RunRequest
    from homarus.gateway.context import GatewayContext
    from homarus.sessions.keys import SessionKey
    from homarus.tools.sandbox_sessions import SandboxView
    from homarus.usage.ledger import RunUsage

__all__ = ["build_runtime"]

log = logging.getLogger("homarus.gateway")


def build_runtime(gw: GatewayContext) -> AgentRuntime:
    """The runtime and everything it is connected to, given once (``RuntimeWiring``)."""

    def sandbox_for(key: SessionKey) -> SandboxView | None:
        if gw.config.agents.defaults.sandbox_mode == "off":
            return None  # no sandboxing configured: the sandbox machinery is never loaded
        from homarus.gateway.services.sandboxes import sandbox_view

        return sandbox_view(gw.sandboxes, key, gw.config.session.main_key)

    async def bootstrap_hook(event: dict[str, Any]) -> None:
        if gw.hookmd.handlers_for("agent", "bootstrap"):
            await gw.hookmd.trigger("agent", "bootstrap", event)

    def untrusted_filter(req: RunRequest, names: set[str]) -> set[str]:
        from homarus.security.tool_policy import stranger_tools

        assert req.policy_key is not None
        view = sandbox_for(req.policy_key)
        sandbox = gw.config.agents.defaults.sandbox
        # alone: a sandbox of this session's own, with nothing of the agent's workspace mounted
        alone = view is not None and sandbox.scope == "session" and sandbox.workspace_access == "none"
        kept = stranger_tools(names, stranger_grant(gw, req), sandboxed_alone=alone)
        if view is not None and view.browser and alone:
            kept |= names & {"browser"}  # the sandbox's own browser, with a throw-away profile
        return kept

    def tool_filter(key: SessionKey, provider: str | None, model: str | None) -> set[str]:
        names = gw.tool_access.names_for(key, provider=provider, model=model)
        if not gw.config.present("channels"):
            names.discard("message")  # nothing to send to: not worth its bytes in every prompt
        return names

    observed = gw.config.logging
    wiring = RuntimeWiring(
        services=ToolServices(
            sessions=gw.sessions,
            hooks=gw.hooks,
            exec_approvals=gw.exec_approvals.approver(),
            cron=LazyCron(gw),
            channels=lambda: gw.channels if gw.config.present("channels") else None,
        ),
        tool_filter=tool_filter,
        untrusted_filter=untrusted_filter,
        memory_for=lambda agent_id: memory_for(gw, agent_id),
        on_session_run=lambda key: session_started(gw, key),
        audit=gw.audit_log if observed.audit.enabled else None,
        on_run_usage=lambda run: record_usage(gw, run),
        raw_stream=gw.raw_stream_log if observed.raw_stream else None,
        system_events=gw.heartbeats.events.drain,
        sandbox_for=sandbox_for,
        bootstrap_hook=bootstrap_hook,
        on_run_start=gw.journal.mark_started,
        skill_dirs=lambda: plugin_skill_dirs(gw),
        tool_prepare=lambda agent_id: prepare_tools(gw, agent_id),
    )
    return AgentRuntime(
        config=lambda: gw.config,
        sessions=gw.sessions,
        models=gw.models,
        tools=gw.tools,
        lanes=gw.lanes,
        state_dir=gw.paths.state_dir,
        on_event=gw.run_events,
        wiring=wiring,
        hooks=gw.hooks,
        spawn=gw.spawn,
        approve=lambda payload, timeout_ms, abort: _ask_operators(gw, payload, timeout_ms, abort),
        injections=gw.injections,
    )


def record_usage(gw: GatewayContext, run: RunUsage) -> None:
    """Add a finished run's model calls to the usage ledger on the file-work lane (the run's end
    does not wait for it; the gateway's shutdown does, as for every spawned task)."""
    from homarus.io_lane import run_on_lane

    async def write() -> None:
        try:
            await run_on_lane(gw.usage.record, run)
        except Exception:  # accounting never disturbs a run; a full disk is logged
            log.exception("could not record the usage of a run in %s", run.session_key)

    _ = gw.spawn(write())


async def _ask_operators(
    gw: GatewayContext, payload: dict[str, Any], timeout_ms: int, abort: asyncio.Event
) -> str | None:
    """A plugin-gated tool call asks the operators; the approval machinery loads with the first ask."""
    from homarus.gateway.services.approvals import approve_tool_call

    return await approve_tool_call(gw)(payload, timeout_ms, abort)
