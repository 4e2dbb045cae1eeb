"""``homarus.patterns``: string patterns matched with Python's ``re``, with pydantic's own semantics,
errors and JSON schema, so that pydantic-core's Rust regex engine is never paged in."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field, ValidationError

from homarus.patterns import Pattern, python_pattern

SRC = Path(__file__).resolve().parents[1] / "src" / "homarus"
DURATION = r"^(\d+(ms|s|m|h|d)|0|off)$"


class Ours(BaseModel):
    every: Annotated[str, Pattern(DURATION)] = "30m"
    url: Annotated[str, Field(max_length=40), Pattern(r"^https?://\S+$")] | None = None


class Native(BaseModel):  # pydantic's own pattern (the Rust engine): what ours must equal
    every: str = Field("30m", pattern=DURATION)
    url: str | None = Field(None, pattern=r"^https?://\S+$", max_length=40)


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"^a$", r"^a\Z"),
        (r"^(a|b)$", r"^(a|b)\Z"),
        (r"^a\$b$", r"^a\$b\Z"),  # an escaped dollar is a character
        (r"^[$x]+$", r"^[$x]+\Z"),  # so is one in a class
        (r"^[\]$]$", r"^[\]$]\Z"),  # an escaped bracket does not end the class
        (r"^https?://", r"^https?://"),
    ],
)
def test_python_pattern_reads_dollar_as_the_end_of_the_text(pattern: str, expected: str) -> None:
    assert python_pattern(pattern) == expected


@pytest.mark.parametrize("value", ["5m", "250ms", "0", "off", "12h"])
def test_values_that_match_pass_as_they_do_natively(value: str) -> None:
    assert Ours(every=value).every == Native(every=value).every == value


@pytest.mark.parametrize("value", ["5m\n", "off\n", "x", "", "5 m", "5m5", "٣m\n"])
def test_values_that_do_not_match_fail_with_the_native_error(value: str) -> None:
    assert _failure(Ours, every=value) == _failure(Native, every=value)


@pytest.mark.parametrize("value", ["https://example.org/" + "x" * 30, "ftp://x", "https://a b", "https://x\n"])
def test_other_constraints_and_optional_fields_fail_alike(value: str) -> None:
    assert _failure(Ours, url=value) == _failure(Native, url=value)
    assert Ours(url=None).url is None


def test_the_json_schema_carries_the_pattern_as_written() -> None:
    for mode in ("validation", "serialization"):
        ours, native = Ours.model_json_schema(mode=mode), Native.model_json_schema(mode=mode)
        ours["title"] = native["title"]
        assert ours == native
    assert Ours.model_json_schema()["properties"]["every"]["pattern"] == DURATION


def test_no_model_of_the_package_uses_pydantics_own_pattern() -> None:
    """One ``Field(pattern=...)`` anywhere pages the Rust engine in for the whole process."""
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not any(k.arg == "pattern" for k in node.keywords):
                continue
            if _callee(node) in ("Field", "constr", "StringConstraints"):
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert offenders == []


def test_no_length_constraint_is_given_beside_a_pattern() -> None:
    """Beside the annotation it would check the validator's result with the wrong error."""
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.AnnAssign) or "Pattern(" not in ast.unparse(node.annotation):
                continue
            value = node.value
            if isinstance(value, ast.Call) and _callee(value) == "Field" and _has_length(value):
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert offenders == []


def _has_length(call: ast.Call) -> bool:
    return any(k.arg in ("min_length", "max_length") for k in call.keywords)


def _callee(call: ast.Call) -> str:
    return call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", "")


def _failure(model: type[BaseModel], **fields: str) -> list[dict[str, Any]]:
    with pytest.raises(ValidationError) as caught:
        model(**fields)
    return [{k: e[k] for k in ("type", "loc", "msg", "input", "ctx") if k in e} for e in caught.value.errors()]
