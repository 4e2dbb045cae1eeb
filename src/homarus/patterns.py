"""String patterns of the pydantic models, matched with Python's ``re``: ``Annotated[str, Pattern(r"^…$")]``.

Why not pydantic's own ``Field(pattern=…)``: pydantic-core compiles those with Rust's regex crate,
whose code — about 0.6 MiB of the extension's pages — is paged into the process with the first
pattern it compiles, and a gateway compiles its first one as soon as it reads its configuration.
Python's ``re`` is loaded in every interpreter already. pydantic's ``regex_engine="python-re"``
setting is not the answer either: it matches ``$`` before a final newline (so ``"main\\n"`` would
pass ``^[a-z]+$``), and rewriting the patterns with ``\\Z`` would put an escape into the JSON
schemas the Control UI compiles, which its JavaScript regular expressions reject.

So the JSON schema carries the pattern as written, and the matching keeps pydantic's semantics:
an unanchored search where ``$`` is the end of the text; a mismatch is the same error
(``string_pattern_mismatch``, "String should match pattern '…'").
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

__all__ = ["Pattern", "python_pattern"]


def python_pattern(pattern: str) -> str:
    """``pattern`` for Python's ``re`` with the meaning it has in Rust and ECMAScript: each ``$``
    outside a character class becomes ``\\Z`` (the end of the text, never before a final newline)."""
    out: list[str] = []
    in_class = escaped = False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "$":
            out.append(r"\Z")
            continue
        out.append(char)
    return "".join(out)


@functools.cache  # the patterns written in the code: a few dozen
def _compiled(source: str) -> re.Pattern[str]:
    """Compiled with the first value it checks: a model built at start whose field is not in the
    input costs no compilation."""
    return re.compile(python_pattern(source))


@dataclass(frozen=True, slots=True)
class Pattern:
    """The value must contain a match of ``source`` (anchor it with ``^…$`` for the whole value).

    The string's other constraints go before it, inside the ``Annotated``
    (``Annotated[str, Field(max_length=512), Pattern(…)]``): given to a ``Field`` beside the
    annotation, pydantic would apply them to this validator's result as to any value, with
    another error ("too_long", not "string_too_long")."""

    source: str

    def __get_pydantic_core_schema__(self, source_type: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        source = self.source
        context = {"pattern": source}

        def check(value: str) -> str:
            if _compiled(source).search(value) is None:
                raise PydanticCustomError("string_pattern_mismatch", "String should match pattern '{pattern}'", context)
            return value

        return core_schema.no_info_after_validator_function(check, handler(source_type))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        json_schema = handler(schema)
        json_schema["pattern"] = self.source
        return json_schema
