"""``PluginApi``: the one object a plugin's ``register(api)`` receives (the stable author contract).

Every ``register_*`` call and :meth:`PluginApi.on` is checked at once; a refused registration
does not raise: it records a diagnostic on the plugin (``homarus plugins doctor`` shows it) and
returns ``False``. Registration is open only while ``register(api)`` runs; calls made later (from
a handler, a task) are ignored with a warning. :meth:`PluginApi.enqueue_next_turn_injection` is
the exception: it is meant to be called at run time.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import re
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, cast

from homarus.config.plugins import PluginEntryConfig
from homarus.messages import ModelInfo
from homarus.plugins.manifest import PluginManifest
from homarus.plugins.registry import (
    MethodHandler,
    NextTurnInjection,
    Placement,
    PluginChannel,
    PluginCommand,
    PluginMethod,
    PluginProvider,
    PluginRecord,
    PluginRegistry,
    PluginRoute,
    PluginService,
    RouteAuth,
    RouteMatch,
    ToolSink,
    normalize_route_path,
    routes_overlap,
)
from homarus.plugins.runner import HookRegistration, HookRunner

__all__ = ["PluginApi", "ToolSink"]

#: mirrors ``homarus.security.scopes.RESERVED_ADMIN_PREFIXES`` (a sibling layer; a test keeps them equal)
RESERVED_ADMIN_PREFIXES = ("config.", "exec.approvals.", "wizard.", "update.")
ADMIN_SCOPE = "operator.admin"
_METHOD_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,127}$")
_SCOPE = re.compile(r"^operator\.[a-z][a-z.]{0,63}$")
_COMMAND_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
_PROVIDER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_CHANNEL_ID = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
_SERVICE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
_ROUTE_PATH = re.compile(r"^/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$")


def _is_async_callable(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004


def _is_callable(obj: object) -> bool:
    """``callable`` that mypy does not use to narrow (plugins pass values their types do not promise)."""
    return callable(obj)


def _is_tool(obj: Any) -> bool:
    return (
        isinstance(getattr(obj, "name", None), str)
        and isinstance(getattr(obj, "parameters", None), dict)
        and callable(getattr(obj, "execute", None))
    )


class PluginApi:
    """What a plugin may do while it registers.

    Attributes: ``id``, ``name``, ``version``, ``description``, ``origin`` (bundled, entrypoint,
    config, global, workspace, path), ``source``, ``root_dir`` (the plugin directory, or the
    package directory of an entry-point plugin), ``state_dir`` (Homarus' state directory, e.g.
    for default file locations), ``plugin_config`` (``plugins.entries.<id>.config``, already
    validated against the manifest's ``configSchema``) and ``logger`` (``homarus.plugin.<id>``).
    """

    def __init__(
        self,
        *,
        record: PluginRecord,
        manifest: PluginManifest,
        registry: PluginRegistry,
        runner: HookRunner,
        tools: ToolSink,
        entry: PluginEntryConfig,
        state_dir: Path,
        reserved_methods: frozenset[str] = frozenset(),
        reserved_commands: frozenset[str] = frozenset(),
        reserved_providers: frozenset[str] = frozenset(),
    ) -> None:
        self.id = record.id
        self.name = manifest.display_name
        self.version = manifest.version
        self.description = manifest.description
        self.origin = record.origin
        self.source = record.source
        self.root_dir = record.root_dir
        self.state_dir = state_dir
        self.plugin_config: dict[str, Any] = dict(entry.config)
        self.logger = logging.getLogger(f"homarus.plugin.{record.id}")
        self._record = record
        self._manifest = manifest
        self._registry = registry
        self._runner = runner
        self._tools = tools
        self._hooks = entry.hooks
        self._reserved_methods = reserved_methods
        self._reserved_commands = reserved_commands
        self._reserved_providers = reserved_providers
        self._open = True
        self._injection_unavailable_reported = False

    # -- helpers ---------------------------------------------------------------------------------
    def close(self) -> None:
        """End the registration window (called by the loader once ``register`` returned)."""
        self._open = False

    def _diag(self, level: str, message: str) -> bool:
        self._registry.diagnose("error" if level == "error" else "warn", message, plugin_id=self.id, source=self.source)
        return False

    def _check_open(self, what: str) -> bool:
        if self._open:
            return True
        return self._diag("warn", f"{what} called after register() returned; ignored")

    # -- hooks -------------------------------------------------------------------------------------
    def on(
        self,
        hook: str,
        handler: Callable[..., Any],
        *,
        priority: int = 0,
        timeout_ms: int | None = None,
        matcher: str | Iterable[str] | None = None,
    ) -> bool:
        """Register ``handler(event, ctx)`` for the typed hook ``hook`` (see ``hookspecs.HOOKS``).

        Higher ``priority`` runs first. ``matcher`` (tool names) is only for tool hooks. The
        timeout is ``plugins.entries.<id>.hooks.timeouts.<hook>``, else ``hooks.timeoutMs``,
        else ``timeout_ms``, else the hook's default. Refused, with a warning: unknown hooks,
        conversation hooks for non-bundled plugins without ``allowConversationAccess: true``,
        prompt hooks when ``allowPromptInjection`` is false, async handlers on sync hooks.
        """
        if not self._check_open(f"on({hook!r})"):
            return False
        from homarus.plugins.hookspecs import CONVERSATION_HOOKS, HOOKS, PROMPT_INJECTION_HOOKS

        spec = HOOKS.get(hook)
        if spec is None:
            return self._diag("warn", f"unknown typed hook {hook!r} ignored")
        if not _is_callable(handler):
            return self._diag("error", f"handler for hook {hook!r} is not callable")
        matched: frozenset[str] | None = None
        if matcher is not None:
            if not spec.tool_matcher:
                self._diag("warn", f"matcher on non-tool hook {hook!r} ignored")
            else:
                matched = frozenset([matcher] if isinstance(matcher, str) else matcher)
                if not matched or not all(isinstance(m, str) and m for m in matched):
                    return self._diag("error", f"matcher for hook {hook!r} must be tool names")
        if isinstance(priority, bool) or not isinstance(priority, int):
            return self._diag("error", f"priority for hook {hook!r} must be an integer, not {priority!r}")
        if hook in CONVERSATION_HOOKS and not self._conversation_allowed():
            key = f"plugins.entries.{self.id}.hooks.allowConversationAccess"
            return self._diag("warn", f"typed hook {hook!r} blocked because non-bundled plugins must set {key}=true")
        if hook in PROMPT_INJECTION_HOOKS and not self._hooks.allow_prompt_injection:
            key = f"plugins.entries.{self.id}.hooks.allowPromptInjection"
            return self._diag("warn", f"typed hook {hook!r} blocked by {key}=false")
        if spec.kind == "sync" and _is_async_callable(handler):
            return self._diag("warn", f"typed hook {hook!r} runs synchronously; an async handler is refused")
        if timeout_ms is not None and (
            isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms < 1
        ):
            self._diag("warn", f"timeout_ms for hook {hook!r} must be a positive integer; ignored")
            timeout_ms = None
        timeout = self._hooks.timeouts.get(hook) or self._hooks.timeout_ms or timeout_ms
        self._runner.add(HookRegistration(self.id, hook, handler, priority, timeout, matched, self.plugin_config))
        self._record.registrations.hooks.append(hook)
        return True

    def _conversation_allowed(self) -> bool:
        flag = self._hooks.allow_conversation_access
        return flag is not False if self.origin == "bundled" else flag is True

    # -- tools ---------------------------------------------------------------------------------------
    def register_tool(self, tool: Any, *, name: str | None = None) -> bool:
        """Offer a tool to the agent: a Tool object, or ``async def fn(ctx, *, arg: T, ...) -> str | ToolResult``.

        A plain async function becomes a tool via ``tool_from_function`` (its signature is the
        schema, its docstring the description); ``name`` renames it. The name must be listed in
        the manifest's ``contracts.tools`` and not be taken by core or another plugin.
        """
        if not self._check_open("register_tool"):
            return False
        try:
            if _is_tool(tool):
                if name is not None and name != tool.name:
                    if not dataclasses.is_dataclass(tool) or isinstance(tool, type):
                        return self._diag("error", "register_tool(name=...) cannot rename this tool object")
                    tool = dataclasses.replace(tool, name=name)
            elif inspect.iscoroutinefunction(tool):
                tool = self._tools.from_function(tool, name=name)
            else:
                return self._diag("error", "register_tool needs a Tool or an async function")
        except Exception as exc:
            return self._diag("error", f"tool registration failed: {exc}")
        tool_name: str = tool.name
        if tool_name not in self._manifest.contracts.tools:
            return self._diag("error", f"plugin must declare contracts.tools for: {tool_name}")
        owner = self._registry.tool_owners.get(tool_name)
        if owner is not None:
            return self._diag("error", f"tool {tool_name!r} is already registered by plugin {owner!r}")
        try:
            self._tools.register(tool)
        except Exception as exc:
            return self._diag("error", f"tool {tool_name!r} refused: {exc}")
        self._registry.tool_owners[tool_name] = self.id
        self._record.registrations.tools.append(tool_name)
        return True

    # -- gateway -------------------------------------------------------------------------------------
    def register_gateway_method(self, name: str, handler: MethodHandler, *, scope: str = ADMIN_SCOPE) -> bool:
        """Add a WebSocket RPC method ``name`` served by ``async def handler(params: dict, ctx) -> Any``.

        ``scope`` is the operator scope a caller needs (``operator.read``, ``operator.write``,
        ``operator.admin``, ...); names under ``config.``, ``exec.approvals.``, ``wizard.``,
        ``update.`` are always admin-only. A name taken by core or another plugin is refused.
        """
        if not self._check_open("register_gateway_method"):
            return False
        if not isinstance(name, str) or not _METHOD_NAME.match(name):
            return self._diag("error", f"invalid gateway method name {name!r}")
        if name in self._reserved_methods:
            return self._diag("error", f"gateway method {name!r} already registered (core)")
        prior = self._registry.methods.get(name)
        if prior is not None:
            return self._diag("error", f"gateway method {name!r} already registered by plugin {prior.plugin_id!r}")
        if not _is_async_callable(handler):
            return self._diag("error", f"gateway method {name!r}: handler must be an async function")
        if not isinstance(scope, str) or not _SCOPE.match(scope):
            return self._diag("error", f"gateway method {name!r}: invalid scope {scope!r}")
        if name.startswith(RESERVED_ADMIN_PREFIXES) and scope != ADMIN_SCOPE:
            self._diag("warn", f"gateway method {name!r} is in a reserved namespace; scope coerced to {ADMIN_SCOPE}")
            scope = ADMIN_SCOPE
        self._registry.methods[name] = PluginMethod(name, handler, scope, self.id)
        self._record.registrations.methods.append(name)
        return True

    def register_http_route(self, path: str, handler: Callable[..., Any], *, auth: str, match: str = "exact") -> bool:
        """Serve HTTP requests for ``path`` (``match="exact"``) or everything under it (``"prefix"``).

        ``auth`` is mandatory: ``"gateway"`` (the gateway checks its token first) or ``"plugin"``
        (the handler authenticates, e.g. a signed webhook). The handler's signature is the
        gateway's (an ASGI-style callable). Registering the same path and match again from this
        plugin replaces the route; from another plugin, or overlapping a route with a different
        ``auth``, it is refused.
        """
        if not self._check_open("register_http_route"):
            return False
        if auth not in ("gateway", "plugin"):
            return self._diag("error", f"http route {path!r}: auth must be 'gateway' or 'plugin', not {auth!r}")
        if match not in ("exact", "prefix"):
            return self._diag("error", f"http route {path!r}: match must be 'exact' or 'prefix', not {match!r}")
        if not isinstance(path, str) or not _ROUTE_PATH.match(path) or "/../" in f"{path}/" or "/./" in f"{path}/":
            return self._diag("error", f"invalid http route path {path!r}")
        if not _is_callable(handler):
            return self._diag("error", f"http route {path!r}: handler is not callable")
        path = normalize_route_path(path)
        replaced = None
        for route in self._registry.routes:
            if route.path == path and route.match == match:
                if route.plugin_id != self.id:
                    return self._diag(
                        "error", f"http route {path!r} ({match}) already registered by {route.plugin_id!r}"
                    )
                if route.auth == auth:
                    replaced = route
                    continue
            if routes_overlap(route, path, match) and route.auth != auth:
                return self._diag(
                    "error",
                    f"http route {path!r} ({match}, auth={auth}) overlaps {route.path!r} ({route.match}, "
                    f"auth={route.auth}) of {route.plugin_id!r}",
                )
        if replaced is not None:
            self._registry.routes.remove(replaced)
        route = PluginRoute(path, handler, cast(RouteAuth, auth), cast(RouteMatch, match), self.id)
        self._registry.routes.append(route)
        if replaced is None:
            self._record.registrations.routes.append(f"{match} {path}")
        return True

    def register_command(self, name: str, handler: Callable[..., Any], *, description: str = "") -> bool:
        """Add the chat slash command ``/name`` (``^[a-z][a-z0-9_-]{0,31}$``); duplicates are refused."""
        if not self._check_open("register_command"):
            return False
        if not isinstance(name, str) or not _COMMAND_NAME.match(name):
            return self._diag("error", f"command registration failed: invalid name {name!r}")
        if name in self._reserved_commands:
            return self._diag("error", f"command registration failed: /{name} is a core command")
        prior = self._registry.commands.get(name)
        if prior is not None:
            return self._diag(
                "error", f"command registration failed: /{name} already registered by {prior.plugin_id!r}"
            )
        if not _is_callable(handler):
            return self._diag("error", f"command registration failed: handler of /{name} is not callable")
        self._registry.commands[name] = PluginCommand(name, str(description), handler, self.id)
        self._record.registrations.commands.append(name)
        return True

    # -- providers and services -----------------------------------------------------------------------
    def register_provider(
        self, provider_id: str, provider: Any, *, models: Iterable[ModelInfo | str] | None = None
    ) -> bool:
        """Add a model provider: an object with ``api: str`` and ``stream(model, context, options)``
        (the ``homarus.providers.base.Provider`` contract). ``models`` lists its models as
        ``ModelInfo`` or bare model ids; model refs are then ``<provider_id>/<model>``."""
        if not self._check_open("register_provider"):
            return False
        if not isinstance(provider_id, str) or not _PROVIDER_ID.match(provider_id):
            return self._diag("error", f"invalid provider id {provider_id!r}")
        prior = self._registry.providers.get(provider_id)
        if provider_id in self._reserved_providers or prior is not None:
            owner = f"plugin {prior.plugin_id!r}" if prior else "core or the config"
            return self._diag("error", f"provider {provider_id!r} already registered by {owner}")
        api = getattr(provider, "api", None)
        if not isinstance(api, str) or not callable(getattr(provider, "stream", None)):
            return self._diag("error", f"provider {provider_id!r} must have an 'api' string and a stream() method")
        infos: list[ModelInfo] = []
        for model in models or ():
            if isinstance(model, str) and model:
                infos.append(ModelInfo(provider_id, model, api))
            elif isinstance(model, ModelInfo) and model.provider == provider_id:
                infos.append(model)
            else:
                return self._diag("error", f"provider {provider_id!r}: invalid model entry {model!r}")
        self._registry.providers[provider_id] = PluginProvider(provider_id, provider, tuple(infos), self.id)
        self._record.registrations.providers.append(provider_id)
        return True

    def register_channel(self, spec: Any) -> bool:
        """Add a chat channel: a ``homarus.channels.adapter.ChannelSpec`` (``id``, ``label``,
        ``capabilities``, ``factory(ctx)`` building one running account; optionally its
        ``config_model``, ``setup``, ``status_fields`` and ``aliases``). The id must be in the
        manifest's ``contracts.channels``; one plugin owns a channel id."""
        if not self._check_open("register_channel"):
            return False
        channel_id = getattr(spec, "id", None)
        if not isinstance(channel_id, str) or not _CHANNEL_ID.match(channel_id):
            return self._diag("error", f"channel registration failed: invalid id {channel_id!r}")
        if channel_id not in self._manifest.contracts.channels:
            return self._diag("error", f"plugin must declare contracts.channels for: {channel_id}")
        if not callable(getattr(spec, "factory", None)) or getattr(spec, "capabilities", None) is None:
            return self._diag("error", f"channel {channel_id!r} needs capabilities and a factory(ctx)")
        prior = self._registry.channels.get(channel_id)
        if prior is not None:
            return self._diag("error", f"channel {channel_id!r} already registered by {prior.plugin_id!r}")
        model = getattr(spec, "config_model", None)
        if isinstance(model, str):  # named: imported when channels.<id> is first read
            from homarus.config import channel_registry

            if not channel_registry.REF.fullmatch(model):
                return self._diag("error", f"channel {channel_id!r}: config_model {model!r} is not 'module:Class'")
            channel_registry.register(channel_id, model)
        elif model is not None:
            from homarus.config.channels import ChannelConfig, register_channel_schema

            if not (isinstance(model, type) and issubclass(model, ChannelConfig)):
                return self._diag("error", f"channel {channel_id!r}: config_model must subclass ChannelConfig")
            register_channel_schema(channel_id, model)  # channels.<id> is checked with it from now on
        self._registry.channels[channel_id] = PluginChannel(channel_id, spec, self.id)
        self._record.registrations.channels.append(channel_id)
        return True

    def register_service(
        self, id: str, start: Callable[[], Awaitable[Any]], stop: Callable[[], Awaitable[Any]]
    ) -> bool:
        """Run ``await start()`` when the gateway starts and ``await stop()`` when it stops."""
        if not self._check_open("register_service"):
            return False
        if not isinstance(id, str) or not _SERVICE_ID.match(id):
            return self._diag("error", f"invalid service id {id!r}")
        prior = self._registry.services.get(id)
        if prior is not None:
            return self._diag("error", f"service {id!r} already registered by {prior.plugin_id!r}")
        if not (_is_async_callable(start) and _is_async_callable(stop)):
            return self._diag("error", f"service {id!r}: start and stop must be async functions")
        self._registry.services[id] = PluginService(id, start, stop, self.id)
        self._record.registrations.services.append(id)
        return True

    # -- run time ---------------------------------------------------------------------------------------
    async def enqueue_next_turn_injection(
        self,
        session_key: str,
        text: str,
        *,
        idempotency_key: str | None = None,
        placement: str = "prepend_context",
        ttl_ms: int | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Any:
        """Queue ``text`` for the session's next agent turn (``agent_turn_prepare.queued_injections``).

        Awaitable; meant for run time (handlers, services). Returns the queue's answer
        ``{"enqueued": bool, "id": ..., "sessionKey": ...[, "reason": ...]}``, or
        ``{"enqueued": False, "reason": ...}`` with reason ``invalid_input``, ``policy_blocked``
        (``allowPromptInjection`` is false) or ``unavailable`` (no injection queue is wired into
        this process). A synchronous injector runs in a worker thread (it may do file I/O).
        """
        if not isinstance(session_key, str) or not session_key or not isinstance(text, str) or not text.strip():
            return {"enqueued": False, "reason": "invalid_input"}
        if placement not in ("prepend_context", "append_context"):
            return {"enqueued": False, "reason": "invalid_input"}
        if not self._hooks.allow_prompt_injection:
            key = f"plugins.entries.{self.id}.hooks.allowPromptInjection"
            self._diag("warn", f"enqueue_next_turn_injection blocked by {key}=false")
            return {"enqueued": False, "reason": "policy_blocked"}
        injector = self._registry.next_turn_injector
        if injector is None:
            if not self._injection_unavailable_reported:
                self._injection_unavailable_reported = True
                self._diag("warn", "enqueue_next_turn_injection is not available (no injection queue is wired)")
            return {"enqueued": False, "reason": "unavailable"}
        request = NextTurnInjection(
            self.id, self.name, session_key, text, idempotency_key, cast(Placement, placement), ttl_ms, metadata
        )
        if _is_async_callable(injector):
            return await injector(request)
        return await asyncio.to_thread(injector, request)
