"""Which tools a run may use: groups, profiles, allow/deny globs, layered narrowing.

Each layer is a filter that can only narrow: profile (+ alsoAllow) → provider profile → global
allow/deny → provider allow/deny → agent → agent provider → subagent restrictions (and, for
``/tools/invoke``, the HTTP deny list on top). Deny always wins; an empty allow list allows all;
``*`` is the only wildcard. Policies are compiled once per config and the verdict per
(agent, model, session kind, depth) is cached, so a lookup costs a dict access.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

__all__ = [
    "DEFAULT_HTTP_DENY",
    "GROUPS",
    "PROFILES",
    "STRANGER_SANDBOX_TOOLS",
    "LayerSpec",
    "PolicyInputs",
    "ToolPolicy",
    "Verdict",
    "normalize_tool_name",
    "stranger_tools",
]

log = logging.getLogger("homarus.tools.policy")

GROUPS: Mapping[str, tuple[str, ...]] = {
    "group:runtime": ("exec", "process"),
    "group:fs": ("read", "write", "edit", "apply_patch", "ls", "find", "grep"),
    "group:sessions": ("sessions_list", "sessions_history", "sessions_send", "sessions_spawn", "session_status"),
    "group:memory": ("memory_search", "memory_get"),
    "group:web": ("web_search", "web_fetch"),
    "group:ui": ("browser", "canvas"),
    "group:automation": ("cron", "gateway"),
    "group:messaging": ("message",),
    "group:nodes": ("nodes",),
    "group:homarus": (
        "cron",
        "gateway",
        "sessions_list",
        "sessions_history",
        "sessions_send",
        "sessions_spawn",
        "session_status",
        "memory_search",
        "memory_get",
        "web_search",
        "web_fetch",
        "current_time",
    ),
}
GROUPS = {**GROUPS, "group:openclaw": GROUPS["group:homarus"]}

PROFILES: Mapping[str, tuple[str, ...] | None] = {
    "minimal": ("session_status",),
    "coding": ("group:fs", "group:runtime", "group:sessions", "group:memory", "image", "current_time"),
    "messaging": ("group:messaging", "sessions_list", "sessions_history", "sessions_send", "session_status"),
    "full": None,
}
ALIASES = {"bash": "exec", "apply-patch": "apply_patch"}

SUBAGENT_DENY_ALWAYS = (
    "gateway",
    "agents_list",
    "whatsapp_login",
    "session_status",
    "cron",
    "memory_search",
    "memory_get",
    "sessions_send",
)
SUBAGENT_DENY_LEAF = ("sessions_list", "sessions_history", "sessions_spawn")

#: never callable over plain HTTP (/tools/invoke), whatever the session policy says
DEFAULT_HTTP_DENY = (
    "browser",
    "exec",
    "process",
    "spawn",
    "shell",
    "bash",
    "fs_write",
    "fs_delete",
    "fs_move",
    "write",
    "edit",
    "apply_patch",
    "sessions_spawn",
    "sessions_send",
    "cron",
    "gateway",
    "nodes",
    "whatsapp_login",
    "terminal",
    "portal",
    "conversations_list",
    "conversations_send",
    "conversations_turn",
    "automations",
    "plugins",
    "computer",
    "mobile_ui",
    "openclaw",
    "homarus",
)


#: what a non-owner's run gets, unasked, when its session runs in a sandbox of its own (its own
#: workspace, nothing of the agent's mounted): those tools touch only that sandbox
STRANGER_SANDBOX_TOOLS: tuple[str, ...] = ("group:fs", "group:runtime")


def stranger_tools(names: Iterable[str], granted: Iterable[str] | None, *, sandboxed_alone: bool = False) -> set[str]:
    """The tools a run sent by someone other than an owner may use: an allowlist, never a deny list.

    Nothing unless named: ``granted`` (``channels.<id>.strangerTools``: names, groups, ``mcp:<server>``,
    globs), plus :data:`STRANGER_SANDBOX_TOOLS` when the session runs alone in a sandbox. A tool a
    plugin or an MCP server adds later is therefore never offered to a stranger by accident.
    """
    entries = [*(granted or ()), *(STRANGER_SANDBOX_TOOLS if sandboxed_alone else ())]
    if not entries:
        return set()
    matcher = _Matcher(tuple(_expand(entries)))
    return {n for n in names if matcher.matches(normalize_tool_name(n))}


def normalize_tool_name(name: str) -> str:
    key = name.strip().lower()
    return ALIASES.get(key, key)


@lru_cache(maxsize=4096)
def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile("^" + ".*".join(re.escape(p) for p in pattern.split("*")) + "$")


def _expand(entries: Iterable[str]) -> list[str]:
    out: list[str] = []
    for entry in entries:
        key = normalize_tool_name(entry)
        if key == "group:mcp":  # every MCP server's tools: only their names hold "__"
            out.append("*__*")
        elif key.startswith("mcp:"):
            out.append(f"{key[4:]}__*")
        else:
            out.extend(GROUPS.get(key, (key,)))
    return out


@dataclass(frozen=True, slots=True)
class _Matcher:
    patterns: tuple[str, ...]

    def matches(self, name: str) -> bool:
        return any(p in ("*", name) or ("*" in p and _glob(p).match(name)) for p in self.patterns)


@dataclass(frozen=True, slots=True)
class LayerSpec:
    """One layer of policy as written in config."""

    name: str
    profile: str | None = None
    allow: tuple[str, ...] | None = None
    deny: tuple[str, ...] = ()
    also_allow: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Verdict:
    allowed: bool
    #: the layer that removed the tool (e.g. "tools.deny", "profile minimal", "subagent")
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class PolicyInputs:
    """Everything that decides a session's tool set, as compiled from config."""

    layers: tuple[LayerSpec, ...] = ()
    #: provider or provider/model key → layer
    by_provider: Mapping[str, LayerSpec] = field(default_factory=dict)
    agent_layers: Mapping[str, tuple[LayerSpec, ...]] = field(default_factory=dict)
    #: agent id → (provider or provider/model key → layer)
    agent_by_provider: Mapping[str, Mapping[str, LayerSpec]] = field(default_factory=dict)
    subagent_allow: tuple[str, ...] | None = None
    subagent_deny: tuple[str, ...] = ()
    max_spawn_depth: int = 1
    http_allow: tuple[str, ...] = ()
    http_deny: tuple[str, ...] = ()


