"""The ``channels.telegram`` object: the access settings every channel has, and a bot's own
transport (its token, the Bot API root, a webhook). Brought by the Telegram plugin
(``ChannelSpec.config_model``) and named in the ``homarus.channel_configs`` entry point group."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import ConfigDict, Field, SecretStr, field_validator, model_validator

from homarus.config.channels import ChannelAccountConfig, ChannelConfig
from homarus.patterns import Pattern

__all__ = ["TelegramAccountConfig", "TelegramConfig"]


class TelegramAccountConfig(ChannelAccountConfig):
    """A Telegram bot: its token and transport, beside the access settings."""

    #: from BotFather; ``$TELEGRAM_BOT_TOKEN`` for the default account when unset
    bot_token: SecretStr | None = None
    #: a file holding the token (a regular file, not a symlink)
    token_file: str | None = Field(None, max_length=4096)
    #: the Bot API root, without ``/bot<token>`` (a local Bot API server, tests)
    api_root: Annotated[str, Field(max_length=512), Pattern(r"^https?://[^\s/?#]+(/[^\s?#]*)?$")] | None = None
    #: set: Telegram POSTs updates to this public URL instead of being long-polled
    webhook_url: Annotated[str, Field(max_length=2048), Pattern(r"^https://[^\s]+$")] | None = None
    #: checked against ``X-Telegram-Bot-Api-Secret-Token`` (required with ``webhookUrl``)
    webhook_secret: SecretStr | None = None
    #: where the gateway serves the webhook
    webhook_path: Annotated[str, Pattern(r"^/[A-Za-z0-9._~/-]{1,128}$")] | None = None

    @field_validator("webhook_secret")
    @classmethod
    def _secret_shape(cls, v: SecretStr | None) -> SecretStr | None:
        if v is not None and not re.fullmatch(r"[A-Za-z0-9_-]{16,256}", v.get_secret_value()):
            raise ValueError("must be 16-256 characters of A-Z, a-z, 0-9, _ and - (Telegram's rule)")
        return v


class TelegramConfig(TelegramAccountConfig, ChannelConfig):
    model_config = ConfigDict(extra="forbid")

    accounts: dict[str, TelegramAccountConfig] = Field(default_factory=dict, max_length=100)  # type: ignore[assignment]

    @model_validator(mode="after")
    def _webhook_has_secret(self) -> TelegramConfig:
        for account_id in self.account_ids():
            settings = self.account(account_id)
            if settings.get("webhook_url") and settings.get("webhook_secret") is None:
                raise ValueError(f"{account_id}: webhookUrl needs webhookSecret (forged updates are refused by it)")
        return self
