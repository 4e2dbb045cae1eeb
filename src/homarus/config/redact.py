"""Mask secrets in anything shown to a client or written to a log."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["REDACTED", "is_sensitive_key", "redact", "redact_text", "restore_redacted"]

REDACTED = "__HOMARUS_REDACTED__"
# "token" but not "tokens": maxTokens / contextTokens are counts, not secrets
_SENSITIVE = re.compile(r"(?i)(token|(password|passphrase|secret|api[_-]?key|private[_-]?key|credential)s?)$")


def is_sensitive_key(key: str) -> bool:
    return bool(_SENSITIVE.search(key))


def redact(value: Any) -> Any:
    """Copy of ``value`` with every sensitive key's non-empty value replaced by REDACTED."""
    if isinstance(value, dict):
        return {
            k: (REDACTED if is_sensitive_key(k) and v not in (None, "") and not isinstance(v, dict) else redact(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def restore_redacted(new: Any, current: Any) -> Any:
    """Put back the current secret wherever a client echoed REDACTED instead of a value."""
    if isinstance(new, dict):
        cur = current if isinstance(current, dict) else {}
        out = {}
        for k, v in new.items():
            if v == REDACTED:
                if k not in cur:
                    continue  # nothing to restore: drop the sentinel rather than store it
                out[k] = cur[k]
            else:
                out[k] = restore_redacted(v, cur.get(k))
        return out
    if isinstance(new, list):
        cur_list = current if isinstance(current, list) else []
        return [restore_redacted(v, cur_list[i] if i < len(cur_list) else None) for i, v in enumerate(new)]
    return new


def _secret_values(value: Any) -> list[str]:
    found: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if is_sensitive_key(k) and isinstance(v, str) and v:
                found.append(v)
            else:
                found.extend(_secret_values(v))
    elif isinstance(value, list):
        for v in value:
            found.extend(_secret_values(v))
    return found


def redact_text(raw: str, parsed: Any) -> str:
    """Replace each secret literal of ``parsed`` inside the raw file text."""
    # Longest first, so a secret containing another is replaced whole.
    for secret in sorted(set(_secret_values(parsed)), key=len, reverse=True):
        if "${" in secret:
            continue  # an env reference is not the secret itself
        raw = raw.replace(secret, REDACTED)
    return raw
