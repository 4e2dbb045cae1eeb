"""What the gateway's parts may use of the running gateway: :class:`GatewayContext`.

Methods, HTTP surfaces, the WebSocket adapter and the services receive this interface, never the
composition root (``app.py``), so nothing below the root imports it and the root alone decides
how (and when) each service is built. The services are listed once, in :class:`GatewayServices`:
attributes the root builds on first read (reading ``ctx.runtime`` may import the agent stack,
reading ``ctx.cron`` may load the job store). A part that only needs to know whether a service
exists yet asks :meth:`GatewayContext.built`.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from homarus.protocol.limits import MAX_BUFFERED_BYTES, TICK_INTERVAL_MS
from homarus.usecases.ports import WakeMode

if TYPE_CHECKING:
    from pydantic import BaseModel

    from homarus.agents.runtime import AgentRuntime
    from homarus.audit.log import AuditStore
    from homarus.browser.manager import BrowserHub
    from homarus.config.paths import StatePaths
    from homarus.config.schema import HomarusConfig
    from homarus.config.store import ConfigStore
    from homarus.cron.service import CronService
    from homarus.gateway.events import EventBus
    from homarus.gateway.services.auth import GatewayAuth
    from homarus.gateway.services.cluster_approvals import ClusterApprovals
    from homarus.gateway.services.exec_approvals import ExecApprovals
    from homarus.gateway.services.loop_health import LoopHealth
    from homarus.gateway.services.memory import MemoryHub
    from homarus.gateway.services.policy import ToolAccess
    from homarus.gateway.ws.presence import Presence
    from homarus.mcp.hub import McpHub
    from homarus.plugins.hookmd import HookMdRunner
    from homarus.plugins.injections import InjectionQueue
    from homarus.plugins.registry import PluginRegistry
    from homarus.plugins.runner import HookRunner
    from homarus.providers.registry import ModelRegistry
    from homarus.queue.dedupe import DedupeCache
    from homarus.queue.journal import Journal
    from homarus.queue.lanes import LaneQueue
    from homarus.security.approvals import ApprovalManager
    from homarus.security.devices import DeviceStore
    from homarus.security.ratelimit import SlidingWindowBudget
    from homarus.security.ssrf import GuardedClient
    from homarus.sessions.manager import SessionManager
    from homarus.storage.cluster import Cluster
    from homarus.tools.base import ToolRegistry
    from homarus.tools.process import HostBackend
    from homarus.tools.sandbox_sessions import SandboxSessions
    from homarus.usage.ledger import UsageStore
    from homarus.usecases.chat.service import ChannelService
    from homarus.usecases.heartbeat import Heartbeats
    from homarus.usecases.recovery import Recovery
    from homarus.usecases.run_events import RunEvents

__all__ = ["Extensions", "GatewayContext", "GatewayOptions", "GatewayServices", "MethodTable", "WakeMode"]


@dataclass(slots=True)
class GatewayOptions:
    """Run-time knobs that are not config keys: CLI flags and test overrides."""

    host: str | None = None
    port: int | None = None
    token: str | None = None
    tick_interval_s: float = TICK_INTERVAL_MS / 1000
    handshake_timeout_s: float = 10.0
    health_cache_s: float = 60.0
    max_buffered_bytes: int = MAX_BUFFERED_BYTES
    max_preauth_per_ip: int = 32
    config_write_budget: tuple[int, float] = (3, 60.0)


@dataclass(slots=True)
class Extensions:
    """The tool registry and the plugins loaded into it: built together, since plugins add tools."""

    tools: ToolRegistry
    plugins: PluginRegistry


class MethodTable(Protocol):
    """The method registry (``router.MethodRegistry``) as the gateway's parts use it."""

    def register(
        self,
        name: str,
        handler: Callable[[Any, Any], Awaitable[Any]],
        *,
        scope: str | None,
        params: type[BaseModel] = ...,
        owner: str = "core",
        advertised: bool = True,
        roles: tuple[str, ...] = ("operator",),
    ) -> Any: ...
    def names(self) -> list[str]: ...
    def advertised(self) -> list[str]: ...
    async def dispatch(self, call: Any, params: Any) -> Any:
        """Authorise, validate and run one ``router.MethodCall``."""
        ...


class GatewayServices:
    """The gateway's services: the one list of them. Each is built on the first read of its
    attribute, by the function of the same name in ``services/build.py`` (``SERVICES``)."""

    sessions: SessionManager
    journal: Journal
    hooks: HookRunner
    hookmd: HookMdRunner
    injections: InjectionQueue
    models: ModelRegistry
    extensions: Extensions
    tools: ToolRegistry
    plugins: PluginRegistry
    exec_host: tuple[Any, HostBackend]
    sandboxes: SandboxSessions
    web_client: GuardedClient
    tool_access: ToolAccess
    runtime: AgentRuntime
    run_events: RunEvents
    heartbeats: Heartbeats
    memory: MemoryHub
    cron: CronService
    plugin_approvals: ApprovalManager
    exec_approvals: ExecApprovals
    channels: ChannelService
    #: the configured MCP servers and their tools (built when the config has an ``mcp`` section)
    mcp: McpHub
    #: the agents' headless browsers (built by the first browser tool call)
    browser: BrowserHub
    devices: DeviceStore
    audit_log: AuditStore
    #: tokens and cost of the model calls, per hour, agent, session and model (``usage.cost``)
    usage: UsageStore
    raw_stream_log: AuditStore


class GatewayContext(GatewayServices, ABC):
    """The running gateway as its parts see it (``app.Gateway`` is the one implementation)."""

    paths: StatePaths
    options: GatewayOptions
    #: the gateways sharing one PostgreSQL database (None with the embedded storage)
    cluster: Cluster | None
    #: approvals answered from any gateway of the cluster (None without one)
    cluster_approvals: ClusterApprovals | None
    boot_id: str
    started_at: float
    shutting_down: bool
    config_store: ConfigStore
    config_budget: SlidingWindowBudget
    auth: GatewayAuth
    bus: EventBus
    methods: MethodTable
    presence: Presence
    #: open WebSocket connections by id (the adapter's objects; parts only count or close them)
    connections: dict[str, Any]
    #: connection ids that asked for ``sessions.changed``
    session_subscribers: set[str]
    dedupe: DedupeCache
    lanes: LaneQueue
    #: what the start found of the runs the last process left unfinished
    recovery: Recovery
    #: the event loop's delay and CPU over the last minute
    loop_health: LoopHealth
    #: runs accepted and not finished
    open_runs: int

    @property
    @abstractmethod
    def config(self) -> HomarusConfig: ...

    @property
    @abstractmethod
    def host(self) -> str: ...

    @abstractmethod
    def built(self, service: str) -> bool:
        """Whether the lazily built service ``service`` (an attribute of GatewayServices) exists yet."""

    # -- behaviour ------------------------------------------------------------------------------
    @abstractmethod
    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``coro`` in the background; the gateway keeps a reference and reaps it."""

    @abstractmethod
    async def runs_ready(self) -> None:
        """Return once the modules a run needs are imported (``services/warm.py``)."""

    @abstractmethod
    def workspace_dir(self, agent_id: str) -> Path:
        """The agent's workspace directory."""

    @abstractmethod
    def health_summary(self, *, probe: bool = False) -> dict[str, Any]: ...

    @abstractmethod
    def uptime_ms(self) -> int: ...

    @abstractmethod
    def state_version(self) -> dict[str, int]: ...

    @abstractmethod
    def on_config_replaced(self) -> None:
        """Apply a config written through ``config.set``/``patch``."""
