"""What plugins registered: one record per plugin, diagnostics, and the surfaces core consumes.

Flow is one-way: a plugin's ``register(api)`` fills this registry, then core reads it. The
gateway mounts :attr:`PluginRegistry.routes` (see :meth:`PluginRegistry.route_for`), adds
:attr:`PluginRegistry.methods` to its method registry, hands :attr:`PluginRegistry.providers` to
the model registry, exposes :attr:`PluginRegistry.commands` as chat ``/name`` commands and runs
:meth:`PluginRegistry.start_services` / :meth:`PluginRegistry.stop_services` with its own
lifecycle. Hooks and tools are not stored here: they go straight into the shared
``HookRunner`` and tool registry, and are listed per plugin in :attr:`PluginRecord.registrations`.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from homarus.messages import ModelInfo
from homarus.plugins.manifest import PluginManifest

__all__ = [
    "Diagnostic",
    "Level",
    "NextTurnInjection",
    "Origin",
    "Placement",
    "PluginChannel",
    "PluginCommand",
    "PluginMethod",
    "PluginProvider",
    "PluginRecord",
    "PluginRegistry",
    "PluginRoute",
    "PluginService",
    "Registrations",
    "RouteAuth",
    "RouteMatch",
    "Status",
    "ToolSink",
    "normalize_route_path",
    "routes_overlap",
]

log = logging.getLogger("homarus.plugins")

Origin = Literal["bundled", "entrypoint", "config", "global", "workspace", "path"]
Status = Literal["loaded", "disabled", "error", "blocked"]
Level = Literal["warn", "error"]
RouteAuth = Literal["gateway", "plugin"]
RouteMatch = Literal["exact", "prefix"]
Placement = Literal["prepend_context", "append_context"]

#: ``async def handler(params: dict, ctx) -> Any``; ``ctx`` is what the gateway passes (its call object)
MethodHandler = Callable[[dict[str, Any], Any], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """A problem found while discovering or loading plugins (``warn`` does not stop a plugin)."""

    level: Level
    plugin_id: str | None
    source: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"level": self.level, "pluginId": self.plugin_id, "source": self.source, "message": self.message}

    def __str__(self) -> str:
        who = f"[{self.plugin_id}] " if self.plugin_id else ""
        return f"{self.level}: {who}{self.message}" + (f" ({self.source})" if self.source else "")


@dataclass(slots=True)
class Registrations:
    """Names of what one plugin registered, by surface."""

    hooks: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    methods: list[str] = field(default_factory=list)
    routes: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    providers: list[str] = field(default_factory=list)
    services: list[str] = field(default_factory=list)
    channels: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, list[str]]:
        return asdict(self)

    def count(self) -> int:
        return sum(len(v) for v in self.to_json().values())


@dataclass(slots=True)
class PluginRecord:
    id: str
    origin: Origin
    #: where it came from: a directory, ``<dist>:<entry point value>`` or a bundled module
    source: str
    name: str = ""
    version: str | None = None
    description: str | None = None
    status: Status = "disabled"
    #: why it is disabled (empty otherwise)
    reason: str = ""
    diagnostics: list[Diagnostic] = field(default_factory=list)
    registrations: Registrations = field(default_factory=Registrations)
    manifest: PluginManifest | None = None
    root_dir: Path | None = None

    def to_json(self, *, full: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "name": self.name or self.id,
            "version": self.version,
            "origin": self.origin,
            "status": self.status,
            "source": self.source,
            "diagnostics": len(self.diagnostics),
        }
        if self.reason:
            out["reason"] = self.reason
        if full:
            out["description"] = self.description
            out["rootDir"] = str(self.root_dir) if self.root_dir else None
            out["manifest"] = self.manifest.to_json() if self.manifest else None
            out["registrations"] = self.registrations.to_json()
            out["diagnostics"] = [d.to_json() for d in self.diagnostics]
        return out


@dataclass(frozen=True, slots=True)
class PluginMethod:
    name: str
    handler: MethodHandler
    scope: str
    plugin_id: str


@dataclass(frozen=True, slots=True)
class PluginRoute:
    """An HTTP route: ``auth="gateway"`` needs the gateway's credentials, ``"plugin"`` means the
    plugin authenticates requests itself (webhooks)."""

    path: str
    handler: Callable[..., Any]
    auth: RouteAuth
    match: RouteMatch
    plugin_id: str

    def matches(self, path: str) -> bool:
        if self.match == "exact":
            return path == self.path
        return _under(path, self.path)


@dataclass(frozen=True, slots=True)
class PluginCommand:
    """A chat command ``/name``; the handler signature is defined by the chat wiring."""

    name: str
    description: str
    handler: Callable[..., Any]
    plugin_id: str


@dataclass(frozen=True, slots=True)
class PluginProvider:
    """A model provider (an object with ``api`` and ``stream`` per ``homarus.providers.base``)."""

    provider_id: str
    provider: Any
    models: tuple[ModelInfo, ...]
    plugin_id: str


@dataclass(frozen=True, slots=True)
class PluginChannel:
    """A chat channel (a ``homarus.channels.adapter.ChannelSpec``; duck-typed here: the channel
    layer sits above the plugins layer)."""

    channel_id: str
    spec: Any
    plugin_id: str


@dataclass(frozen=True, slots=True)
class PluginService:
    """Background work started with the gateway and stopped (in reverse order) with it."""

    id: str
    start: Callable[[], Awaitable[Any]]
    stop: Callable[[], Awaitable[Any]]
    plugin_id: str


@dataclass(frozen=True, slots=True)
class NextTurnInjection:
    """A request to add text to a session's next agent turn (see ``PluginApi.enqueue_next_turn_injection``)."""

    plugin_id: str
    plugin_name: str
    session_key: str
    text: str
    idempotency_key: str | None = None
    placement: Placement = "prepend_context"
    ttl_ms: int | None = None
    metadata: dict[str, Any] | None = None


