"""The WhatsApp Cloud webhook's two checks, as Meta documents them.

* **Verification** (when the callback URL is saved): ``GET ?hub.mode=subscribe&hub.verify_token=
  <your token>&hub.challenge=<n>``; the challenge is echoed only when the token is the configured
  one (compared in constant time), else 403.
* **Signature** (every notification): ``X-Hub-Signature-256: sha256=<hex>``, the HMAC-SHA256 of the
  raw body keyed with the app secret; anything else is 401 before the body is parsed.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

__all__ = ["DEFAULT_WEBHOOK_PATH", "challenge_answer", "sign", "verify_signature"]

#: where Meta POSTs notifications unless ``webhookPath`` says otherwise
DEFAULT_WEBHOOK_PATH = "/whatsapp/webhook"


def sign(app_secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(app_secret.encode(), body, hashlib.sha256).hexdigest()


def verify_signature(app_secret: str, headers: Mapping[str, str], body: bytes) -> bool:
    given = headers.get("x-hub-signature-256", "")
    return bool(given) and hmac.compare_digest(given.encode(), sign(app_secret, body).encode())


def challenge_answer(verify_token: str | None, query: Mapping[str, str]) -> tuple[int, bytes]:
    """(status, body) of the verification GET."""
    given = query.get("hub.verify_token", "")
    if (
        verify_token is None
        or query.get("hub.mode") != "subscribe"
        or not hmac.compare_digest(given.encode(), verify_token.encode())
    ):
        return 403, b"forbidden"
    challenge = query.get("hub.challenge", "")
    if not challenge or len(challenge) > 256:
        return 400, b"no challenge"
    return 200, challenge.encode()
