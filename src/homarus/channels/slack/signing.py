"""Slack's request signing (HTTP Events API and slash commands), checked as Slack documents it.

``X-Slack-Signature`` is ``v0=`` and the hex HMAC-SHA256, keyed with the app's signing secret, of
``v0:<X-Slack-Request-Timestamp>:<raw body>``. A timestamp more than five minutes from now is
refused before anything else (a replayed request), and the signature is compared in constant
time. Written here (twenty lines) rather than imported from slack_sdk, whose package import alone
costs ~17 MiB (``api.py``).
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping
from typing import Final

__all__ = ["DEFAULT_WEBHOOK_PATH", "MAX_SKEW_S", "sign", "verify"]

MAX_SKEW_S: Final = 300
#: where Slack POSTs signed events and slash commands in ``http`` mode unless ``webhookPath`` says
DEFAULT_WEBHOOK_PATH: Final = "/slack/events"


def sign(secret: str, timestamp: str, body: bytes) -> str:
    base = b"v0:" + timestamp.encode("ascii") + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def verify(secret: str, headers: Mapping[str, str], body: bytes, *, now: float | None = None) -> str | None:
    """None when the request is Slack's, else why not (never echoing what was sent)."""
    raw_ts = headers.get("x-slack-request-timestamp", "")
    given = headers.get("x-slack-signature", "")
    if not raw_ts or not given:
        return "unsigned"
    try:
        ts = int(raw_ts)
    except ValueError:
        return "a malformed timestamp"
    if abs((time.time() if now is None else now) - ts) > MAX_SKEW_S:
        return "a stale timestamp (over five minutes)"
    if not hmac.compare_digest(given.encode(), sign(secret, raw_ts, body).encode()):
        return "a wrong signature"
    return None
