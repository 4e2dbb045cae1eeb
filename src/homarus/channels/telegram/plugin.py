"""The bundled Telegram plugin: registers the channel through the same API as any third party,
with everything the shared parts ask of a channel: its config model, its ``channels add`` /
``onboard`` setup (the token check), its status fields and its alias.

Importing this module costs little: the account class (and the Bot API client, the Markdown
renderer) is imported by the factory, when a configured Telegram account starts, and the Bot API
client by the token check.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from homarus import __version__
from homarus.channels import credentials
from homarus.channels.adapter import ChannelSetup, ChannelSpec
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


TOKEN_ENV = "TELEGRAM_BOT_TOKEN"  # noqa: S105 - the variable's name, not a token


def _token_source(settings: Mapping[str, Any], account_id: str, env: Mapping[str, str] | None = None) -> str:
    """Where the bot token comes from (never the token); with ``env``, whether the variable is set."""
    return credentials.source(settings, account_id, "bot_token", TOKEN_ENV, env)


def _status_fields(settings: Mapping[str, Any], account_id: str) -> dict[str, Any]:
    return {"botTokenSource": _token_source(settings, account_id)}


def _list_fields(settings: Mapping[str, Any], account_id: str, env: Mapping[str, str]) -> dict[str, Any]:
    source = _token_source(settings, account_id, env)
    return {
        "mode": "webhook" if settings.get("webhook_url") else "polling",
        "token": "-" if source == "none" else source,
    }


def _verify(token: str, api_root: str | None) -> str:
    """``@username`` of the bot the token belongs to (ValueError when Telegram refuses it)."""
    from homarus.channels.telegram.api import DEFAULT_API_ROOT, BotApi, TelegramApiError, TelegramNetworkError

    async def check() -> str:
        api = BotApi(token, api_root or DEFAULT_API_ROOT, timeout_s=10.0)
        try:
            me = await api.get_me()
        finally:
            await api.aclose()
        return f"@{me.username}" if me.username else str(me.id)

    return credentials.check_with_platform(
        check,
        platform="Telegram",
        refused=TelegramApiError,
        refusal=lambda exc: f"Telegram refused the token ({exc.code}: {exc.description})",
        unreachable=TelegramNetworkError,
    )


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
    config_model="homarus.channels.telegram.config:TelegramConfig",
    setup=ChannelSetup(
        credential_key="botToken",
        credential_label="bot token (from @BotFather)",
        credential_env=TOKEN_ENV,
        api_root_key="apiRoot",
        verify=_verify,
        list_fields=_list_fields,
        onboard_question="Add a Telegram bot now (a token from @BotFather)?",
        next_step="DM the bot: it answers with a pairing code; approve it: homarus pairing approve telegram <code>",
    ),
    docs="botToken | tokenFile | $TELEGRAM_BOT_TOKEN, apiRoot, webhookUrl + webhookSecret (+ webhookPath)",
)


def register(api: PluginApi) -> None:
    api.register_channel(SPEC)
