"""Shared-secret authentication of connecting clients (constant-time, no secret in messages)."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["AuthDecision", "check_shared_secret", "secrets_equal"]

AuthMode = Literal["token", "password", "none"]


def secrets_equal(provided: str, expected: str) -> bool:
    """Constant-time comparison; unequal lengths do not short-circuit on content."""
    return hmac.compare_digest(provided.encode("utf-8"), expected.encode("utf-8"))


@dataclass(frozen=True, slots=True)
class AuthDecision:
    ok: bool
    method: str
    #: detail code (AUTH_TOKEN_MISSING, ...) when not ok
    code: str | None = None
    reason: str | None = None
    message: str | None = None

    def details(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "authReason": self.reason,
            "canRetryWithDeviceToken": False,
            "recommendedNextStep": "update_auth_credentials"
            if self.code and "MISMATCH" in self.code
            else "update_auth_configuration",
        }


def check_shared_secret(mode: AuthMode, expected: str | None, token: str | None, password: str | None) -> AuthDecision:
    """Decide whether the credentials a client sent match the gateway's shared secret."""
    if mode == "none":
        return AuthDecision(True, "none")
    kind = "token" if mode == "token" else "password"
    provided = token if mode == "token" else password
    upper = kind.upper()
    if not expected:
        return AuthDecision(
            False,
            kind,
            f"AUTH_{upper}_NOT_CONFIGURED",
            f"{kind}_not_configured",
            f"unauthorized: gateway {kind} not configured on the gateway",
        )
    if not provided:
        return AuthDecision(
            False,
            kind,
            f"AUTH_{upper}_MISSING",
            f"{kind}_missing",
            f"unauthorized: gateway {kind} missing (send auth.{kind} in connect params)",
        )
    if not secrets_equal(provided, expected):
        return AuthDecision(
            False,
            kind,
            f"AUTH_{upper}_MISMATCH",
            f"{kind}_mismatch",
            f"unauthorized: gateway {kind} mismatch (check gateway.auth.{kind})",
        )
    return AuthDecision(True, kind)
