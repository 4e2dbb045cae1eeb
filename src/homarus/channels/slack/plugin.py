"""The bundled Slack plugin: registers the channel through the same API as any third party, with
its config model, its ``channels add`` / ``onboard`` setup (the bot token checked with
``auth.test``; the app-level token for Socket Mode, the signing secret for HTTP events), its
status fields and its alias.

Importing this module costs little: the account (Socket Mode and the Web API client) is imported
by the factory, when a configured Slack account starts, and the Web API client by the token check.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from homarus import __version__
from homarus.channels import credentials
from homarus.channels.adapter import ChannelSetup, ChannelSpec, SetupSecret
from homarus.channels.model import ChannelCapabilities

if TYPE_CHECKING:
    from homarus.channels.adapter import AccountContext, ChannelAccount
    from homarus.plugins.api import PluginApi

__all__ = ["SPEC", "manifest", "register"]

BOT_TOKEN_ENV: Final = "SLACK_BOT_TOKEN"  # noqa: S105 - the variable's name, not a token
APP_TOKEN_ENV: Final = "SLACK_APP_TOKEN"  # noqa: S105 - the variable's name, not a token
SIGNING_SECRET_ENV: Final = "SLACK_SIGNING_SECRET"  # noqa: S105 - the variable's name, not a secret

manifest: dict[str, Any] = {
    "id": "slack",
    "name": "Slack",
    "version": __version__,
    "description": "Slack apps: DMs, channels and threads, over Socket Mode or HTTP events.",
    "configSchema": {"type": "object", "additionalProperties": False},
    "contracts": {"channels": ["slack"]},
}


def _mode(settings: Mapping[str, Any]) -> str:
    return str(settings.get("mode") or "socket")


def _sources(settings: Mapping[str, Any], account_id: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Where each secret comes from (never the secret); with ``env``, whether its variable is set."""
    out: dict[str, str] = {"botTokenSource": credentials.source(settings, account_id, "bot_token", BOT_TOKEN_ENV, env)}
    if _mode(settings) == "socket":
        out["appTokenSource"] = credentials.source(settings, account_id, "app_token", APP_TOKEN_ENV, env, file_key=None)
    else:
        out["signingSecretSource"] = credentials.source(
            settings, account_id, "signing_secret", SIGNING_SECRET_ENV, env, file_key=None
        )
    return out


def _status_fields(settings: Mapping[str, Any], account_id: str) -> dict[str, Any]:
    return {**_sources(settings, account_id), "channels": sorted(settings.get("channels") or {})}


def _list_fields(settings: Mapping[str, Any], account_id: str, env: Mapping[str, str]) -> dict[str, Any]:
    where = _sources(settings, account_id, env)["botTokenSource"]
    return {"mode": _mode(settings), "token": "-" if where == "none" else where}


def _verify(token: str, api_root: str | None) -> str:
    """``@name (team)`` of the bot the token belongs to (ValueError when Slack refuses it)."""
    from homarus.channels.slack.api import DEFAULT_API_ROOT, SlackApi, SlackApiError, SlackNetworkError

    async def check() -> str:
        api = SlackApi(token, api_root or DEFAULT_API_ROOT, timeout_s=10.0)
        try:
            me = await api.auth_test()
        finally:
            await api.aclose()
        name = f"@{me.get('user')}" if me.get("user") else str(me.get("user_id"))
        return f"{name} in {me.get('team')}" if me.get("team") else name

    return credentials.check_with_platform(
        check,
        platform="Slack",
        refused=SlackApiError,
        refusal=lambda exc: f"Slack refused the bot token ({exc.error})",
        unreachable=SlackNetworkError,
    )


def _account(ctx: AccountContext) -> ChannelAccount:
    from homarus.channels.slack.account import SlackAccount

    return SlackAccount(ctx)


SPEC = ChannelSpec(
    id="slack",
    label="Slack",
    capabilities=ChannelCapabilities(
        text_limit=4000, threads=True, media=True, typing=False, edits=False, id_prefixes=("slack:",)
    ),
    factory=_account,
    thread_word="thread",
    status_fields=_status_fields,
    config_model="homarus.channels.slack.config:SlackConfig",
    setup=ChannelSetup(
        credential_key="botToken",
        credential_label="bot token (xoxb-, OAuth & Permissions)",
        credential_env=BOT_TOKEN_ENV,
        api_root_key="apiRoot",
        verify=_verify,
        list_fields=_list_fields,
        onboard_question="Add a Slack app now (a bot token and an app-level token)?",
        next_step=(
            "In the app's settings: Socket Mode on (or, with --mode http, Event Subscriptions → "
            "Request URL https://<your host>/slack/events); Event Subscriptions → bot events "
            "message.im, message.channels, message.groups, message.mpim, app_mention; App Home → "
            "Messages tab on. Then DM the bot: it answers with a pairing code; approve it: "
            "homarus pairing approve slack <code>. Channels: invite the bot, add channels.slack.channels.<id>"
        ),
        modes=("socket", "http"),
        secrets=(
            SetupSecret("appToken", "app-level token (xapp-, scope connections:write)", APP_TOKEN_ENV, ("socket",)),
            SetupSecret("signingSecret", "signing secret (Basic Information)", SIGNING_SECRET_ENV, ("http",)),
        ),
    ),
    docs=(
        "mode (socket | http), botToken | tokenFile | $SLACK_BOT_TOKEN, appToken | $SLACK_APP_TOKEN, "
        "signingSecret | $SLACK_SIGNING_SECRET, webhookPath, apiRoot, channels.<id>.{enabled, requireMention, users}"
    ),
)


def register(api: PluginApi) -> None:
    api.register_channel(SPEC)
