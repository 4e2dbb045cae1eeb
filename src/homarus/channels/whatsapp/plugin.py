"""The bundled WhatsApp plugin: registers the channel through the same API as any third party, with
its config model, its ``channels add`` / ``onboard`` setup (cloud: the access token and number
checked with the Graph API, the app secret and verify token of the webhook; personal: nothing to
type, the link is made by QR code), its status fields and alias.

Importing this module costs little: the account of the account's mode (a Business number on the
Cloud API, or a personal number linked as a device) is imported by the factory, when a
configured WhatsApp account starts, and the Graph API client by the token check.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from homarus import __version__
from homarus.channels import credentials
from homarus.channels.adapter import ChannelSetup, ChannelSpec, SetupSecret
from homarus.channels.model import ChannelCapabilities
from homarus.channels.whatsapp import account_mode

if TYPE_CHECKING:
    from homarus.channels.adapter import AccountContext, ChannelAccount
    from homarus.plugins.api import PluginApi

__all__ = ["SPEC", "manifest", "register"]

ACCESS_TOKEN_ENV: Final = "WHATSAPP_ACCESS_TOKEN"  # noqa: S105 - the variable's name, not a token
APP_SECRET_ENV: Final = "WHATSAPP_APP_SECRET"  # noqa: S105 - the variable's name, not a secret
VERIFY_TOKEN_ENV: Final = "WHATSAPP_VERIFY_TOKEN"  # noqa: S105 - the variable's name, not a token

manifest: dict[str, Any] = {
    "id": "whatsapp",
    "name": "WhatsApp",
    "version": __version__,
    "description": "WhatsApp: a business number on the Cloud API, or a personal number linked as a device.",
    "configSchema": {"type": "object", "additionalProperties": False},
    "contracts": {"channels": ["whatsapp"]},
}


def _sources(settings: Mapping[str, Any], account_id: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Where each secret comes from (never the secret); with ``env``, whether its variable is set."""
    return {
        "accessTokenSource": credentials.source(settings, account_id, "access_token", ACCESS_TOKEN_ENV, env),
        "appSecretSource": credentials.source(settings, account_id, "app_secret", APP_SECRET_ENV, env, file_key=None),
        "verifyTokenSource": credentials.source(
            settings, account_id, "verify_token", VERIFY_TOKEN_ENV, env, file_key=None
        ),
    }


def _status_fields(settings: Mapping[str, Any], account_id: str) -> dict[str, Any]:
    if account_mode(settings) == "personal":
        return {"engine": str(settings.get("engine") or "neonize")}
    return {**_sources(settings, account_id), "phoneNumberId": settings.get("phone_number_id")}


def _list_fields(settings: Mapping[str, Any], account_id: str, env: Mapping[str, str]) -> dict[str, Any]:
    if account_mode(settings) == "personal":
        return {"mode": "personal", "token": "linked device"}
    where = _sources(settings, account_id, env)["accessTokenSource"]
    return {"mode": "cloud", "token": "-" if where == "none" else where}


def _verify(token: str, api_root: str | None) -> str:
    """The name of who the token belongs to (``GET /me``; ValueError when Meta refuses it)."""
    from homarus.channels.whatsapp.api import DEFAULT_API_ROOT, GraphApi, GraphApiError, GraphNetworkError

    async def check() -> str:
        api = GraphApi(token, "", api_root or DEFAULT_API_ROOT, timeout_s=10.0)
        try:
            me = await api.me()
        finally:
            await api.aclose()
        return str(me.get("name") or me.get("id") or "")

    return credentials.check_with_platform(
        check,
        platform="the Graph API",
        refused=GraphApiError,
        refusal=lambda exc: f"Meta refused the access token ({exc.message})",
        unreachable=GraphNetworkError,
    )


def _account(ctx: AccountContext) -> ChannelAccount:
    if account_mode(ctx.settings) == "personal":
        from homarus.channels.whatsapp.personal import PersonalAccount

        return PersonalAccount(ctx)
    from homarus.channels.whatsapp.account import WhatsAppAccount

    return WhatsAppAccount(ctx)


SPEC = ChannelSpec(
    id="whatsapp",
    label="WhatsApp",
    capabilities=ChannelCapabilities(
        text_limit=4000,
        groups=True,
        threads=False,
        media=True,
        typing=True,
        edits=False,
        id_prefixes=("whatsapp:", "wa:"),
    ),
    factory=_account,
    aliases=("wa",),
    status_fields=_status_fields,
    config_model="homarus.channels.whatsapp.config:WhatsAppConfig",
    setup=ChannelSetup(
        credential_key="accessToken",
        credential_label="access token (a system user's, WhatsApp Business Cloud API)",
        credential_env=ACCESS_TOKEN_ENV,
        api_root_key="apiRoot",
        verify=_verify,
        list_fields=_list_fields,
        onboard_question="Add a WhatsApp Business number now (Cloud API: a token, the number's id, the app secret)?",
        next_step=(
            "In the Meta app (WhatsApp → Configuration): callback URL https://<your host>/whatsapp/webhook "
            "with the verify token you chose, and subscribe to the messages field. Then message the number: "
            "a stranger gets a pairing code; approve it: homarus pairing approve whatsapp <code>"
        ),
        modes=("cloud", "personal"),
        credential_modes=("cloud",),
        mode_steps=(
            (
                "personal",
                "Install the engine if you have not (pip install 'homarus[whatsapp-personal]'), start the "
                "gateway, then link the number: homarus channels login whatsapp (or Link on the Control "
                "UI's Channels page), and scan the code in WhatsApp → Settings → Linked devices",
            ),
        ),
        secrets=(
            SetupSecret("phoneNumberId", "phone number id (WhatsApp → API Setup)", None, ("cloud",)),
            SetupSecret("appSecret", "app secret (App Settings → Basic)", APP_SECRET_ENV, ("cloud",)),
            SetupSecret(
                "verifyToken",
                "verify token (any phrase; typed again in Meta's webhook setup)",
                VERIFY_TOKEN_ENV,
                ("cloud",),
            ),
        ),
    ),
    docs=(
        "mode (cloud | personal); cloud: accessToken | tokenFile | $WHATSAPP_ACCESS_TOKEN, phoneNumberId, "
        "appSecret | $WHATSAPP_APP_SECRET, verifyToken | $WHATSAPP_VERIFY_TOKEN, webhookPath, apiRoot; "
        "personal: authDir, engine; sendReadReceipts"
    ),
)


def register(api: PluginApi) -> None:
    api.register_channel(SPEC)
