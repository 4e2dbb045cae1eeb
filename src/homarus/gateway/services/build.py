"""How each gateway service is built, on first use: the lazy-loading boundary.

The composition root maps a service name to one function here (``SERVICES``) and calls it the
first time a part reads that service. Every function imports what its service needs *inside*
itself, on purpose: that import is the cost of the service, and it is paid only by a gateway
that uses it. Nothing at module level here may import a subsystem. The services themselves are listed once, in
``context.GatewayServices``; a service there without a function here fails at import.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from homarus.gateway.context import Extensions, GatewayServices

if TYPE_CHECKING:
    from homarus.agents.runtime import AgentRuntime
    from homarus.audit.log import AuditStore
    from homarus.browser.manager import BrowserHub
    from homarus.cron.service import CronService
    from homarus.gateway.context import GatewayContext
    from homarus.gateway.services.exec_approvals import ExecApprovals
    from homarus.gateway.services.memory import MemoryHub
    from homarus.gateway.services.policy import ToolAccess
    from homarus.mcp.hub import McpHub
    from homarus.plugins.hookmd import HookMdRunner
    from homarus.plugins.injections import InjectionQueue
    from homarus.plugins.registry import PluginRegistry
    from homarus.plugins.runner import HookRunner
    from homarus.providers.registry import ModelRegistry
    from homarus.queue.journal import Journal
    from homarus.security.approvals import ApprovalManager
    from homarus.security.devices import DeviceStore
    from homarus.security.ssrf import GuardedClient
    from homarus.sessions.manager import SessionManager
    from homarus.tools.base import ToolRegistry
    from homarus.tools.process import HostBackend
    from homarus.tools.sandbox_sessions import SandboxSessions
    from homarus.usage.ledger import UsageStore
    from homarus.usecases.chat.service import ChannelService
    from homarus.usecases.heartbeat import Heartbeats
    from homarus.usecases.run_events import RunEvents

__all__ = ["SERVICES", "LazyServices"]


def sessions(gw: GatewayContext) -> SessionManager:
    from homarus.sessions.manager import SessionManager
    from homarus.sessions.store import Maintenance

    cfg = gw.config
    m = cfg.session.maintenance
    backend = None
    if gw.cluster is not None:  # storage.backend postgres: the sessions every gateway shares
        from homarus.sessions.pg_backend import PostgresSessions

        backend = PostgresSessions(gw.cluster.blocking, gw.cluster.member_id)
    return SessionManager(
        gw.paths.state_dir,
        agent_ids=cfg.agents.ids,
        default_agent=cfg.agents.default_id,
        main_key=cfg.session.main_key,
        maintenance=Maintenance(m.mode, m.prune_after_ms, m.max_entries),
        workspace=cfg.agents.defaults.workspace,
        transcript_cache_bytes=cfg.session.transcript_cache_mb * 1024 * 1024,
        backend=backend,
    )


def journal(gw: GatewayContext) -> Journal:
    if gw.cluster is not None:  # storage.backend postgres: the journal every gateway shares
        from homarus.queue.pg_journal import PgRunJournal

        return PgRunJournal(gw.cluster.blocking, gw.cluster.member_id, gw.cluster.ttl_s)
    from homarus.queue.journal import RunJournal

    return RunJournal(gw.paths.state_dir / "runs.sqlite")


def hooks(gw: GatewayContext) -> HookRunner:
    from homarus.config.loader import trace_hooks_enabled
    from homarus.plugins.runner import HookRunner

    return HookRunner(trace=trace_hooks_enabled())


def hookmd(gw: GatewayContext) -> HookMdRunner:
    from homarus.plugins.hookmd import HookMdRunner

    return HookMdRunner.discover(gw.paths.state_dir)


def injections(gw: GatewayContext) -> InjectionQueue:
    from homarus.plugins.injections import InjectionQueue

    return InjectionQueue(gw.paths.state_dir / "injections")


def models(gw: GatewayContext) -> ModelRegistry:
    from homarus.gateway.services.plugins import add_plugin_providers
    from homarus.providers.adapters import configured_registry

    registry = configured_registry(gw.config.models, gw.paths)
    if gw.built("extensions"):
        add_plugin_providers(gw, gw.plugins, registry)
    return registry


def extensions(gw: GatewayContext) -> Extensions:
    from homarus.gateway.services.plugins import add_plugin_providers, install_plugins, log_diagnostics
    from homarus.gateway.services.tooling import core_tools
    from homarus.plugins.loader import default_workspace, load_plugins

    tools = core_tools(gw)
    # plugins after the core: they see every core name, and core always wins a clash
    plugins = load_plugins(
        gw.config,
        state_dir=gw.paths.state_dir,
        workspace=default_workspace(gw.config, gw.paths.state_dir),
        runner=gw.hooks,
        tools=tools,
        reserved_methods=frozenset(gw.methods.names()),
        reserved_commands=core_command_names(),
    )
    install_plugins(gw, plugins)
    if gw.built("models"):
        add_plugin_providers(gw, plugins, gw.models)
    log_diagnostics(plugins)
    return Extensions(tools, plugins)


def core_command_names() -> frozenset[str]:
    from homarus.usecases.commands import CORE_COMMANDS

    return CORE_COMMANDS


def tools(gw: GatewayContext) -> ToolRegistry:
    return gw.extensions.tools


def plugins(gw: GatewayContext) -> PluginRegistry:
    return gw.extensions.plugins


def exec_host(gw: GatewayContext) -> tuple[Any, HostBackend]:
    from homarus.gateway.services.exec import build_exec
    from homarus.gateway.services.exec_approvals import approvals_source

    return build_exec(gw.config, gw.paths.state_dir, approvals_source(gw.paths.state_dir, gw.cluster))


def sandboxes(gw: GatewayContext) -> SandboxSessions:
    from homarus.gateway.services.sandboxes import build_sandboxes

    return build_sandboxes(gw.config, gw.paths.state_dir, gw.workspace_dir)


def web_client(gw: GatewayContext) -> GuardedClient:
    from homarus.tools.web import WebSettings, guarded_client_for

    return guarded_client_for(WebSettings.from_config(gw.config.tools))


def tool_access(gw: GatewayContext) -> ToolAccess:
    from homarus.gateway.services.policy import ToolAccess

    return ToolAccess(gw)


def runtime(gw: GatewayContext) -> AgentRuntime:
    from homarus.gateway.services.agent_runtime import build_runtime

    return build_runtime(gw)


def run_events(gw: GatewayContext) -> RunEvents:
    from homarus.usecases.run_events import RunEvents

    return RunEvents(gw.bus, gw.dedupe, kept=gw.config.gateway.memory.runs_kept)


def heartbeats(gw: GatewayContext) -> Heartbeats:
    from homarus.usecases.heartbeat import Heartbeats

    return Heartbeats(gw)


def memory(gw: GatewayContext) -> MemoryHub:
    from homarus.gateway.services.memory import MemoryHub

    return MemoryHub(gw)


def cron(gw: GatewayContext) -> CronService:
    from homarus.usecases.cron import build_cron

    service = build_cron(gw)
    service.scheduler.start_now()
    return service


def plugin_approvals(gw: GatewayContext) -> ApprovalManager:
    from homarus.gateway.services.approvals import build_plugin_approvals

    return build_plugin_approvals(gw)


def exec_approvals(gw: GatewayContext) -> ExecApprovals:
    from homarus.gateway.services.exec_approvals import ExecApprovals, approvals_source

    manager = ExecApprovals(gw, approvals_source(gw.paths.state_dir, gw.cluster))
    if gw.built("channels"):  # a chat owner is a way to reach an operator
        manager.routes.append(gw.channels)
    return manager


def devices(gw: GatewayContext) -> DeviceStore:
    from homarus.security.devices import CLUSTER_LOCK, DeviceStore

    if gw.cluster is not None:  # one set of paired devices for every gateway: a device connects to any
        from homarus.storage.statements import PgStatements

        return DeviceStore(store=PgStatements(gw.cluster.blocking, serialize=CLUSTER_LOCK))
    return DeviceStore(gw.paths.state_dir / "devices.sqlite")


def channels(gw: GatewayContext) -> ChannelService:
    from homarus.usecases.chat.service import ChannelService

    if gw.cluster is not None:  # the tables every gateway shares: the next holder goes on from them
        from homarus.channels.pg_db import NOTICE_CHANNEL, PgChannelDb

        cluster = gw.cluster
        service = ChannelService(gw, PgChannelDb(cluster.blocking))

        def tell_sender() -> None:
            _ = gw.spawn(cluster.notices.publish(NOTICE_CHANNEL, {"outbox": True}))

        service.manager.tell_sender = tell_sender
        return service
    return ChannelService(gw)


def browser(gw: GatewayContext) -> BrowserHub:
    from homarus.browser.manager import BrowserHub

    return BrowserHub(gw.config.browser, gw.paths.state_dir)


def mcp(gw: GatewayContext) -> McpHub:
    from homarus.mcp.hub import McpHub

    return McpHub(gw.config.mcp, gw.tools, log_dir=gw.paths.state_dir / "logs")


def audit_log(gw: GatewayContext) -> AuditStore:
    return _trail(gw, "audit")


def usage(gw: GatewayContext) -> UsageStore:
    if gw.cluster is not None:  # every gateway's runs in one ledger
        from homarus.usage.pg_ledger import PgUsageLedger

        return PgUsageLedger(gw.cluster.blocking)
    from homarus.usage.ledger import UsageLedger, ledger_path

    return UsageLedger(ledger_path(gw.paths.state_dir))


def raw_stream_log(gw: GatewayContext) -> AuditStore:
    return _trail(gw, "raw-stream")


def _trail(gw: GatewayContext, prefix: str) -> AuditStore:
    """The day files in ``$STATE/logs``, or the cluster's shared table."""
    if gw.cluster is not None:
        from homarus.audit.pg_log import PgAuditLog

        return PgAuditLog(gw.cluster.blocking, gw.cluster.member_id, prefix=prefix)
    from homarus.audit.log import AuditLog

    cfg = gw.config.logging
    return AuditLog(gw.paths.state_dir / "logs", max_file_bytes=cfg.audit.max_file_mb * 1024 * 1024, prefix=prefix)


