"""Tool policy at the gateway: the config keys mapped onto policy layers (the one place that does
it), and the compiled policy every surface asks (:class:`ToolAccess`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from homarus.errors import NotFound
from homarus.security.tool_policy import LayerSpec, PolicyInputs, ToolPolicy

if TYPE_CHECKING:
    from homarus.agents.request import RunRequest
    from homarus.config.schema import HomarusConfig
    from homarus.sessions.keys import SessionKey
    from homarus.tools.base import ToolRegistry
    from homarus.usecases.chat.service import ChannelService

__all__ = ["GrantHost", "ToolAccess", "ToolsHost", "policy_inputs", "stranger_grant"]


class ToolsHost(Protocol):
    """What the compiled tool policy reads: the config and the tools there are."""

    @property
    def config(self) -> HomarusConfig: ...

    tools: ToolRegistry


class GrantHost(Protocol):
    """What a non-owner's grant reads: the config and the channel accounts' settings."""

    @property
    def config(self) -> HomarusConfig: ...

    channels: ChannelService


def stranger_grant(gw: GrantHost, req: RunRequest) -> tuple[str, ...] | None:
    """``strangerTools`` of the channel account a non-owner's run came from (None: not granted)."""
    origin: dict[str, Any] = req.origin if isinstance(req.origin, dict) else {}
    raw = origin.get("target")
    target: dict[str, Any] = raw if isinstance(raw, dict) else {}
    channel = str(target.get("channel") or req.channel or "")
    if not gw.config.present("channels"):
        return None
    manager = gw.channels.manager  # the account settings the run's channel already resolves
    cfg = manager.channel_config(channel)
    if cfg is None:
        return None
    try:
        settings = manager.settings(channel, str(target.get("accountId") or cfg.primary_account))
    except NotFound:  # the account was removed since the message came in: nothing granted
        return None
    granted = settings.get("stranger_tools")
    return tuple(granted) if granted else None


def _layer(name: str, section: Any) -> LayerSpec | None:
    if section is None:
        return None
    profile = getattr(section, "profile", None)
    allow = getattr(section, "allow", None)
    deny = tuple(getattr(section, "deny", None) or ())
    also = tuple(getattr(section, "also_allow", None) or ())
    if profile is None and allow is None and not deny and not also:
        return None
    return LayerSpec(name, profile, tuple(allow) if allow is not None else None, deny, also)


def policy_inputs(cfg: HomarusConfig) -> PolicyInputs:
    tools = getattr(cfg, "tools", None)
    layers = [x for x in (_layer("tools", tools),) if x is not None]
    by_provider = {}
    for key, section in (getattr(tools, "by_provider", None) or {}).items():
        layer = _layer(f"tools.byProvider.{key}", section)
        if layer is not None:
            by_provider[key] = layer
    agent_layers: dict[str, tuple[LayerSpec, ...]] = {}
    agent_by_provider: dict[str, dict[str, LayerSpec]] = {}
    for entry in cfg.agents.list:
        layer = _layer(f"agents.{entry.id}.tools", entry.tools)
        if layer is not None:
            agent_layers[entry.id] = (layer,)
        for key, section in (entry.tools.by_provider if entry.tools else {}).items():
            provider_layer = _layer(f"agents.{entry.id}.tools.byProvider.{key}", section)
            if provider_layer is not None:
                agent_by_provider.setdefault(entry.id, {})[key] = provider_layer
    sub = getattr(getattr(tools, "subagents", None), "tools", None)
    return PolicyInputs(
        layers=tuple(layers),
        by_provider=by_provider,
        agent_layers=agent_layers,
        agent_by_provider=agent_by_provider,
        subagent_allow=tuple(sub.allow) if sub is not None and sub.allow is not None else None,
        subagent_deny=tuple(sub.deny) if sub is not None else (),
        max_spawn_depth=int(getattr(getattr(tools, "subagents", None), "max_spawn_depth", 1) or 1),
        http_allow=tuple(cfg.gateway.tools.allow),
        http_deny=tuple(cfg.gateway.tools.deny),
    )


class ToolAccess:
    """The compiled tool policy of the current config (rebuilt after a config change)."""

    def __init__(self, gateway: ToolsHost) -> None:
        self.gateway = gateway
        self._policy: ToolPolicy | None = None

    def policy(self) -> ToolPolicy:
        if self._policy is None:
            self._policy = ToolPolicy(policy_inputs(self.gateway.config), self.gateway.tools.names())
        return self._policy

    def invalidate(self) -> None:
        self._policy = None

    def names_for(
        self, key: SessionKey, *, http: bool = False, provider: str | None = None, model: str | None = None
    ) -> set[str]:
        """The tools a session may use (over HTTP, after the HTTP deny list too)."""
        return set(
            self.policy().allowed(
                self.gateway.tools.names(),
                agent_id=key.agent_id,
                provider=provider,
                model=model,
                subagent_depth=key.subagent_depth,
                http=http,
            )
        )
