"""The ``channels.discord`` object, in the original's shape: a bot's ``token``, the REST and Gateway
roots, and ``guilds.<guildId>`` with its ``users``, ``roles``, ``requireMention`` and
``channels.<channelId>`` (``allow``, ``requireMention``, ``users``, ``roles``, ``agentId``).

The shared access rules read ``groups``: an account's ``guilds`` become its ``groups`` (a guild is
the parent entry of its channels, and a guild that lists channels allows only those), so the
decision itself is the channel layer's, not this module's.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import ConfigDict, Field, SecretStr, field_validator

from homarus.config.base import ConfigModel
from homarus.config.channels import ChannelAccountConfig, ChannelConfig, GroupConfig, TopicConfig, sender_ids
from homarus.patterns import Pattern

__all__ = ["DiscordAccountConfig", "DiscordChannelRule", "DiscordConfig", "DiscordGuildConfig", "guild_groups"]

_ID = r"^(\d{1,25}|\*)$"


def _known_ids(kind: str, keys: Any) -> None:
    bad = [k for k in keys if not re.match(_ID, k)]
    if bad:
        raise ValueError(f"{kind} keys are {kind} ids or '*': {', '.join(map(repr, bad))}")


class DiscordChannelRule(ConfigModel):
    """``guilds.<id>.channels.<channelId>``: unset fields inherit the guild's."""

    #: false: the bot never answers here
    allow: bool | None = None
    require_mention: bool | None = None
    users: tuple[str, ...] | None = Field(None, max_length=1000)
    roles: tuple[str, ...] | None = Field(None, max_length=1000)
    #: the agent that answers in this channel
    agent_id: Annotated[str, Pattern(r"^[a-z0-9][a-z0-9_-]{0,63}$")] | None = None

    @field_validator("users", "roles", mode="before")
    @classmethod
    def _norm(cls, v: Any) -> Any:
        return sender_ids(v)


class DiscordGuildConfig(ConfigModel):
    """``guilds.<guildId>`` (or ``"*"``): who may talk in the guild, and where."""

    enabled: bool | None = None
    require_mention: bool | None = None
    #: user ids allowed to talk (with ``roles``: either admits)
    users: tuple[str, ...] | None = Field(None, max_length=1000)
    roles: tuple[str, ...] | None = Field(None, max_length=1000)
    #: the channels the bot answers in (by id, or ``"*"``); unset or empty: all of the guild's
    channels: dict[str, DiscordChannelRule] = Field(default_factory=dict, max_length=1000)

    @field_validator("users", "roles", mode="before")
    @classmethod
    def _norm(cls, v: Any) -> Any:
        return sender_ids(v)

    @field_validator("channels")
    @classmethod
    def _channel_ids(cls, v: dict[str, DiscordChannelRule]) -> dict[str, DiscordChannelRule]:
        _known_ids("channel", v)
        return v


class DiscordAccountConfig(ChannelAccountConfig):
    """A Discord bot: its token and the platform's roots, beside the access settings."""

    #: the bot token (Developer Portal → Bot); ``$DISCORD_BOT_TOKEN`` for the default account
    token: SecretStr | None = None
    #: a file holding the token (a regular file, not a symlink)
    token_file: str | None = Field(None, max_length=4096)
    #: the REST API root, with its version (a local stand-in, tests)
    api_root: Annotated[str, Field(max_length=512), Pattern(r"^https?://[^\s?#]+$")] | None = None
    #: the application's id, for its slash commands (default: the bot's user id, which it is for
    #: every application made since 2020)
    application_id: Annotated[str, Pattern(r"^\d{1,25}$")] | None = None
    #: the Gateway URL (default: what ``GET /gateway/bot`` answers)
    gateway_url: Annotated[str, Field(max_length=512), Pattern(r"^wss?://[^\s?#]+$")] | None = None
    #: the guilds the bot answers in (their channels, users and roles); DMs follow ``dmPolicy``
    guilds: dict[str, DiscordGuildConfig] | None = Field(None, max_length=200)
    #: answer other bots' messages too (default: never, so two bots cannot loop)
    allow_bots: bool | None = None

    @field_validator("guilds")
    @classmethod
    def _guild_ids(cls, v: dict[str, DiscordGuildConfig] | None) -> dict[str, DiscordGuildConfig] | None:
        _known_ids("guild", v or {})
        return v


class DiscordConfig(DiscordAccountConfig, ChannelConfig):
    model_config = ConfigDict(extra="forbid")

    accounts: dict[str, DiscordAccountConfig] = Field(default_factory=dict, max_length=100)  # type: ignore[assignment]

    def account(self, account_id: str) -> dict[str, Any]:
        settings = super().account(account_id)
        guilds = settings.get("guilds")
        if guilds is not None:
            settings["groups"] = guild_groups(guilds)
        return settings


def guild_groups(guilds: dict[str, DiscordGuildConfig]) -> dict[str, GroupConfig]:
    """``guilds`` as the channel layer's ``groups``: a guild is its channels' parent entry."""
    out: dict[str, GroupConfig] = {}
    for guild_id, guild in guilds.items():
        topics = {
            channel_id: TopicConfig(
                enabled=rule.allow,
                require_mention=rule.require_mention,
                allow_from=rule.users,
                roles=rule.roles,
                agent_id=rule.agent_id,
            )
            for channel_id, rule in guild.channels.items()
        }
        out[guild_id] = GroupConfig(
            enabled=guild.enabled,
            require_mention=guild.require_mention,
            allow_from=guild.users,
            roles=guild.roles,
            topics=topics,
        )
    return out
