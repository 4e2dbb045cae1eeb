"""The ``channels.whatsapp`` object, in the original's shape (``dmPolicy``, ``allowFrom`` as E.164
numbers, ``sendReadReceipts``, ``textChunkLimit``, ``mediaMaxMb``, ``accounts``), with what the
Business Cloud API needs beside it: ``mode: "cloud"``, the ``accessToken``, the
``phoneNumberId`` it sends from, the ``appSecret`` that signs webhooks, the ``verifyToken`` of
the callback URL's handshake and the ``webhookPath``.

``mode: "personal"`` is a personal number linked as a device, as the original runs WhatsApp
(``authDir``: where its session lives; ``engine``: the WhatsApp Web library, ``neonize`` by
default). An account without ``mode`` is ``cloud`` when it names a ``phoneNumberId`` and
``personal`` otherwise, so the original's config (which has no mode) keeps its meaning.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, SecretStr, field_validator, model_validator

from homarus.channels.whatsapp import account_mode
from homarus.channels.whatsapp.webhook import DEFAULT_WEBHOOK_PATH
from homarus.config.channels import ChannelAccountConfig, ChannelConfig, check_webhook_paths
from homarus.patterns import Pattern

__all__ = ["WhatsAppAccountConfig", "WhatsAppConfig", "account_mode", "e164"]


def e164(value: Any) -> Any:
    """Phone numbers as ``+<digits>`` (``+1 (555) 123-4567`` → ``+15551234567``); ``*`` and
    anything that is not a number are left as they are (the access check names them)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"+{value}"
    if not isinstance(value, str):
        return value
    raw = value.strip().removeprefix("whatsapp:")
    digits = re.sub(r"[\s().-]", "", raw)
    if re.fullmatch(r"\+?\d{6,15}", digits):
        return "+" + digits.lstrip("+")
    return raw


class WhatsAppAccountConfig(ChannelAccountConfig):
    #: ``cloud``: the WhatsApp Business Cloud API; ``personal``: a linked device (default: ``cloud``
    #: with a ``phoneNumberId``, else ``personal``)
    mode: Literal["cloud", "personal"] | None = None
    #: personal: the directory of the linked device's session (default: under the state directory)
    auth_dir: str | None = Field(None, max_length=4096)
    #: personal: the WhatsApp Web engine (``neonize``, from the ``whatsapp-personal`` extra)
    engine: Annotated[str, Pattern(r"^[a-z][a-z0-9_-]{0,31}$")] | None = None
    #: a system user's access token (Business Settings → System users); ``$WHATSAPP_ACCESS_TOKEN``
    access_token: SecretStr | None = None
    #: a file holding the access token (a regular file, not a symlink)
    token_file: str | None = Field(None, max_length=4096)
    #: the business number's id (WhatsApp → API Setup), not the number itself
    phone_number_id: Annotated[str, Pattern(r"^\d{5,25}$")] | None = None
    #: the app secret (App Settings → Basic) that signs every webhook; ``$WHATSAPP_APP_SECRET``
    app_secret: SecretStr | None = None
    #: what you typed as "Verify token" when saving the callback URL; ``$WHATSAPP_VERIFY_TOKEN``
    verify_token: SecretStr | None = None
    #: where Meta POSTs notifications (the callback URL's path on the gateway port)
    webhook_path: Annotated[str, Pattern(r"^/[A-Za-z0-9._~/-]{1,128}$")] | None = None
    #: the Graph API root with its version (a local stand-in, tests)
    api_root: Annotated[str, Field(max_length=512), Pattern(r"^https?://[^\s?#]+$")] | None = None
    #: mark received messages read (blue ticks) when their answer starts (default true)
    send_read_receipts: bool | None = None

    @field_validator("allow_from", "group_allow_from", mode="before")
    @classmethod
    def _numbers(cls, v: Any) -> Any:
        return [e164(x) for x in v] if isinstance(v, list | tuple) else v


class WhatsAppConfig(WhatsAppAccountConfig, ChannelConfig):
    model_config = ConfigDict(extra="forbid")

    accounts: dict[str, WhatsAppAccountConfig] = Field(default_factory=dict, max_length=100)  # type: ignore[assignment]

    @model_validator(mode="after")
    def _webhook_paths_differ(self) -> WhatsAppConfig:
        check_webhook_paths(self, mode="cloud", default_mode=account_mode, default_path=DEFAULT_WEBHOOK_PATH)
        return self
