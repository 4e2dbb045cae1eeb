"""The ``channels.slack`` object, in the original's shape: ``mode`` (``socket``, the default, or
``http``), the bot token, the app-level token (Socket Mode), the signing secret and
``webhookPath`` (HTTP Events API), and ``channels.<channelId>`` with ``enabled``,
``requireMention`` and ``users``.

The shared access rules read ``groups``: an account's ``channels`` become its ``groups`` (a Slack
channel is the group the layer allows or not), so the decision itself is the channel layer's.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, SecretStr, field_validator, model_validator

from homarus.channels.slack.signing import DEFAULT_WEBHOOK_PATH
from homarus.config.base import ConfigModel
from homarus.config.channels import (
    ChannelAccountConfig,
    ChannelConfig,
    GroupConfig,
    check_webhook_paths,
    sender_ids,
)
from homarus.patterns import Pattern

__all__ = ["SlackAccountConfig", "SlackChannelRule", "SlackConfig", "channel_groups"]

#: Slack ids: channels C…/G…/D…, users U…/W…, teams T…
_CHANNEL_ID = r"^([CGD][A-Z0-9]{2,24}|\*)$"


class SlackChannelRule(ConfigModel):
    """``channels.<channelId>`` (or ``"*"``): unset fields inherit the account's."""

    #: false: the bot never answers here
    enabled: bool | None = None
    require_mention: bool | None = None
    #: the users allowed to talk here (ids)
    users: tuple[str, ...] | None = Field(None, max_length=1000)

    @field_validator("users", mode="before")
    @classmethod
    def _norm(cls, v: Any) -> Any:
        return sender_ids(v)


class SlackAccountConfig(ChannelAccountConfig):
    """A Slack app: its tokens and transport, beside the access settings."""

    #: ``socket`` (Socket Mode: no public URL) or ``http`` (Slack POSTs events to ``webhookPath``)
    mode: Literal["socket", "http"] | None = None
    #: the bot token (``xoxb-``, OAuth & Permissions); ``$SLACK_BOT_TOKEN`` for the default account
    bot_token: SecretStr | None = None
    #: a file holding the bot token (a regular file, not a symlink)
    token_file: str | None = Field(None, max_length=4096)
    #: the app-level token (``xapp-``, scope ``connections:write``) for Socket Mode;
    #: ``$SLACK_APP_TOKEN`` for the default account
    app_token: SecretStr | None = None
    #: the signing secret (Basic Information) that signs HTTP events; ``$SLACK_SIGNING_SECRET``
    signing_secret: SecretStr | None = None
    #: where Slack POSTs events and slash commands in ``http`` mode (the Request URL's path)
    webhook_path: Annotated[str, Pattern(r"^/[A-Za-z0-9._~/-]{1,128}$")] | None = None
    #: the Web API root (a local stand-in, tests)
    api_root: Annotated[str, Field(max_length=512), Pattern(r"^https?://[^\s?#]+$")] | None = None
    #: the channels the bot answers in (by id, or ``"*"``); DMs follow ``dmPolicy``
    channels: dict[str, SlackChannelRule] | None = Field(None, max_length=1000)
    #: answer other bots' messages too (default: never, so two bots cannot loop)
    allow_bots: bool | None = None

    @field_validator("channels")
    @classmethod
    def _channel_ids(cls, v: dict[str, SlackChannelRule] | None) -> dict[str, SlackChannelRule] | None:
        bad = [k for k in v or {} if not re.match(_CHANNEL_ID, k)]
        if bad:
            raise ValueError(f"channel keys are Slack channel ids (C…, G…) or '*': {', '.join(map(repr, bad))}")
        return v


class SlackConfig(SlackAccountConfig, ChannelConfig):
    model_config = ConfigDict(extra="forbid")

    accounts: dict[str, SlackAccountConfig] = Field(default_factory=dict, max_length=100)  # type: ignore[assignment]

    @model_validator(mode="after")
    def _webhook_paths_differ(self) -> SlackConfig:
        check_webhook_paths(self, mode="http", default_mode="socket", default_path=DEFAULT_WEBHOOK_PATH)
        return self

    def account(self, account_id: str) -> dict[str, Any]:
        settings = super().account(account_id)
        channels = settings.get("channels")
        if channels is not None:
            settings["groups"] = channel_groups(channels)
        return settings


def channel_groups(channels: dict[str, SlackChannelRule]) -> dict[str, GroupConfig]:
    """``channels`` as the channel layer's ``groups``."""
    return {
        channel_id: GroupConfig(enabled=rule.enabled, require_mention=rule.require_mention, allow_from=rule.users)
        for channel_id, rule in channels.items()
    }
