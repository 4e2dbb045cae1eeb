"""Composition root: builds the gateway's services from the config and wires them together."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from homarus import __version__
from homarus.agents.runtime import AgentRuntime
from homarus.audit.log import AuditLog
from homarus.config.loader import StatePaths, provider_env_keys, trace_hooks_enabled
from homarus.config.schema import HomarusConfig, is_loopback_host
from homarus.config.store import ConfigStore
from homarus.cron.service import CronService
from homarus.gateway.chat_commands import CORE_COMMANDS
from homarus.gateway.cron_wiring import start_cron, stop_cron
from homarus.gateway.events import EventBus
from homarus.gateway.exec_wiring import build_exec, build_sandboxes, sandbox_view
from homarus.gateway.heartbeat import Heartbeats, WakeMode
from homarus.gateway.hooks_http import resume_hook_runs
from homarus.gateway.memory_wiring import MemoryHub
from homarus.gateway.methods import approvals, exec_approvals
from homarus.gateway.plugin_wiring import install_plugins
from homarus.gateway.policy import policy_inputs
from homarus.gateway.presence import Presence
from homarus.gateway.router import ClientInfo, MethodRegistry
from homarus.gateway.run_events import RunEvents
from homarus.gateway.run_recovery import recover_runs
from homarus.plugins.events import GatewayStartEvent, GatewayStopEvent
from homarus.plugins.hookmd import HookMdRunner
from homarus.plugins.injections import InjectionQueue
from homarus.plugins.loader import default_workspace, load_plugins
from homarus.plugins.runner import HookRunner
from homarus.protocol.frames import ErrorShape
from homarus.protocol.handshake import ConnectRequest
from homarus.protocol.limits import MAX_BUFFERED_BYTES, MAX_PAYLOAD_BYTES, TICK_INTERVAL_MS, CloseCode
from homarus.providers.adapters import default_factories
from homarus.providers.registry import ModelRegistry
from homarus.queue.dedupe import DedupeCache
from homarus.queue.journal import RunJournal, RunRecord
from homarus.queue.lanes import LaneQueue
from homarus.security.approvals import plugin_remember_key
from homarus.security.auth import check_shared_secret
from homarus.security.device import DeviceProof, verify_device
from homarus.security.ratelimit import FailureLimiter, SlidingWindowBudget
from homarus.security.scopes import ALL_OPERATOR_SCOPES
from homarus.security.token_store import load_or_create_token
from homarus.security.tool_policy import ToolPolicy
from homarus.sessions.keys import SessionKey
from homarus.sessions.manager import SessionManager
from homarus.sessions.store import Maintenance
from homarus.tools.base import ToolRegistry
from homarus.tools.cron_tool import cron_tool
from homarus.tools.exec import make_exec_tools
from homarus.tools.files import file_tools
from homarus.tools.memory_tools import memory_tools
from homarus.tools.session_tools import session_tools
from homarus.tools.subagents import subagent_tools
from homarus.tools.web import WebSettings, guarded_client_for, make_web_tools

if TYPE_CHECKING:
    from homarus.gateway.connection import WSConnection
    from homarus.gateway.router import MethodCall

SessionRunStarter = Callable[["MethodCall", SessionKey, str], Awaitable[dict[str, Any]]]

__all__ = ["Gateway", "GatewayOptions"]

log = logging.getLogger("homarus.gateway")
SANDBOX_PRUNE_INTERVAL_S = 300.0

GATEWAY_EVENTS = (
    "connect.challenge",
    "tick",
    "presence",
    "health",
    "shutdown",
    "config.changed",
    "agent",
    "chat",
    "sessions.changed",
    "plugin.approval.requested",
    "plugin.approval.resolved",
    "exec.approval.requested",
    "cron",
    "heartbeat",
    "exec.approval.resolved",
)


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


class Gateway:
    """Owns every long-lived service; methods and HTTP routes reach them through it."""

    def __init__(self, paths: StatePaths, store: ConfigStore, options: GatewayOptions | None = None) -> None:
        self.paths = paths
        self.config_store = store
        self.options = options or GatewayOptions()
        self.started_at = time.time()
        self.boot_id = str(uuid.uuid4())
        self.bus = EventBus()
        self.methods = MethodRegistry()
        self.connections: dict[str, WSConnection] = {}
        self.presence = Presence()
        self.shutting_down = False
        self.token_created = False
        self._preauth: dict[str, int] = {}
        self._secret = self._resolve_secret()
        limit = self.config.gateway.auth.rate_limit
        self.auth_limiter = FailureLimiter(limit.max_attempts, limit.window_ms / 1000, limit.lockout_ms / 1000)
        self.config_budget = SlidingWindowBudget(*self.options.config_write_budget)
        self.session_subscribers: set[str] = set()
        self.sessions = self._build_sessions()
        self.lanes = LaneQueue(
            {
                "main": self.config.agents.defaults.max_concurrent,
                "subagent": self.config.agents.defaults.subagents.max_concurrent,
                "cron": 1,
                "nested": 1,
            }
        )
        self.dedupe = DedupeCache()
        self.journal = RunJournal(paths.state_dir / "runs.sqlite")
        #: set by the agent runtime: starts a run for sessions.create {message}
        self.session_run_starter: SessionRunStarter | None = None
        self.interrupted_runs: list[RunRecord] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[Any]] = set()
        self.tools = ToolRegistry()
        web_settings = WebSettings.from_config(self.config.tools)
        self.web_client = guarded_client_for(web_settings)
        exec_policy, self.exec_backend = build_exec(self.config, paths.state_dir)
        self.cron: CronService | None = None
        self.sandboxes = build_sandboxes(
            self.config, paths.state_dir, lambda agent_id: self.runtime.workspace_dir(agent_id, self.config)
        )

        for tool in (
            *session_tools(),
            *file_tools(),
            *make_web_tools(web_settings, self.web_client),
            *make_exec_tools(exec_policy, self.exec_backend),
            cron_tool(),
            *memory_tools(),
        ):
            self.tools.register(tool)
        for tool in subagent_tools(max_spawn_depth=lambda: self.tool_policy().inputs.max_spawn_depth):
            self.tools.register(tool)
        self.models = self._build_models()
        self.run_events = RunEvents(self)
        self.hooks = HookRunner(trace=trace_hooks_enabled())
        self.runtime = AgentRuntime(
            config=lambda: self.config,
            sessions=self.sessions,
            models=self.models,
            tools=self.tools,
            lanes=self.lanes,
            state_dir=paths.state_dir,
            on_event=self.run_events,
            services={"sessions": self.sessions},  # "runtime" is added below, once it exists
            hooks=self.hooks,
            spawn=self.spawn,
            approve=self.approve_tool_call,
            injections=InjectionQueue(paths.state_dir / "injections"),
        )
        self.runtime.services["runtime"] = self.runtime
        self.heartbeats = Heartbeats(self)
        self.memory = MemoryHub(self)
        self.runtime.memory_for = self.memory.for_agent
        self.runtime.on_session_run = lambda key: self.memory.session_started(key.agent_id, key.canonical)
        self.audit_log, self.raw_stream_log = self._build_logs()
        self.runtime.sandbox_for = lambda key: sandbox_view(self.sandboxes, key, self.config.session.main_key)
        self.runtime.services["hooks"] = self.hooks
        self.hookmd = HookMdRunner.discover(paths.state_dir)
        self._policy: ToolPolicy | None = None
        self.runtime.tool_filter = lambda key, provider, model: self.tool_names_for(key, provider=provider, model=model)
        self.runtime.bootstrap_hook = self._bootstrap_hooks
        self._health_cache: tuple[float, dict[str, Any]] | None = None
        self._drained = asyncio.Event()
        from homarus.gateway.methods import register_core_methods  # composition, not a cycle dodge

        register_core_methods(self)
        self.plugin_approvals = approvals.install(self)
        self.exec_approvals = exec_approvals.install(self)
        self.runtime.services["exec_approvals"] = exec_approvals.approver_for(self, self.exec_approvals)
        # plugins last: they see every core name, and core always wins a clash
        self.plugins = load_plugins(
            self.config,
            state_dir=paths.state_dir,
            workspace=default_workspace(self.config, paths.state_dir),
            runner=self.hooks,
            tools=self.tools,
            reserved_methods=frozenset(self.methods.names()),
            reserved_commands=CORE_COMMANDS,
        )
        install_plugins(self, self.plugins)
        for diag in self.plugins.diagnostics:
            (log.error if diag.level == "error" else log.warning)("plugin %s: %s", diag.plugin_id, diag.message)

    def _build_sessions(self) -> SessionManager:
        cfg = self.config
        m = cfg.session.maintenance
        return SessionManager(
            self.paths.state_dir,
            agent_ids=cfg.agents.ids,
            default_agent=cfg.agents.default_id,
            main_key=cfg.session.main_key,
            maintenance=Maintenance(m.mode, m.prune_after_ms, m.max_entries),
            workspace=cfg.agents.defaults.workspace,
        )

    async def _bootstrap_hooks(self, event: dict[str, Any]) -> None:
        if self.hookmd.handlers_for("agent", "bootstrap"):
            await self.hookmd.trigger("agent", "bootstrap", event)

    def _build_logs(self) -> tuple[AuditLog, AuditLog]:
        cfg = self.config.logging
        logs_dir = self.paths.state_dir / "logs"
        audit = AuditLog(logs_dir, max_file_bytes=cfg.audit.max_file_mb * 1024 * 1024)
        raw = AuditLog(logs_dir, max_file_bytes=cfg.audit.max_file_mb * 1024 * 1024, prefix="raw-stream")
        self.runtime.audit = audit if cfg.audit.enabled else None
        self.runtime.raw_stream = raw if cfg.raw_stream else None
        return audit, raw

    async def wake(
        self, text: str | None, *, mode: WakeMode = "now", agent_id: str | None = None, source: str = "wake"
    ) -> None:
        """Queue ``text`` as a system event on the main session; ``now`` runs a heartbeat at once."""
        await self.heartbeats.wake(text, mode=mode, agent_id=agent_id, source=source)

    async def approve_tool_call(self, payload: dict[str, Any], timeout_ms: int, abort: asyncio.Event) -> str | None:
        """Ask the operators (clients with operator.approvals) to approve a plugin-gated tool call."""
        return await self.plugin_approvals.ask(
            payload,
            timeout_ms=timeout_ms,
            abort=abort,
            remember_key=plugin_remember_key(payload.get("pluginId"), payload.get("toolName")),
            route_available=approvals.has_approval_clients(self),
        )

    def tool_policy(self) -> ToolPolicy:
        """The compiled tool policy of the current config (rebuilt when the config changes)."""
        if self._policy is None:
            self._policy = ToolPolicy(policy_inputs(self.config), self.tools.names())
        return self._policy

    def tool_names_for(
        self, key: SessionKey, *, http: bool = False, provider: str | None = None, model: str | None = None
    ) -> set[str]:
        """The tools a session may use (over HTTP, after the HTTP deny list too)."""
        return set(
            self.tool_policy().allowed(
                self.tools.names(),
                agent_id=key.agent_id,
                provider=provider,
                model=model,
                subagent_depth=key.subagent_depth,
                http=http,
            )
        )

    def _build_models(self) -> ModelRegistry:
        return ModelRegistry(
            self.config.models,
            env_keys=provider_env_keys(),
            factories=default_factories(),
            base_dir=self.paths.config_path.parent,
        )

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``coro`` in the background; the gateway keeps a reference and reaps it."""
        task = asyncio.create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    # -- config and secrets ---------------------------------------------------------------
    @property
    def config(self) -> HomarusConfig:
        return self.config_store.current.config

    @property
    def host(self) -> str:
        from homarus.config.schema import resolve_bind_host

        return self.options.host or resolve_bind_host(self.config.gateway.bind)

    @property
    def shared_secret(self) -> str | None:
        """The token or password clients must present (never logged)."""
        return self._secret

    @property
    def auth_mode(self) -> str:
        return self.config.gateway.auth.mode

    def _resolve_secret(self) -> str | None:
        auth = self.config.gateway.auth
        if auth.mode == "none":
            return None
        if auth.mode == "password":
            return auth.password.get_secret_value() if auth.password else None
        if self.options.token:
            return self.options.token
        if auth.token is not None:
            return auth.token.get_secret_value()
        token, self.token_created = load_or_create_token(self.paths.token_path)
        return token

    def check_bind_policy(self) -> None:
        """Refuse to expose an unauthenticated gateway beyond this machine."""
        from homarus.errors import ConfigError

        if self.auth_mode == "none" and not is_loopback_host(self.host):
            raise ConfigError(
                f"refusing to bind {self.host} with gateway.auth.mode 'none'; use a token or bind loopback",
                key="gateway.bind",
            )

    def on_config_replaced(self) -> None:
        """Apply a config written through config.set/patch: new secret closes old sessions."""
        previous = self._secret
        self._secret = self._resolve_secret()
        self._health_cache = None
        self.models = self.runtime.models = self._build_models()
        self._policy = None
        if previous != self._secret:
            for conn in list(self.connections.values()):
                conn.close(CloseCode.AUTH_CHANGED, "gateway auth changed")

    # -- connection admission ---------------------------------------------------------------
    def upgrade_refusal(self, scope: dict[str, Any], ip: str) -> tuple[int, str, dict[str, str]] | None:
        """Why a WebSocket upgrade must be refused (HTTP status, text, headers), or None."""
        if self.shutting_down:
            return 503, "Gateway is shutting down", {}
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if any(k.lower() in ("token", "password", "auth") for k in query):
            return 400, "Credentials must be sent in the connect request, not in the URL.", {}
        if self._preauth.get(ip, 0) >= self.options.max_preauth_per_ip:
            return 503, "Too many unauthenticated sockets", {}
        limit = self.config.gateway.auth.rate_limit
        if not (limit.exempt_loopback and is_loopback_host(ip)) and (wait := self.auth_limiter.retry_after(ip)):
            # a locked-out address is refused before it costs a socket and a handshake
            return (
                429,
                "Too many failed authentication attempts. Please try again later.",
                {"retry-after": str(max(1, math.ceil(wait)))},
            )
        return None

    def preauth_enter(self, ip: str) -> None:
        self._preauth[ip] = self._preauth.get(ip, 0) + 1

    def preauth_leave(self, ip: str) -> None:
        n = self._preauth.get(ip, 0) - 1
        if n > 0:
            self._preauth[ip] = n
        else:
            self._preauth.pop(ip, None)

    def authenticate(self, req: ConnectRequest, ip: str, nonce: str = "") -> frozenset[str] | ErrorShape:
        """Check the shared secret; returns the granted scopes or the error to send."""
        limit = self.config.gateway.auth.rate_limit
        limited = not (limit.exempt_loopback and is_loopback_host(ip))
        if limited and (wait := self.auth_limiter.retry_after(ip)) is not None:
            return ErrorShape(
                code="INVALID_REQUEST",
                message="unauthorized: too many failed authentication attempts (retry later)",
                details={
                    "code": "AUTH_RATE_LIMITED",
                    "authReason": "rate_limited",
                    "recommendedNextStep": "wait_then_retry",
                    "retryAfterMs": int(wait * 1000),
                },
                retryable=True,
                retry_after_ms=int(wait * 1000),
            )
        auth = req.params.auth
        device = req.params.device
        if device is not None:
            c = req.params.client
            failure = verify_device(
                DeviceProof(device.id, device.public_key, device.signature, device.signed_at, device.nonce),
                challenge_nonce=nonce,
                now_ms=int(time.time() * 1000),
                client_id=c.id,
                client_mode=c.mode,
                role=req.role,
                scopes=list(req.params.scopes or []),
                token=(auth.token or auth.device_token or auth.bootstrap_token or "") if auth else "",
                platform=c.platform,
                device_family=c.device_family,
            )
            if failure is not None:
                return ErrorShape(
                    code="INVALID_REQUEST",
                    message=failure.message,
                    details={"code": failure.code, "reason": failure.reason},
                )
        decision = check_shared_secret(
            self.auth_mode,  # type: ignore[arg-type]
            self._secret,
            auth.token if auth else None,
            auth.password if auth else None,
        )
        if not decision.ok:
            if limited and decision.code is not None and decision.code.endswith("MISMATCH"):
                # only a wrong secret is a guess; a missing one burns no slot
                self.auth_limiter.record_failure(ip)
            log.warning("auth failed from %s: %s", ip, decision.code)
            return ErrorShape(
                code="INVALID_REQUEST", message=decision.message or "unauthorized", details=decision.details()
            )
        self.auth_limiter.reset(ip)
        if req.role != "operator":
            return frozenset()
        requested = req.params.scopes or []
        return frozenset(s for s in requested if s in ALL_OPERATOR_SCOPES)

    def hello(self, info: ClientInfo) -> dict[str, Any]:
        snapshot: dict[str, Any] = {
            "presence": self.presence_list(),
            "health": self.health_summary(),
            "stateVersion": self.state_version(),
            "uptimeMs": self.uptime_ms(),
            "sessionDefaults": {
                "defaultAgentId": self.config.agents.default_id,
                "mainKey": self.config.session.main_key,
                "mainSessionKey": f"agent:{self.config.agents.default_id}:{self.config.session.main_key}",
                "scope": self.config.session.scope,
            },
        }
        from homarus.security.scopes import ADMIN

        if ADMIN in info.scopes:
            snapshot.update(
                configPath=str(self.paths.config_path), stateDir=str(self.paths.state_dir), authMode=self.auth_mode
            )
        hello: dict[str, Any] = {
            "type": "hello-ok",
            "protocol": info.protocol,
            "server": {"version": __version__, "connId": info.conn_id, "bootId": self.boot_id},
            "features": {"methods": self.methods.advertised(), "events": list(GATEWAY_EVENTS)},
            "snapshot": snapshot,
            "policy": {
                "maxPayload": MAX_PAYLOAD_BYTES,
                "maxBufferedBytes": self.options.max_buffered_bytes,
                "tickIntervalMs": int(self.options.tick_interval_s * 1000),
            },
        }
        if info.protocol >= 4:
            hello["auth"] = {"method": self.auth_mode, "role": info.role, "scopes": sorted(info.scopes)}
        return hello

    # -- connected clients --------------------------------------------------------------
    def attach(self, conn: WSConnection) -> None:
        assert conn.info is not None
        self.connections[conn.conn_id] = conn
        self.bus.add(conn)
        if self.presence.add(conn.conn_id, conn.info):
            self._presence_changed()

    def detach(self, conn: WSConnection) -> None:
        self.connections.pop(conn.conn_id, None)
        self.bus.remove(conn.conn_id)
        self.session_subscribers.discard(conn.conn_id)
        if self.presence.remove(conn.conn_id):
            self._presence_changed()
        if not self.connections:
            self._drained.set()

    def _presence_changed(self) -> None:
        self.bus.broadcast(
            "presence", {"presence": self.presence_list()}, droppable=True, state_version=self.state_version()
        )

    def presence_list(self) -> list[dict[str, Any]]:
        return self.presence.list()

    def state_version(self) -> dict[str, int]:
        return self.presence.state_version()

    def uptime_ms(self) -> int:
        return int((time.time() - self.started_at) * 1000)

    # -- health -----------------------------------------------------------------------
    def health_summary(self, *, probe: bool = False) -> dict[str, Any]:
        now = time.monotonic()
        cached = self._health_cache
        if not probe and cached is not None and now - cached[0] < self.options.health_cache_s:
            return cached[1]
        from homarus.gateway.methods.health import build_health

        summary = build_health(self)
        self._health_cache = (now, summary)
        return summary

    # -- lifecycle ----------------------------------------------------------------------
    async def startup(self) -> None:
        self.interrupted_runs = await asyncio.to_thread(recover_runs, self.journal, self.sessions, self.dedupe)
        self._tasks.append(asyncio.create_task(self._tick_loop()))
        self.heartbeats.start()
        self.cron = await start_cron(self)
        self.memory.index_at_startup()
        await resume_hook_runs(self, self.interrupted_runs)
        await self.plugins.start_services()
        await self.hookmd.trigger(
            "gateway",
            "startup",
            {
                "type": "gateway",
                "action": "startup",
                "messages": [],
                "context": {"stateDir": str(self.paths.state_dir)},
            },
        )

    def on_listening(self, port: int) -> None:
        """The socket is bound: record the port and tell the plugins (``gateway_start``)."""
        self.options.port = port
        if self.hooks.has("gateway_start"):
            _ = self.spawn(self.hooks.void("gateway_start", GatewayStartEvent(port)))

    async def _tick_loop(self) -> None:
        last_prune = time.monotonic()
        while True:
            await asyncio.sleep(self.options.tick_interval_s)
            self.bus.broadcast("tick", {"ts": int(time.time() * 1000)})
            if time.monotonic() - last_prune >= SANDBOX_PRUNE_INTERVAL_S:
                last_prune = time.monotonic()
                if pruned := await self.sandboxes.prune():
                    log.info("closed %d idle sandbox(es)", pruned)

    async def shutdown(self, reason: str = "gateway stopping", restart_expected_ms: int | None = None) -> None:
        """Tell every client we are going, then close their sockets with 1012."""
        if self.shutting_down:
            return
        self.shutting_down = True
        if self.hooks.has("gateway_stop"):
            with contextlib.suppress(TimeoutError):  # the hook's own 5 s timeout bounds each handler
                await asyncio.wait_for(self.hooks.void("gateway_stop", GatewayStopEvent(reason)), 6.0)
        if self.cron is not None:
            await stop_cron(self.cron)
        self.lanes.drain()
        await self.heartbeats.stop()
        self.plugin_approvals.cancel_all("shutdown")
        self.exec_approvals.cancel_all("shutdown")
        await self.plugins.stop_services()
        for run in self.runtime.runs.all():
            self.runtime.abort(run.session_key, origin="shutdown")
        if self._background:
            await asyncio.wait(list(self._background), timeout=2.0)
        for task in self._tasks:
            task.cancel()
        self.bus.broadcast("shutdown", {"reason": reason, "restartExpectedMs": restart_expected_ms})
        for conn in list(self.connections.values()):
            conn.close(CloseCode.SERVICE_RESTART, "service restart")
        if self.connections:
            self._drained.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._drained.wait(), timeout=2.0)
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.journal.close()
        await self.web_client.aclose()
        await self.exec_backend.aclose()
        await self.sandboxes.aclose()
        await self.memory.aclose()
        self.audit_log.close()
        self.raw_stream_log.close()
