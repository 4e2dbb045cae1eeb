"""The ``channels``, ``bindings`` and ``commands`` sections: chat channels, which agent answers, owners.

Who may talk to the agent is config, validated here, because a mistake there is a security hole:

* ``dmPolicy`` is ``pairing`` unless set (an unknown sender gets a code and nothing else);
  ``allowlist`` needs at least one ``allowFrom`` entry; ``open`` needs an explicit ``"*"`` in
  ``allowFrom``; ``disabled`` drops every DM.
* groups are ``allowlist`` unless set: a group talks to the agent only when it is listed under
  ``groups`` (an id or ``"*"``), and then only senders in ``groupAllowFrom`` (else ``allowFrom``;
  never the pairing approvals); ``requireMention`` is true unless set.
* an account (``accounts.<id>``) inherits every field it does not set from the channel root.

A channel's own transport settings (a bot token, an API root) sit beside these in the same
object, typed by the channel's own model, a subclass of :class:`ChannelConfig` that its plugin
brings (``ChannelSpec.config_model``; an installed package also names it in the
``homarus.channel_configs`` entry point group, so that a config is checked before any plugin runs).
A channel nobody describes keeps its own keys as given.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Annotated, Any, Final, Literal

from pydantic import ConfigDict, Field, PrivateAttr, RootModel, field_validator, model_validator

from homarus.config import channel_registry
from homarus.config.base import ConfigModel
from homarus.entry_points import entry_points
from homarus.patterns import Pattern

__all__ = [
    "Binding",
    "BindingMatch",
    "BindingPeer",
    "Bindings",
    "ChannelAccountConfig",
    "ChannelConfig",
    "ChannelsConfig",
    "CommandsConfig",
    "DmPolicy",
    "GroupConfig",
    "GroupPolicy",
    "OtherAccountConfig",
    "TopicConfig",
    "channel_schema",
    "channel_schemas",
    "check_webhook_paths",
    "merged_account",
    "register_channel_schema",
    "sender_ids",
]

DmPolicy = Literal["pairing", "allowlist", "open", "disabled"]
GroupPolicy = Literal["open", "allowlist", "disabled"]
DmScope = Literal["main", "per-peer", "per-channel-peer", "per-account-channel-peer"]
#: the id an account has when a channel is configured without ``accounts``
DEFAULT_ACCOUNT: Final = "default"
_ACCOUNT_ID = r"^[a-z0-9][a-z0-9_-]{0,63}$"
_CHANNEL_ID = r"[a-z][a-z0-9_-]{0,31}"


def sender_ids(value: Any) -> Any:
    """``allowFrom`` entries (and role ids): strings or numbers (Telegram ids are numbers; Discord's
    past 2^53 lose precision as JSON numbers, so both forms are taken), kept as strings."""
    if isinstance(value, list | tuple):
        return tuple(str(v).strip() if isinstance(v, int | str) and not isinstance(v, bool) else v for v in value)
    return value


class TopicConfig(ConfigModel):
    """A forum topic (or thread) inside an allowed group; unset fields inherit the group's."""

    enabled: bool | None = None
    require_mention: bool | None = None
    group_policy: GroupPolicy | None = None
    allow_from: tuple[str, ...] | None = Field(None, max_length=1000)
    #: senders with one of these roles may talk too (Discord role ids)
    roles: tuple[str, ...] | None = Field(None, max_length=1000)
    #: the agent that answers in this topic (topic-only: never inherited)
    agent_id: Annotated[str, Pattern(r"^[a-z0-9][a-z0-9_-]{0,63}$")] | None = None

    @field_validator("allow_from", "roles", mode="before")
    @classmethod
    def _norm(cls, v: Any) -> Any:
        return sender_ids(v)


