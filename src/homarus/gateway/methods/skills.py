"""`skills.status`, `skills.detail` (read) and `skills.install`, `skills.update` (admin); `skills.changed`.

The views are built by :mod:`homarus.skills` exactly as a run builds them, so status shows what
the model gets. ``skills.install`` takes a directory or archive path on the gateway host and runs
the install pipeline (staging, static scan, ``before_install`` gate); a refusal is an answer with
``ok: false`` and the findings, not an error. ``skills.update`` changes ``skills.entries.<name>``
in the config file (enabled, env, config).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from homarus.config.skills import SKILL_NAME_PATTERN
from homarus.errors import ConfigError, InvalidRequest, NotFound
from homarus.gateway.router import MethodCall, Params
from homarus.gateway.services.skills import plugin_skill_dirs
from homarus.patterns import Pattern
from homarus.protocol.compat import Unsupported, compat_params
from homarus.security.scopes import READ
from homarus.skills.catalog import SkillsView, load_view
from homarus.skills.install import install_skill
from homarus.skills.report import detail_json, status_json

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext

__all__ = ["EVENT_CHANGED"]

EVENT_CHANGED = "skills.changed"
_AGENT_ID = r"^[a-z0-9][a-z0-9_-]{0,63}$"


@compat_params(inert={"sessionKey": "skills are per agent (agentId); every session of an agent sees the same"})
class StatusParams(Params):
    agent_id: Annotated[str, Pattern(_AGENT_ID)] | None = Field(default=None, alias="agentId")


@compat_params(
    unsupported={"slug": Unsupported("skills come from the workspace and the config, not a registry: use name")}
)
class DetailParams(Params):
    agent_id: Annotated[str, Pattern(_AGENT_ID)] | None = Field(default=None, alias="agentId")
    name: Annotated[str, Pattern(SKILL_NAME_PATTERN)]


class InstallParams(Params):
    #: a directory, .zip or .tar.gz on the gateway host
    source: str = Field(min_length=1, max_length=4096)
    force: bool = False


class UpdateParams(Params):
    skill_key: Annotated[str, Pattern(SKILL_NAME_PATTERN)] = Field(alias="skillKey")
    enabled: bool | None = None
    env: dict[str, str] | None = None
    config: dict[str, Any] | None = None


def _view(gateway: GatewayContext, agent_id: str | None) -> tuple[SkillsView, str]:
    cfg = gateway.config
    agent = agent_id or cfg.agents.default_id
    if agent_id is not None and agent_id != cfg.agents.default_id and all(a.id != agent_id for a in cfg.agents.list):
        raise NotFound(f"unknown agent {agent_id!r}")
    ws = gateway.workspace_dir(agent)
    view = load_view(
        cfg, workspace=ws, state_dir=gateway.paths.state_dir, agent_id=agent, plugin_dirs=plugin_skill_dirs(gateway)
    )
    return view, agent


async def skills_status(call: MethodCall, p: StatusParams) -> dict[str, Any]:
    view, agent = await asyncio.to_thread(_view, call.gateway, p.agent_id)
    return status_json(view, call.gateway.config, agent_id=agent)


async def skills_detail(call: MethodCall, p: DetailParams) -> dict[str, Any]:
    view, _ = await asyncio.to_thread(_view, call.gateway, p.agent_id)
    out = await asyncio.to_thread(detail_json, view, p.name)
    if out is None:
        raise NotFound(f"no skill named {p.name!r}")
    return out


async def skills_install(call: MethodCall, p: InstallParams) -> dict[str, Any]:
    gw = call.gateway
    source = Path(p.source)
    if not p.source.startswith("/"):
        raise InvalidRequest("source must be an absolute path on the gateway host")
    result = await install_skill(source, gw.paths.state_dir, hooks=gw.hooks, force=p.force)
    if result.ok and not result.unchanged:
        gw.bus.broadcast(
            EVENT_CHANGED,
            {"reason": "install", "name": result.name, "contentHash": result.content_hash},
            guard=READ,
        )
    return result.to_json()


async def skills_update(call: MethodCall, p: UpdateParams) -> dict[str, Any]:
    gw = call.gateway
    entry: dict[str, Any] = {}
    if p.enabled is not None:
        entry["enabled"] = p.enabled
    if p.env is not None:
        entry["env"] = p.env
    if p.config is not None:
        entry["config"] = p.config
    if not entry:
        raise InvalidRequest("skills.update: nothing to change (enabled, env or config)")
    try:
        result = await asyncio.to_thread(gw.config_store.patch, {"skills": {"entries": {p.skill_key: entry}}})
    except ConfigError as exc:
        raise InvalidRequest(f"invalid skill entry: {exc.message}") from None
    if not result.noop:
        gw.on_config_replaced()
        gw.bus.broadcast(EVENT_CHANGED, {"reason": "update", "name": p.skill_key}, guard=READ)
    current = gw.config.skills.entries.get(p.skill_key)
    return {
        "ok": True,
        "skillKey": p.skill_key,
        "enabled": current.enabled if current else True,
        "envKeys": sorted((current.env or {}) if current else {}),
        "noop": result.noop,
    }
