"""`tools.catalog` (every tool, by group, with the profiles that include it) and `tools.effective`
(what one session may use, and why each missing tool is missing)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from homarus.errors import InvalidRequest
from homarus.gateway.router import MethodCall, Params
from homarus.gateway.services.tooling import prepare_tools
from homarus.security.tool_policy import GROUPS, PROFILES

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext

__all__: list[str] = []

_PROFILE_LABELS = {"minimal": "Minimal", "coding": "Coding", "messaging": "Messaging", "full": "Full"}


class CatalogParams(Params):
    agent_id: str | None = Field(default=None, alias="agentId", max_length=64)
    include_plugins: bool = Field(default=True, alias="includePlugins")


class EffectiveParams(Params):
    session_key: str = Field(alias="sessionKey", min_length=1, max_length=512)
    agent_id: str | None = Field(default=None, alias="agentId", max_length=64)


def _profiles_with(name: str) -> list[str]:
    out = []
    for profile, entries in PROFILES.items():
        expanded = {t for e in (entries or ()) for t in GROUPS.get(e, (e,))}
        if entries is None or name in expanded:
            out.append(profile)
    return out


def _row(gw: GatewayContext, name: str) -> dict[str, Any]:
    tool = gw.tools.get(name)
    owner = gw.plugins.tool_owners.get(name)
    source = "plugin" if owner and owner != "builtin-tools" else "core"
    row: dict[str, Any] = {
        "id": name,
        "label": tool.label if tool else name,
        "description": tool.description if tool else "",
        "source": source,
    }
    if source == "plugin":
        row["pluginId"] = owner
    return row


async def tools_catalog(call: MethodCall, p: CatalogParams) -> dict[str, Any]:
    gw = call.gateway
    agent = p.agent_id or gw.config.agents.default_id
    if agent not in gw.sessions.agent_ids:
        raise InvalidRequest(f'unknown agent id "{agent}"')
    hidden = await prepare_tools(gw, agent)  # configured MCP servers' tools are listed, lazy ones too
    names = [n for n in gw.tools.names() if n not in hidden]
    grouped: set[str] = set()
    groups = []
    for gid, members in GROUPS.items():
        present = [m for m in members if m in names]
        if not present or gid == "group:openclaw":
            continue
        grouped.update(present)
        groups.append(
            {
                "id": gid,
                "label": gid.removeprefix("group:").title(),
                "source": "core",
                "tools": [{**_row(gw, m), "defaultProfiles": _profiles_with(m)} for m in present],
            }
        )
    rest = [n for n in names if n not in grouped]
    core_rest = [n for n in rest if _row(gw, n)["source"] == "core"]
    if core_rest:
        groups.append(
            {
                "id": "group:other",
                "label": "Other",
                "source": "core",
                "tools": [{**_row(gw, n), "defaultProfiles": _profiles_with(n)} for n in core_rest],
            }
        )
    if p.include_plugins:
        by_plugin: dict[str, list[str]] = {}
        for n in rest:
            if _row(gw, n)["source"] == "plugin":
                by_plugin.setdefault(str(gw.plugins.tool_owners.get(n)), []).append(n)
        for pid, tools in sorted(by_plugin.items()):
            groups.append(
                {
                    "id": pid,
                    "label": pid,
                    "source": "plugin",
                    "pluginId": pid,
                    "tools": [{**_row(gw, n), "defaultProfiles": []} for n in tools],
                }
            )
    return {"agentId": agent, "profiles": [{"id": k, "label": v} for k, v in _PROFILE_LABELS.items()], "groups": groups}


async def tools_effective(call: MethodCall, p: EffectiveParams) -> dict[str, Any]:
    gw = call.gateway
    key = gw.sessions.resolve_key(p.session_key, p.agent_id)
    hidden = await prepare_tools(gw, key.agent_id)
    verdicts = gw.tool_access.policy().verdicts(
        [n for n in gw.tools.names() if n not in hidden], agent_id=key.agent_id, subagent_depth=key.subagent_depth
    )
    allowed = [n for n, v in verdicts.items() if v.allowed]
    core = [_row(gw, n) for n in allowed if _row(gw, n)["source"] == "core"]
    plugin = [_row(gw, n) for n in allowed if _row(gw, n)["source"] == "plugin"]
    groups = [{"id": "core", "label": "Core", "source": "core", "tools": core}]
    if plugin:
        groups.append({"id": "plugin", "label": "Plugins", "source": "plugin", "tools": plugin})
    tools_cfg = getattr(gw.config, "tools", None)
    return {
        "agentId": key.agent_id,
        "sessionKey": key.canonical,
        "profile": getattr(tools_cfg, "profile", None) or "full",
        "groups": groups,
        "missing": [{"id": n, "reason": v.reason} for n, v in verdicts.items() if not v.allowed],
        "warnings": list(gw.tool_access.policy().warnings),
    }