class GroupConfig(ConfigModel):
    """One allowed group (``groups.<chatId>``, or ``"*"`` for every group)."""

    enabled: bool | None = None
    require_mention: bool | None = None
    #: ``open``: any member may talk; ``allowlist``: only ``allowFrom`` here (else the channel's)
    group_policy: GroupPolicy | None = None
    allow_from: tuple[str, ...] | None = Field(None, max_length=1000)
    #: senders with one of these roles may talk too (Discord role ids)
    roles: tuple[str, ...] | None = Field(None, max_length=1000)
    #: the topics (threads) of this group; for a parent's entry (a guild), its chats (channels)
    topics: dict[str, TopicConfig] = Field(default_factory=dict, max_length=1000)

    @field_validator("allow_from", "roles", mode="before")
    @classmethod
    def _norm(cls, v: Any) -> Any:
        return sender_ids(v)


class ChannelAccountConfig(ConfigModel):
    """The access settings of one channel account; unset fields inherit the channel root."""

    enabled: bool | None = None
    name: str | None = Field(None, max_length=100)
    dm_policy: DmPolicy | None = None
    allow_from: tuple[str, ...] | None = Field(None, max_length=1000)
    group_policy: GroupPolicy | None = None
    #: senders allowed in groups (default: ``allowFrom``; never the DM pairing approvals)
    group_allow_from: tuple[str, ...] | None = Field(None, max_length=1000)
    #: allowed groups by chat id (``"*"``: any group); replaces the root map, never merged with it
    groups: dict[str, GroupConfig] | None = Field(None, max_length=1000)
    require_mention: bool | None = None
    #: inbound and outbound media cap
    media_max_mb: float | None = Field(None, gt=0, le=2000)
    #: the longest message sent in one piece (default: the channel's own limit)
    text_chunk_limit: int | None = Field(None, ge=100, le=100_000)
    #: the tools a run sent by someone other than an owner may use (names, ``group:*``,
    #: ``mcp:<server>``, globs); unset: none at all — they get answers only
    stranger_tools: tuple[str, ...] | None = Field(None, max_length=200)

    @field_validator("allow_from", "group_allow_from", mode="before")
    @classmethod
    def _norm(cls, v: Any) -> Any:
        return sender_ids(v)


def merged_account(root: ChannelAccountConfig, account: ChannelAccountConfig | None) -> dict[str, Any]:
    """The account's settings by field name: its own where set, else the root's (None: unset).
    A third-party channel's own keys (``model_extra``) are merged the same way."""
    out: dict[str, Any] = {}
    for name in type(root).model_fields:
        if name in ("accounts", "default_account"):
            continue
        own = getattr(account, name, None) if account is not None else None
        out[name] = own if own is not None else getattr(root, name)
    for source in (root.model_extra or {}, (account.model_extra or {}) if account is not None else {}):
        out.update({k: v for k, v in source.items() if v is not None})
    return out


def _check_access(where: str, settings: dict[str, Any]) -> None:
    policy = settings.get("dm_policy") or "pairing"
    allow = settings.get("allow_from") or ()
    if policy == "open" and "*" not in allow:
        raise ValueError(f'{where}: dmPolicy "open" needs "*" in allowFrom (an explicit choice to let anyone in)')
    if policy == "allowlist" and not [a for a in allow if a != "*"]:
        raise ValueError(f'{where}: dmPolicy "allowlist" needs at least one sender id in allowFrom')


def check_webhook_paths(
    config: ChannelConfig, *, mode: str, default_mode: str | Callable[[Mapping[str, Any]], str], default_path: str
) -> None:
    """Every account of ``config`` receiving webhooks (its ``mode`` field, else ``default_mode``
    or what it says of the account's settings, is ``mode``) needs a ``webhookPath`` of its own:
    two accounts on one path could not be told apart."""
    seen: dict[str, str] = {}
    for account_id in config.account_ids():
        settings = config.account(account_id)
        fallback = default_mode if isinstance(default_mode, str) else default_mode(settings)
        if (settings.get("mode") or fallback) != mode:
            continue
        path = str(settings.get("webhook_path") or default_path)
        if path in seen:
            raise ValueError(f"accounts {seen[path]!r} and {account_id!r} share the webhookPath {path}")
        seen[path] = account_id


class OtherAccountConfig(ChannelAccountConfig):
    """An account of a third-party channel: its own keys are kept for its plugin."""

    model_config = ConfigDict(extra="allow")


