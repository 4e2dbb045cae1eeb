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

from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from pydantic import BaseModel

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


class Unsupported:
    """Why a parameter is refused, and which values are nonetheless fine (they change nothing)."""

    __slots__ = ("harmless", "reason")

    def __init__(self, reason: str, *harmless: Any) -> None:
        self.reason = reason
        self.harmless = harmless


def compat_params(
    inert: Mapping[str, str] | None = None, unsupported: Mapping[str, Unsupported] | None = None
) -> Callable[[type[M]], type[M]]:
    """Let a model take the original's ``inert`` and ``unsupported`` parameters (wire name → reason).

    Not as fields: ``model_validate`` takes them out of the params first (the model itself stays
    closed to anything else) and keeps the unsupported ones' values for :func:`check_unsupported`.
    Fields would cost a validator entry each, and a model rebuilt with them a second validator
    beside the first: ~90 fields of the agent/chat/connect params alone, 0.4 MiB of an idle
    gateway, measured."""

    def wrap(cls: type[M]) -> type[M]:
        taken = {f.alias or name for name, f in cls.model_fields.items()}
        mine = {**(inert or {}), **(unsupported or {})}
        for wire in mine:
            if wire in taken:
                raise TypeError(f"{cls.__name__}.{wire} is declared twice")
        # a subclass keeps what its base declared
        inert_all = {**inert_of(cls), **(inert or {})}
        unsupported_all = {**unsupported_of(cls), **(unsupported or {})}
        wires = frozenset(inert_all) | frozenset(unsupported_all)
        validate = cls.model_validate.__func__  # type: ignore[attr-defined]

        def model_validate(klass: type[M], obj: Any, *args: Any, **kwargs: Any) -> M:
            given: dict[str, Any] = {}
            if isinstance(obj, dict) and not wires.isdisjoint(obj):
                obj = dict(obj)
                given = {w: obj.pop(w) for w in wires & obj.keys()}
            model = validate(klass, obj, *args, **kwargs)
            kept = {w: v for w, v in given.items() if w in unsupported_all}
            if kept:
                object.__setattr__(model, "__pydantic_private__", {**(model.__pydantic_private__ or {}), _KEPT: kept})
            return cast("M", model)

        cls.model_validate = classmethod(model_validate)  # type: ignore[method-assign,assignment]
        cls.__compat_inert__ = inert_all  # type: ignore[attr-defined]
        cls.__compat_unsupported__ = unsupported_all  # type: ignore[attr-defined]
        return cls

    return wrap


#: where a validated model keeps the unsupported parameters it was given (pydantic's private slot)
_KEPT = "_compat_unsupported"


def inert_of(model: type[BaseModel]) -> dict[str, str]:
    return dict(getattr(model, "__compat_inert__", {}))


def unsupported_of(model: type[BaseModel]) -> dict[str, Unsupported]:
    return dict(getattr(model, "__compat_unsupported__", {}))


def check_unsupported(method: str, params: BaseModel) -> None:
    """Refuse an unsupported parameter set to a value that would change something."""
    given = (params.__pydantic_private__ or {}).get(_KEPT, {})
    for wire, why in getattr(type(params), "__compat_unsupported__", {}).items():
        value = given.get(wire)
        if value is not None and value not in why.harmless:
            raise InvalidRequest(f"invalid {method} params: {wire} is not supported by Homarus ({why.reason})")
