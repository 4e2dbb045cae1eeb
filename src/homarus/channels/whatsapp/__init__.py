"""The bundled WhatsApp channel: a business number on the WhatsApp Business Cloud API, or a personal
number linked as a device."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["account_mode"]


def account_mode(settings: Mapping[str, Any]) -> str:
    """``cloud`` or ``personal``: the account's ``mode``, else what its settings imply (a
    ``phoneNumberId`` is the Cloud API's; the original's config, which has no mode, is personal)."""
    return str(settings.get("mode") or ("cloud" if settings.get("phone_number_id") else "personal"))
