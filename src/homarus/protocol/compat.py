"""Parameters the original (OpenClaw 2026.9.6) accepts for features Homarus does not have.

Its clients send them as a matter of course (the Control UI sends ``sessionId`` with every
``chat.send``, ``fastMode`` with a new session), so a params model refusing them would break the
client; accepting them silently would hide what Homarus does not do. Each one is declared here,
on the params model, with the reason, in one of two kinds:

- **inert**: accepted and without effect, because what it tunes does not exist here (boards,
  swarms, worktrees, voice, per-device delivery, …); ``docs/openclaw-compat.md`` lists them.
- **unsupported**: accepted only with a value that changes nothing (``None`` or one of the
  ``harmless`` values); any other value is refused with ``INVALID_REQUEST`` naming the parameter,
  because ignoring it would change what the caller gets (a looser or different policy, another
  host, another runtime) without telling them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, Field, create_model

from homarus.errors import InvalidRequest

__all__ = [
    "INTERNAL",
    "NO_BOARDS",
    "NO_BRANCHES",
    "NO_FAST_MODE",
    "NO_PERMISSION_MODES",
    "NO_PROJECTS",
    "NO_RUNTIMES",
    "ORIGIN_ONLY",
    "PER_SESSION_EXEC",
    "Unsupported",
    "check_unsupported",
    "compat_params",
    "inert_of",
    "is_compat",
    "unsupported_of",
]

# the reasons that recur across methods
NO_FAST_MODE = "Homarus has no fast mode (a model is picked per session or per run)"
NO_BOARDS = "session boards and their presentation are not a Homarus feature"
NO_BRANCHES = "Homarus transcripts do not branch: a message always goes after the last one"
NO_PERMISSION_MODES = "Homarus has no per-session permission modes; tool policy comes from the config"
NO_PROJECTS = "projects, repositories and worktrees are not a Homarus feature"
NO_RUNTIMES = "Homarus runs every agent in its own runtime; there are no alternative agent runtimes"
ORIGIN_ONLY = "where a message came from on a chat channel; messages sent here are the caller's own"
PER_SESSION_EXEC = "exec policy and the sandbox are set in the config (tools.exec, agents.*.sandbox), not per session"
INTERNAL = "internal to the original's own agent runtime"

M = TypeVar("M", bound=BaseModel)

_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


class Unsupported:
    """Why a parameter is refused, and which values are nonetheless fine (they change nothing)."""

    __slots__ = ("harmless", "reason")

    def __init__(self, reason: str, *harmless: Any) -> None:
        self.reason = reason
        self.harmless = harmless


def _py(wire: str) -> str:
    return "compat_" + _CAMEL.sub("_", wire).lower()


def is_compat(field_name: str) -> bool:
    """Whether a model field is one of the original's declared parameters (never stored)."""
    return field_name.startswith("compat_")


def compat_params(
    inert: Mapping[str, str] | None = None, unsupported: Mapping[str, Unsupported] | None = None
) -> Callable[[type[M]], type[M]]:
    """Add the original's ``inert`` and ``unsupported`` parameters (wire name → reason) to a model."""

    def wrap(cls: type[M]) -> type[M]:
        taken = {f.alias or name for name, f in cls.model_fields.items()}
        fields: dict[str, Any] = {}
        for wire in [*(inert or {}), *(unsupported or {})]:
            if wire in taken:
                raise TypeError(f"{cls.__name__}.{wire} is declared twice")
            fields[_py(wire)] = (Any, Field(default=None, alias=wire))
        model = create_model(cls.__name__, __base__=cls, __module__=cls.__module__, **fields)
        model.__doc__ = cls.__doc__
        model.__qualname__ = cls.__qualname__
        # a subclass keeps what its base declared
        model.__compat_inert__ = {**inert_of(cls), **(inert or {})}  # type: ignore[attr-defined]
        model.__compat_unsupported__ = {**unsupported_of(cls), **(unsupported or {})}  # type: ignore[attr-defined]
        return model

    return wrap


def inert_of(model: type[BaseModel]) -> dict[str, str]:
    return dict(getattr(model, "__compat_inert__", {}))


def unsupported_of(model: type[BaseModel]) -> dict[str, Unsupported]:
    return dict(getattr(model, "__compat_unsupported__", {}))


def check_unsupported(method: str, params: BaseModel) -> None:
    """Refuse an unsupported parameter set to a value that would change something."""
    for wire, why in getattr(type(params), "__compat_unsupported__", {}).items():
        value = getattr(params, _py(wire))
        if value is not None and value not in why.harmless:
            raise InvalidRequest(f"invalid {method} params: {wire} is not supported by Homarus ({why.reason})")
