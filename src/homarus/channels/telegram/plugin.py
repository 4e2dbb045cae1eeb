"""The bundled Telegram plugin: registers the channel through the same API as any third party.

Importing this module costs nothing: the account class (and the Bot API client, the Markdown
renderer) is imported by the factory, when a configured Telegram account starts.
"""

from __future__ import annotations

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
    docs="botToken | tokenFile | $TELEGRAM_BOT_TOKEN, apiRoot, webhookUrl + webhookSecret (+ webhookPath)",
)


def register(api: PluginApi) -> None:
    api.register_channel(SPEC)