class ChannelConfig(ChannelAccountConfig):
    """A channel: access settings, its accounts, and (third-party) its own keys, kept as given."""

    model_config = ConfigDict(extra="allow")

    accounts: dict[str, OtherAccountConfig] = Field(default_factory=dict, max_length=100)
    default_account: Annotated[str, Pattern(_ACCOUNT_ID)] | None = None

    @field_validator("accounts")
    @classmethod
    def _account_ids(cls, v: dict[str, Any]) -> dict[str, Any]:
        bad = [k for k in v if not re.match(_ACCOUNT_ID, k)]
        if bad:
            raise ValueError(f"account ids must match {_ACCOUNT_ID}: {', '.join(map(repr, bad))}")
        return v

    @model_validator(mode="after")
    def _access_is_consistent(self) -> ChannelConfig:
        for account_id in self.account_ids():
            where = "channel" if not self.accounts else f"accounts.{account_id}"
            _check_access(where, self.account(account_id))
        if self.default_account is not None and self.accounts and self.default_account not in self.accounts:
            raise ValueError(f"defaultAccount {self.default_account!r} is not one of accounts")
        return self

    def account_ids(self) -> tuple[str, ...]:
        accounts: dict[str, Any] = getattr(self, "accounts", {})
        return tuple(accounts) or (DEFAULT_ACCOUNT,)

    def account(self, account_id: str) -> dict[str, Any]:
        """The account's effective settings (its own, else the channel root's)."""
        accounts: dict[str, ChannelAccountConfig] = getattr(self, "accounts", {})
        return merged_account(self, accounts.get(account_id))

    @property
    def primary_account(self) -> str:
        """Where an outbound path without an account goes: ``defaultAccount``, else ``default``,
        else the first account."""
        ids = self.account_ids()
        if self.default_account in ids:
            return self.default_account or ids[0]
        return DEFAULT_ACCOUNT if DEFAULT_ACCOUNT in ids else ids[0]


#: the entry point group a package names its channels' config models in (``<id> = "module:Class"``)
CHANNEL_CONFIG_GROUP: Final = "homarus.channel_configs"


def register_channel_schema(channel_id: str, model: type[ChannelConfig] | str) -> None:
    """Validate ``channels.<channel_id>`` with ``model`` from now on (a channel plugin's own fields;
    a ``"module:attr"`` name is imported when the section is first read)."""
    channel_registry.register(channel_id, model)


def channel_schema(channel_id: str) -> type[ChannelConfig]:
    """The config model of a channel: registered by its plugin, else named by an installed package's
    entry point (so a config is checked before any plugin runs), else the shared access fields."""
    schemas = channel_registry.registered()
    model = schemas.get(channel_id)
    if isinstance(model, str):
        model = schemas[channel_id] = _resolve(channel_id, model)
    if model is None:
        model = schemas[channel_id] = _declared_schemas().get(channel_id, ChannelConfig)
    return model


def channel_schemas() -> dict[str, type[ChannelConfig]]:
    """Every channel config model known now (declared by installed packages, registered by plugins)."""
    return {
        **_declared_schemas(),
        **{channel_id: channel_schema(channel_id) for channel_id in list(channel_registry.registered())},
    }


def _resolve(channel_id: str, ref: str) -> type[ChannelConfig]:
    """The class a plugin named; the shared access fields (and an error in the log) when the name
    does not lead to a ``ChannelConfig`` subclass, as for a broken entry point."""
    import importlib

    module_name, _, attr = ref.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception:
        logging.getLogger("homarus.config").exception("channel %s: config model %s failed to load", channel_id, ref)
        return ChannelConfig
    if isinstance(obj, type) and issubclass(obj, ChannelConfig):
        return obj
    logging.getLogger("homarus.config").error("channel %s: %s is not a ChannelConfig subclass", channel_id, ref)
    return ChannelConfig