#: receives each accepted injection request and returns the answer dict; sync (run in a worker
#: thread) or async. Set by whoever owns the injection queue.
NextTurnInjector = Callable[[NextTurnInjection], Any]


class ToolSink(Protocol):
    """The tool registry as plugins see it (``homarus.tools.base.ToolRegistry`` satisfies it).

    Tools are duck-typed (``name``, ``description``, ``parameters``, ``execute``) because the
    plugins layer sits below the tools layer.
    """

    def register(self, tool: Any) -> Any: ...

    def unregister(self, name: str) -> Any: ...

    def get(self, name: str) -> Any: ...

    def from_function(self, fn: Callable[..., Awaitable[Any]], *, name: str | None = None) -> Any: ...


def _under(path: str, prefix: str) -> bool:
    return prefix == "/" or path == prefix or path.startswith(prefix + "/")


def routes_overlap(a: PluginRoute, path: str, match: str) -> bool:
    """Whether route ``a`` and a route (``path``, ``match``) can serve a common request path."""
    if a.match == "exact" and match == "exact":
        return a.path == path
    if a.match == "prefix" and match == "exact":
        return _under(path, a.path)
    if a.match == "exact":
        return _under(a.path, path)
    return _under(a.path, path) or _under(path, a.path)


def normalize_route_path(path: str) -> str:
    """``//a//b/`` → ``/a/b`` (the root stays ``/``)."""
    collapsed = re.sub(r"/{2,}", "/", path)
    return collapsed.rstrip("/") or "/"


