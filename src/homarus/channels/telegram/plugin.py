"""The bundled Telegram plugin: registers the channel through the same API as any third party.

Importing this module costs nothing: the account class (and the Bot API client, the Markdown
renderer) is imported by the factory, when a configured Telegram account starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from homarus import __version__
from homarus.channels.adapter import ChannelSpec
from homarus.channels.model import ChannelCapabilities

if TYPE_CHECKING:
    from homarus.channels.adapter import AccountContext, ChannelAccount
    from homarus.plugins.api import PluginApi

__all__ = ["SPEC", "manifest", "register"]

manifest: dict[str, Any] = {
    "id": "telegram",
    "name": "Telegram",
    "version": __version__,
    "description": "Telegram bots: DMs, groups and forum topics, long polling or a webhook.",
    "configSchema": {"type": "object", "additionalProperties": False},
    "contracts": {"channels": ["telegram"]},
}


def _status_fields(settings: Mapping[str, Any], account_id: str) -> dict[str, Any]:
    """Where the bot token comes from (never the token)."""
    if settings.get("bot_token") is not None:
        source = "config"
    elif settings.get("token_file"):
        source = "file"
    else:
        source = "env" if account_id == "default" else "none"
    return {"botTokenSource": source}


def _account(ctx: AccountContext) -> ChannelAccount:
    from homarus.channels.telegram.account import TelegramAccount

    return TelegramAccount(ctx)


SPEC = ChannelSpec(
    id="telegram",
    label="Telegram",
    capabilities=ChannelCapabilities(
        text_limit=4000, threads=True, media=True, typing=True, edits=False, id_prefixes=("telegram:", "tg:")
    ),
    factory=_account,
    thread_word="topic",
    aliases=("tg",),
    status_fields=_status_fields,
    docs="botToken | tokenFile | $TELEGRAM_BOT_TOKEN, apiRoot, webhookUrl + webhookSecret (+ webhookPath)",
)


def register(api: PluginApi) -> None:
    api.register_channel(SPEC)
