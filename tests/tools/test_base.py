"""Tools from typed functions: the schema the model sees, and the validation the call gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from homarus.errors import InvalidRequest
from homarus.messages import TextContent
from homarus.tools.base import ToolContext, ToolResult, tool_from_function


async def lookup(ctx: ToolContext, title: str, limit: int | None = None, default: str = "x") -> ToolResult:
    """Look something up."""
    return ToolResult.text(f"{title}|{limit}|{default}")


def test_schema_is_compact_and_keeps_parameter_names() -> None:
    tool = tool_from_function(lookup)
    props = tool.parameters["properties"]
    # parameters named like schema keywords survive; pydantic's titles do not
    assert set(props) == {"title", "limit", "default"}
    assert props["title"] == {"type": "string"}
    # an optional parameter is stated as its type alone: leaving it out is what optional means
    assert props["limit"] == {"type": "integer"}
    assert props["default"] == {"default": "x", "type": "string"}
    assert tool.parameters["required"] == ["title"]
    assert "title" not in tool.parameters and "additionalProperties" not in tool.parameters


async def test_explicit_null_is_still_accepted_and_bad_types_refused(tmp_path: Path) -> None:
    tool = tool_from_function(lookup)
    ctx = ToolContext("agent:main:main", "main", "run", "call", tmp_path)
    result = await tool.execute(ctx, {"title": "a", "limit": None})
    assert result.content == [TextContent("a|None|x")]
    with pytest.raises(InvalidRequest, match="limit"):
        await tool.execute(ctx, {"title": "a", "limit": "many"})


async def test_unknown_arguments_are_refused(tmp_path: Path) -> None:
    tool = tool_from_function(lookup)
    ctx = ToolContext("agent:main:main", "main", "run", "call", tmp_path)
    with pytest.raises(InvalidRequest, match="colour: Extra inputs are not permitted"):
        await tool.execute(ctx, {"title": "a", "colour": "red"})