def _builders() -> dict[str, Callable[[GatewayContext], Any]]:
    """Each service of ``GatewayServices`` with the function above of the same name."""
    namespace = globals()
    missing = [name for name in GatewayServices.__annotations__ if not callable(namespace.get(name))]
    if missing:
        raise RuntimeError(f"gateway services without a builder: {', '.join(missing)}")
    return {name: namespace[name] for name in GatewayServices.__annotations__}


#: service name (an attribute of the gateway) -> its builder
SERVICES: Final = _builders()


class LazyServices:
    """The gateway's services (``GatewayServices``) as attributes, each built by its builder in
    ``SERVICES`` on first read and kept as a plain attribute (so later reads cost nothing)."""

    if not TYPE_CHECKING:  # hidden from mypy: a misspelt attribute must stay an error there

        def __getattr__(self, name: str) -> Any:
            """Build the service ``name`` (only called for attributes not set yet).

            One build at a time per gateway: the loop builds most services, but a worker thread
            may read one too (and the warm-up builds the runtime while a test's thread sets a
            provider override); a second thread waits for the build under way and takes its result
            rather than building another, or seeing a half-built one as a cycle."""
            build = SERVICES.get(name)
            if build is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            lock = self.__dict__.get("_build_lock") or self.__dict__.setdefault("_build_lock", threading.RLock())
            with lock:
                if name in self.__dict__:  # built by another thread while this one waited
                    return self.__dict__[name]
                building = self.__dict__.setdefault("_building", set())  # this thread's builds only
                if name in building:
                    raise RuntimeError(f"gateway service {name!r} needs itself while it is being built")
                building.add(name)
                try:
                    value = build(self)
                finally:
                    building.discard(name)
                self.__dict__[name] = value
                return value

    def built(self, service: str) -> bool:
        """Whether ``service`` exists yet (shutdown and optional paths act only on what does)."""
        return service in self.__dict__
