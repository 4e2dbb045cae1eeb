"""Validation messages in the original's wording (AJV style), from pydantic errors.

Clients match on these strings: ``at root: unexpected property 'x'``,
``at /client: must have required property 'id'``, joined by ``; ``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

__all__ = ["format_errors"]

_TYPE_WORDS = {
    "string_type": "must be string",
    "int_type": "must be integer",
    "int_from_float": "must be integer",
    "float_type": "must be number",
    "bool_type": "must be boolean",
    "list_type": "must be array",
    "tuple_type": "must be array",
    "dict_type": "must be object",
    "model_type": "must be object",
    "model_attributes_type": "must be object",
    "literal_error": "must be equal to one of the allowed values",
    "enum": "must be equal to one of the allowed values",
    "none_required": "must be null",
}


def _pointer(loc: Sequence[Any]) -> str:
    return "/" + "/".join(str(p) for p in loc) if loc else "root"


def _one(err: Any) -> str:
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
    kind = err["type"]
    ctx = err.get("ctx") or {}
    if kind == "extra_forbidden":
        return f"at {_pointer(loc[:-1])}: unexpected property '{loc[-1]}'"
    if kind == "missing":
        return f"at {_pointer(loc[:-1])}: must have required property '{loc[-1]}'"
    if kind in ("string_too_short", "too_short"):
        n = ctx.get("min_length", 1)
        noun = "characters" if kind == "string_too_short" else "items"
        return f"at {_pointer(loc)}: must NOT have fewer than {n} {noun}"
    if kind in ("string_too_long", "too_long"):
        n = ctx.get("max_length")
        noun = "characters" if kind == "string_too_long" else "items"
        return f"at {_pointer(loc)}: must NOT have more than {n} {noun}"
    if kind == "greater_than_equal":
        return f"at {_pointer(loc)}: must be >= {ctx.get('ge')}"
    if kind == "less_than_equal":
        return f"at {_pointer(loc)}: must be <= {ctx.get('le')}"
    if kind == "string_pattern_mismatch":
        return f'at {_pointer(loc)}: must match pattern "{ctx.get("pattern")}"'
    if kind in _TYPE_WORDS:
        return f"at {_pointer(loc)}: {_TYPE_WORDS[kind]}"
    return f"at {_pointer(loc)}: {str(err['msg']).removeprefix('Value error, ')}"


def format_errors(exc: ValidationError) -> str:
    messages = [_one(e) for e in exc.errors()]
    return "; ".join(dict.fromkeys(messages)) or "unknown validation error"