class ToolPolicy:
    def __init__(self, inputs: PolicyInputs, core_tools: Iterable[str]) -> None:
        self.inputs = inputs
        self.core = frozenset(normalize_tool_name(t) for t in core_tools)
        self.warnings: list[str] = []
        self._cache: dict[tuple[object, ...], dict[str, Verdict]] = {}
        http_deny = {normalize_tool_name(t) for t in (*DEFAULT_HTTP_DENY, *inputs.http_deny)}
        allowed_over_http = {normalize_tool_name(t) for t in inputs.http_allow}
        for name in sorted(allowed_over_http & http_deny):
            log.warning("gateway.tools.allow makes %r callable over HTTP /tools/invoke: dangerous", name)
        self.http_deny = frozenset(http_deny - allowed_over_http)

    def _layer_filters(self, layer: LayerSpec) -> list[tuple[_Matcher | None, _Matcher, str]]:
        """A layer as successive filters: its profile (+ alsoAllow) first, then its allow/deny."""
        filters: list[tuple[_Matcher | None, _Matcher, str]] = []
        if layer.profile is not None:
            profile = PROFILES.get(layer.profile)
            if layer.profile not in PROFILES:
                self.warnings.append(f"{layer.name}: unknown profile {layer.profile!r} ignored")
            elif profile is not None:
                allowed = [*_expand(profile), *_expand(layer.also_allow)]
                filters.append((_Matcher(tuple(allowed)), _Matcher(()), f"{layer.name} profile {layer.profile}"))
        allow: list[str] | None = None
        if layer.allow is not None:
            entries = _expand(layer.allow)
            if entries and not [e for e in entries if e in self.core or "*" in e]:
                # a list naming only plugin tools would silently switch every core tool off
                self.warnings.append(f"{layer.name}: allow lists only plugin tools; ignored (use alsoAllow)")
            else:
                allow = [*entries, *_expand(layer.also_allow)]
        filters.append(
            (_Matcher(tuple(allow)) if allow is not None else None, _Matcher(tuple(_expand(layer.deny))), layer.name)
        )
        return filters

    def verdicts(
        self,
        tools: Iterable[str],
        *,
        agent_id: str,
        provider: str | None = None,
        model: str | None = None,
        subagent_depth: int = 0,
        http: bool = False,
    ) -> dict[str, Verdict]:
        names = tuple(sorted({normalize_tool_name(t) for t in tools}))
        key = (names, agent_id, provider, model, subagent_depth, http)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        layers = list(self.inputs.layers)
        for pkey in (f"{provider}/{model}", provider):
            if pkey and pkey in self.inputs.by_provider:
                layers.insert(1, self.inputs.by_provider[pkey])
                break
        layers.extend(self.inputs.agent_layers.get(agent_id, ()))
        agent_providers = self.inputs.agent_by_provider.get(agent_id, {})
        for pkey in (f"{provider}/{model}", provider):
            if pkey and pkey in agent_providers:
                layers.append(agent_providers[pkey])
                break
        if subagent_depth > 0:
            deny = [*SUBAGENT_DENY_ALWAYS, *self.inputs.subagent_deny]
            if subagent_depth >= self.inputs.max_spawn_depth:
                deny.extend(SUBAGENT_DENY_LEAF)
            layers.append(LayerSpec("subagent", allow=self.inputs.subagent_allow, deny=tuple(deny)))
        compiled = [f for layer in layers for f in self._layer_filters(layer)]
        out: dict[str, Verdict] = {}
        for name in names:
            out[name] = self._verdict(name, compiled, http)
        if len(self._cache) > 512:
            self._cache.clear()
        self._cache[key] = out
        return out

    def _verdict(self, name: str, compiled: list[tuple[_Matcher | None, _Matcher, str]], http: bool) -> Verdict:
        for allow, deny, layer in compiled:
            if deny.matches(name):
                return Verdict(False, f"{layer} denies it")
            if allow is not None and not allow.matches(name):
                if name == "apply_patch" and allow.matches("exec"):
                    continue
                return Verdict(False, f"{layer} does not allow it")
        if http and name in self.http_deny:
            return Verdict(False, "not callable over HTTP (gateway.tools.deny / default HTTP deny list)")
        return Verdict(True)

    def allowed(
        self,
        tools: Iterable[str],
        *,
        agent_id: str,
        provider: str | None = None,
        model: str | None = None,
        subagent_depth: int = 0,
        http: bool = False,
    ) -> list[str]:
        verdicts = self.verdicts(
            tools, agent_id=agent_id, provider=provider, model=model, subagent_depth=subagent_depth, http=http
        )
        return [n for n, v in verdicts.items() if v.allowed]
