"""Shared-secret checks: token/password/none modes, detail codes, no secret in any message."""

from __future__ import annotations

from dataclasses import astuple

import pytest

from homarus.security.auth import AuthDecision, AuthMode, check_shared_secret, secrets_equal

SECRET = "gw-secret-7c1d2e3f4a5b"
WRONG = "gw-secret-WRONG-value"


def test_secrets_equal() -> None:
    assert secrets_equal(SECRET, SECRET) is True
    assert secrets_equal(SECRET, SECRET + "x") is False
    assert secrets_equal("", SECRET) is False
    assert secrets_equal("ü-ok", "ü-ok") is True
    assert secrets_equal("u-ok", "ü-ok") is False


def test_mode_none_always_ok() -> None:
    assert check_shared_secret("none", None, None, None) == AuthDecision(True, "none")
    assert check_shared_secret("none", SECRET, WRONG, WRONG) == AuthDecision(True, "none")


def test_token_ok() -> None:
    assert check_shared_secret("token", SECRET, SECRET, None) == AuthDecision(True, "token")


def test_password_ok() -> None:
    assert check_shared_secret("password", SECRET, None, SECRET) == AuthDecision(True, "password")


def test_token_mode_ignores_password_field() -> None:
    d = check_shared_secret("token", SECRET, None, SECRET)
    assert (d.ok, d.code) == (False, "AUTH_TOKEN_MISSING")


def test_password_mode_ignores_token_field() -> None:
    d = check_shared_secret("password", SECRET, SECRET, None)
    assert (d.ok, d.code) == (False, "AUTH_PASSWORD_MISSING")


@pytest.mark.parametrize("provided", [None, ""])
def test_token_missing(provided: str | None) -> None:
    d = check_shared_secret("token", SECRET, provided, None)
    assert astuple(d) == (
        False,
        "token",
        "AUTH_TOKEN_MISSING",
        "token_missing",
        "unauthorized: gateway token missing (send auth.token in connect params)",
    )


def test_token_mismatch() -> None:
    d = check_shared_secret("token", SECRET, WRONG, None)
    assert astuple(d) == (
        False,
        "token",
        "AUTH_TOKEN_MISMATCH",
        "token_mismatch",
        "unauthorized: gateway token mismatch (check gateway.auth.token)",
    )


@pytest.mark.parametrize("expected", [None, ""])
def test_token_not_configured(expected: str | None) -> None:
    d = check_shared_secret("token", expected, SECRET, None)
    assert astuple(d) == (
        False,
        "token",
        "AUTH_TOKEN_NOT_CONFIGURED",
        "token_not_configured",
        "unauthorized: gateway token not configured on the gateway",
    )


def test_not_configured_wins_over_missing() -> None:
    assert check_shared_secret("token", None, None, None).code == "AUTH_TOKEN_NOT_CONFIGURED"


def test_password_missing() -> None:
    d = check_shared_secret("password", SECRET, None, None)
    assert astuple(d) == (
        False,
        "password",
        "AUTH_PASSWORD_MISSING",
        "password_missing",
        "unauthorized: gateway password missing (send auth.password in connect params)",
    )


def test_password_mismatch() -> None:
    d = check_shared_secret("password", SECRET, None, WRONG)
    assert astuple(d) == (
        False,
        "password",
        "AUTH_PASSWORD_MISMATCH",
        "password_mismatch",
        "unauthorized: gateway password mismatch (check gateway.auth.password)",
    )


def test_password_not_configured() -> None:
    d = check_shared_secret("password", None, None, SECRET)
    assert (d.ok, d.code, d.reason) == (False, "AUTH_PASSWORD_NOT_CONFIGURED", "password_not_configured")


@pytest.mark.parametrize("provided", [SECRET[:-1], SECRET + " ", SECRET.upper(), " " + SECRET])
def test_near_misses_are_mismatches(provided: str) -> None:
    assert check_shared_secret("token", SECRET, provided, None).code == "AUTH_TOKEN_MISMATCH"


@pytest.mark.parametrize("mode", ["token", "password"])
@pytest.mark.parametrize(
    ("expected", "provided"),
    [(SECRET, WRONG), (SECRET, None), (None, WRONG), (SECRET, SECRET[:5])],
)
def test_secret_never_in_message_or_details(mode: AuthMode, expected: str | None, provided: str | None) -> None:
    d = check_shared_secret(mode, expected, provided, provided)
    assert d.ok is False
    text = repr(d) + repr(d.details())
    assert SECRET not in text
    assert WRONG not in text
    assert SECRET[:5] not in text


def test_details_for_mismatch() -> None:
    assert check_shared_secret("token", SECRET, WRONG, None).details() == {
        "code": "AUTH_TOKEN_MISMATCH",
        "authReason": "token_mismatch",
        "canRetryWithDeviceToken": False,
        "recommendedNextStep": "update_auth_credentials",
    }


def test_details_for_missing_and_not_configured() -> None:
    assert check_shared_secret("password", SECRET, None, None).details() == {
        "code": "AUTH_PASSWORD_MISSING",
        "authReason": "password_missing",
        "canRetryWithDeviceToken": False,
        "recommendedNextStep": "update_auth_configuration",
    }
    assert check_shared_secret("token", None, None, None).details()["recommendedNextStep"] == (
        "update_auth_configuration"
    )
