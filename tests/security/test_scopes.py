"""Operator scopes: deny by default, admin allows all, write satisfies read, health always allowed."""

from __future__ import annotations

import pytest

from homarus.errors import Forbidden, InvalidRequest
from homarus.security.scopes import (
    ADMIN,
    ALL_OPERATOR_SCOPES,
    APPROVALS,
    PAIRING,
    READ,
    RESERVED_ADMIN_PREFIXES,
    WRITE,
    missing_scope,
    require_scope,
    scope_allows,
)


def test_scope_names() -> None:
    assert (ADMIN, READ, WRITE, APPROVALS, PAIRING) == (
        "operator.admin",
        "operator.read",
        "operator.write",
        "operator.approvals",
        "operator.pairing",
    )
    assert ALL_OPERATOR_SCOPES == (ADMIN, READ, WRITE, APPROVALS, PAIRING, "operator.talk.secrets")
    assert RESERVED_ADMIN_PREFIXES == ("config.", "exec.approvals.", "wizard.", "update.")


# --- scope_allows ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("granted", "required", "allowed"),
    [
        (set(), None, True),
        (set(), READ, False),
        ({READ}, READ, True),
        ({WRITE}, READ, True),
        ({READ}, WRITE, False),
        ({WRITE}, WRITE, True),
        ({WRITE}, APPROVALS, False),
        ({APPROVALS}, APPROVALS, True),
        ({PAIRING}, READ, False),
        ({APPROVALS, PAIRING}, WRITE, False),
        ({ADMIN}, READ, True),
        ({ADMIN}, WRITE, True),
        ({ADMIN}, PAIRING, True),
        ({ADMIN}, "operator.anything", True),
        ({READ, WRITE, APPROVALS, PAIRING}, ADMIN, False),
        ({"operator.read.extra"}, READ, False),
    ],
)
def test_scope_allows(granted: set[str], required: str | None, allowed: bool) -> None:
    assert scope_allows(granted, required) is allowed


def test_scope_allows_accepts_any_collection() -> None:
    assert scope_allows(frozenset({WRITE}), READ) is True
    assert scope_allows([ADMIN], WRITE) is True
    assert scope_allows((), WRITE) is False


# --- missing_scope -----------------------------------------------------------------------------


@pytest.mark.parametrize("granted", [set(), {READ}, {"not.a.scope"}])
def test_health_always_allowed(granted: set[str]) -> None:
    assert missing_scope("health", READ, granted) is None
    assert missing_scope("health", None, granted) is None
    assert missing_scope("health", ADMIN, granted) is None


def test_admin_allows_everything_including_unknown() -> None:
    assert missing_scope("status", READ, {ADMIN}) is None
    assert missing_scope("config.set", ADMIN, {ADMIN}) is None
    assert missing_scope("no.such.method", None, {ADMIN}) is None


def test_unknown_method_needs_admin() -> None:
    assert missing_scope("no.such.method", None, {READ, WRITE, APPROVALS, PAIRING}) == ADMIN
    assert missing_scope("no.such.method", None, set()) == ADMIN


def test_declared_scope_required() -> None:
    assert missing_scope("status", READ, set()) == READ
    assert missing_scope("status", READ, {READ}) is None
    assert missing_scope("status", READ, {WRITE}) is None
    assert missing_scope("chat.send", WRITE, {READ}) == WRITE
    assert missing_scope("chat.send", WRITE, {WRITE}) is None
    assert missing_scope("device.pair.list", PAIRING, {READ, WRITE}) == PAIRING
    assert missing_scope("config.set", ADMIN, {READ, WRITE}) == ADMIN


# --- require_scope -----------------------------------------------------------------------------


def test_require_scope_passes_silently() -> None:
    require_scope("status", READ, {WRITE})
    require_scope("health", None, set())


def test_require_scope_forbidden_for_unknown_method() -> None:
    with pytest.raises(Forbidden) as info:
        require_scope("secret.method", None, {READ})
    err = info.value
    assert err.message == "missing scope: operator.admin"
    assert str(err) == "missing scope: operator.admin"
    assert err.details == {
        "code": "MISSING_SCOPE",
        "missingScope": "operator.admin",
        "requiredScopes": ["operator.admin"],
    }
    assert isinstance(err, InvalidRequest)
    assert err.error_code == "INVALID_REQUEST"
    assert err.http_status == 403


def test_require_scope_forbidden_names_declared_scope() -> None:
    with pytest.raises(Forbidden) as info:
        require_scope("chat.send", WRITE, {READ})
    assert info.value.message == "missing scope: operator.write"
    assert info.value.details == {
        "code": "MISSING_SCOPE",
        "missingScope": "operator.write",
        "requiredScopes": ["operator.write"],
    }