@lru_cache(maxsize=1)
def _declared_schemas() -> dict[str, type[ChannelConfig]]:
    found: dict[str, type[ChannelConfig]] = {}
    for ep in entry_points(CHANNEL_CONFIG_GROUP):
        try:
            model = ep.load()
        except Exception:  # a broken package must not break every config load: its channel stays untyped
            log = logging.getLogger("homarus.config")
            log.exception("channel config model %s (%s) failed to load", ep.name, ep.value)
            continue
        if isinstance(model, type) and issubclass(model, ChannelConfig) and re.fullmatch(_CHANNEL_ID, ep.name):
            found.setdefault(ep.name, model)
    return found


class ChannelsConfig(ConfigModel):
    """``channels.<id>``: each channel's object, validated by its own model (:func:`channel_schema`)."""

    model_config = ConfigDict(extra="allow")

    #: the validated channels, by id (the raw objects stay in ``model_extra``, as written)
    _validated: dict[str, ChannelConfig] = PrivateAttr(default_factory=dict)

    def configured(self) -> dict[str, ChannelConfig]:
        """Every channel present in the config (enabled or not), by id."""
        out: dict[str, ChannelConfig] = {}
        for channel_id, raw in (self.model_extra or {}).items():
            cached, model = self._validated.get(channel_id), channel_schema(channel_id)
            if cached is None or type(cached) is not model:  # a plugin registered its model since
                cached = self._validated[channel_id] = _validate(model, raw)
            out[channel_id] = cached
        return out

    @model_validator(mode="after")
    def _extra_are_channels(self) -> ChannelsConfig:
        for channel_id, raw in (self.model_extra or {}).items():
            if not re.fullmatch(_CHANNEL_ID, channel_id):
                raise ValueError(f"channel id {channel_id!r} must match {_CHANNEL_ID}")
            if not isinstance(raw, dict | ChannelConfig):
                raise ValueError(f"channels.{channel_id} must be an object")
            self._validated[channel_id] = _validate(channel_schema(channel_id), raw)
        return self


def _validate(model: type[ChannelConfig], raw: Any) -> ChannelConfig:
    if isinstance(raw, model):
        return raw
    if isinstance(raw, ChannelConfig):
        raw = raw.model_dump(by_alias=True, exclude_unset=True)
    return model.model_validate(raw or {})


class BindingPeer(ConfigModel):
    kind: Literal["direct", "group", "channel"]
    #: the channel's canonical peer id, or ``"*"`` for any peer of this kind
    id: str = Field(min_length=1, max_length=256)


class BindingMatch(ConfigModel):
    channel: Annotated[str, Pattern(r"^[a-z][a-z0-9_-]{0,31}$")]
    #: one account; omitted: the channel's default account only; ``"*"``: every account
    account_id: str | None = Field(None, max_length=64)
    peer: BindingPeer | None = None
    guild_id: str | None = Field(None, max_length=64)
    team_id: str | None = Field(None, max_length=64)
    roles: tuple[str, ...] | None = Field(None, max_length=100)


class BindingSession(ConfigModel):
    dm_scope: DmScope | None = None


class Binding(ConfigModel):
    """Route a slice of inbound traffic to an agent (bindings choose; they never admit)."""

    agent_id: Annotated[str, Pattern(r"^[a-z0-9][a-z0-9_-]{0,63}$")]
    match: BindingMatch
    session: BindingSession | None = None
    comment: str | None = Field(None, max_length=500)


class Bindings(RootModel[tuple[Binding, ...]]):
    """The top-level ``bindings`` list, in config order (the first match of a tier wins)."""

    model_config = ConfigDict(frozen=True)

    root: tuple[Binding, ...] = Field(default=(), max_length=1000)

    def __iter__(self) -> Any:  # iterate the bindings, not the model's fields
        return iter(self.root)

    def __len__(self) -> int:
        return len(self.root)


class CommandsConfig(ConfigModel):
    #: who may run owner-only chat commands and approve from a chat: ``"<channel>:<senderId>"``
    owner_allow_from: tuple[str, ...] = Field((), max_length=100)

    @field_validator("owner_allow_from")
    @classmethod
    def _qualified(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        bad = [o for o in v if ":" not in o]
        if bad:
            raise ValueError(f"owners are '<channel>:<senderId>' (e.g. telegram:123456): {', '.join(bad)}")
        return v