class PluginRegistry:
    """Everything :func:`homarus.plugins.loader.load_plugins` found and what the plugins registered."""

    def __init__(self) -> None:
        #: by plugin id, in load order
        self.records: dict[str, PluginRecord] = {}
        #: every diagnostic, including those of no particular plugin
        self.diagnostics: list[Diagnostic] = []
        self.methods: dict[str, PluginMethod] = {}
        self.routes: list[PluginRoute] = []
        self.commands: dict[str, PluginCommand] = {}
        self.providers: dict[str, PluginProvider] = {}
        self.services: dict[str, PluginService] = {}
        self.channels: dict[str, PluginChannel] = {}
        #: tool name → plugin id (the tools themselves live in the shared tool registry)
        self.tool_owners: dict[str, str] = {}
        #: hook point for the next-turn injection queue: while None, injections are refused
        self.next_turn_injector: NextTurnInjector | None = None
        self._started: list[PluginService] = []

    # -- records and diagnostics --------------------------------------------------------------
    def add_record(self, record: PluginRecord) -> PluginRecord:
        self.records[record.id] = record
        return record

    def get(self, plugin_id: str) -> PluginRecord | None:
        return self.records.get(plugin_id)

    def loaded(self) -> list[PluginRecord]:
        return [r for r in self.records.values() if r.status == "loaded"]

    def diagnose(self, level: Level, message: str, *, plugin_id: str | None = None, source: str = "") -> Diagnostic:
        """Record a diagnostic (also on the plugin's record when it has one) and log it."""
        return self.add_diagnostic(Diagnostic(level, plugin_id, source, message))

    def add_diagnostic(self, diag: Diagnostic) -> Diagnostic:
        self.diagnostics.append(diag)
        record = self.records.get(diag.plugin_id) if diag.plugin_id else None
        if record is not None:
            record.diagnostics.append(diag)
        log.log(logging.ERROR if diag.level == "error" else logging.WARNING, "[plugins] %s", diag)
        return diag

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.level == "error"]

    # -- surfaces ------------------------------------------------------------------------------
    def route_for(self, path: str) -> PluginRoute | None:
        """The route serving ``path``: an exact route first, else the longest matching prefix."""
        exact = next((r for r in self.routes if r.match == "exact" and r.matches(path)), None)
        if exact is not None:
            return exact
        prefixes = [r for r in self.routes if r.match == "prefix" and r.matches(path)]
        return max(prefixes, key=lambda r: len(r.path), default=None)

    def drop_plugin(self, plugin_id: str) -> list[str]:
        """Forget every surface of ``plugin_id``; returns its tool names (to remove from the tool registry)."""
        self.methods = {k: v for k, v in self.methods.items() if v.plugin_id != plugin_id}
        self.routes = [r for r in self.routes if r.plugin_id != plugin_id]
        self.commands = {k: v for k, v in self.commands.items() if v.plugin_id != plugin_id}
        self.providers = {k: v for k, v in self.providers.items() if v.plugin_id != plugin_id}
        self.services = {k: v for k, v in self.services.items() if v.plugin_id != plugin_id}
        self.channels = {k: v for k, v in self.channels.items() if v.plugin_id != plugin_id}
        tools = [name for name, owner in self.tool_owners.items() if owner == plugin_id]
        for name in tools:
            del self.tool_owners[name]
        record = self.records.get(plugin_id)
        if record is not None:
            record.registrations = Registrations()
        return tools

    # -- services ------------------------------------------------------------------------------
    async def start_services(self, *, timeout: float = 30.0) -> None:
        """Start every service in registration order; a failure is an error diagnostic, not fatal."""
        for service in list(self.services.values()):
            if service in self._started:
                continue
            try:
                async with asyncio.timeout(timeout):
                    await service.start()
            except Exception as exc:
                self.diagnose("error", f"service {service.id!r} failed to start: {exc!r}", plugin_id=service.plugin_id)
                continue
            self._started.append(service)

    async def stop_services(self, *, timeout: float = 10.0) -> None:
        """Stop the started services in reverse order; failures are warnings."""
        while self._started:
            service = self._started.pop()
            try:
                async with asyncio.timeout(timeout):
                    await service.stop()
            except Exception as exc:
                self.diagnose("warn", f"service {service.id!r} failed to stop: {exc!r}", plugin_id=service.plugin_id)
