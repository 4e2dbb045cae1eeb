"""Operator scopes and method authorization (deny by default).

Rules, in order: ``health`` is always allowed; ``operator.admin`` allows everything; otherwise
the method's declared scope is required, where ``operator.write`` also satisfies
``operator.read``. Unknown methods and the reserved prefixes need admin, so a non-admin cannot
even learn which methods exist.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Final

from homarus.errors import Forbidden

__all__ = [
    "ADMIN",
    "ALL_OPERATOR_SCOPES",
    "APPROVALS",
    "PAIRING",
    "READ",
    "RESERVED_ADMIN_PREFIXES",
    "WRITE",
    "missing_scope",
    "require_scope",
    "scope_allows",
]

ADMIN: Final = "operator.admin"
READ: Final = "operator.read"
WRITE: Final = "operator.write"
APPROVALS: Final = "operator.approvals"
PAIRING: Final = "operator.pairing"
TALK_SECRETS: Final = "operator.talk.secrets"
ALL_OPERATOR_SCOPES: Final = (ADMIN, READ, WRITE, APPROVALS, PAIRING, TALK_SECRETS)
ALWAYS_ALLOWED: Final = frozenset({"health"})
RESERVED_ADMIN_PREFIXES: Final = ("config.", "exec.approvals.", "wizard.", "update.")


def scope_allows(granted: Collection[str], required: str | None) -> bool:
    """Whether a caller holding ``granted`` may use something that needs ``required``."""
    if required is None or ADMIN in granted:
        return True
    if required in granted:
        return True
    return required == READ and WRITE in granted


def missing_scope(method: str, declared: str | None, granted: Collection[str]) -> str | None:
    """The scope the caller lacks for ``method`` (declared None = unknown method), or None."""
    if method in ALWAYS_ALLOWED or ADMIN in granted:
        return None
    required = ADMIN if declared is None else declared
    return None if scope_allows(granted, required) else required


def require_scope(method: str, declared: str | None, granted: Collection[str]) -> None:
    lacking = missing_scope(method, declared, granted)
    if lacking is not None:
        raise Forbidden(
            f"missing scope: {lacking}",
            details={"code": "MISSING_SCOPE", "missingScope": lacking, "requiredScopes": [lacking]},
        )
