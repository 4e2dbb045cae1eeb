"""What every entry point does to inbound message text before a run sees it."""

from __future__ import annotations

import re
import unicodedata

from homarus.errors import InvalidRequest

__all__ = ["sanitize_message"]

_CONTROL = re.compile(r"[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]")


def sanitize_message(text: str) -> str:
    """NFC, no NUL (refused), other C0 controls except tab/newline/CR and DEL removed."""
    if "\x00" in text:
        raise InvalidRequest("message must not contain null bytes")
    return _CONTROL.sub("", unicodedata.normalize("NFC", text))
