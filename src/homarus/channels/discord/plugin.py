"""The bundled Discord plugin: registers the channel through the same API as any third party, with
its config model, its ``channels add`` / ``onboard`` setup (the token checked with
``GET /users/@me``), its status fields and its alias.

Importing this module costs little: the account (and the Gateway and REST clients) is imported by
the factory, when a configured Discord account starts, and the REST client by the token check.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from homarus import __version__
from homarus.channels import credentials
from homarus.channels.adapter import ChannelSetup, ChannelSpec
from homarus.channels.model import ChannelCapabilities

if TYPE_CHECKING:
    from homarus.channels.adapter import AccountContext, ChannelAccount
    from homarus.plugins.api import PluginApi

__all__ = ["SPEC", "manifest", "register"]

TOKEN_ENV: Final = "DISCORD_BOT_TOKEN"  # noqa: S105 - the variable's name, not a token

manifest: dict[str, Any] = {
    "id": "discord",
    "name": "Discord",
    "version": __version__,
    "description": "Discord bots: DMs, guild channels, threads and forum posts, over the Gateway.",
    "configSchema": {"type": "object", "additionalProperties": False},
    "contracts": {"channels": ["discord"]},
}


def _token_source(settings: Mapping[str, Any], account_id: str, env: Mapping[str, str] | None = None) -> str:
    """Where the bot token comes from (never the token); with ``env``, whether the variable is set."""
    return credentials.source(settings, account_id, "token", TOKEN_ENV, env)


def _status_fields(settings: Mapping[str, Any], account_id: str) -> dict[str, Any]:
    return {"tokenSource": _token_source(settings, account_id), "guilds": sorted(settings.get("guilds") or {})}


def _list_fields(settings: Mapping[str, Any], account_id: str, env: Mapping[str, str]) -> dict[str, Any]:
    source = _token_source(settings, account_id, env)
    return {"mode": "gateway", "token": "-" if source == "none" else source}


def _verify(token: str, api_root: str | None) -> str:
    """``@username`` of the bot the token belongs to (ValueError when Discord refuses it)."""
    from homarus.channels.discord.api import DEFAULT_API_ROOT, DiscordApi, DiscordApiError, DiscordNetworkError

    async def check() -> str:
        api = DiscordApi(token, api_root or DEFAULT_API_ROOT, timeout_s=10.0)
        try:
            me = await api.get_me()
        finally:
            await api.aclose()
        return f"@{me.get('username')}" if me.get("username") else str(me.get("id"))

    return credentials.check_with_platform(
        check,
        platform="Discord",
        refused=DiscordApiError,
        refusal=lambda exc: f"Discord refused the token ({exc.status}: {exc.message})",
        unreachable=DiscordNetworkError,
    )


def _account(ctx: AccountContext) -> ChannelAccount:
    from homarus.channels.discord.account import DiscordAccount

    return DiscordAccount(ctx)


SPEC = ChannelSpec(
    id="discord",
    label="Discord",
    capabilities=ChannelCapabilities(
        text_limit=2000, threads=True, media=True, typing=True, edits=False, id_prefixes=("discord:", "dc:")
    ),
    factory=_account,
    thread_word="thread",
    aliases=("dc",),
    status_fields=_status_fields,
    config_model="homarus.channels.discord.config:DiscordConfig",
    setup=ChannelSetup(
        credential_key="token",
        credential_label="bot token (Developer Portal, Bot page)",
        credential_env=TOKEN_ENV,
        api_root_key="apiRoot",
        verify=_verify,
        list_fields=_list_fields,
        onboard_question="Add a Discord bot now (a token from the Developer Portal)?",
        next_step=(
            "In the Developer Portal enable the Message Content intent, invite the bot (scopes bot and "
            "applications.commands), then DM it: it answers with a pairing code; approve it: "
            "homarus pairing approve discord <code>. Guild channels: add channels.discord.guilds.<guildId>"
        ),
    ),
    docs=(
        "token | tokenFile | $DISCORD_BOT_TOKEN, apiRoot, gatewayUrl, "
        "guilds.<id>.{users, roles, requireMention, channels.<id>}"
    ),
)


def register(api: PluginApi) -> None:
    api.register_channel(SPEC)
