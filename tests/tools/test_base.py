"""Tools from typed functions: the schema the model sees, and the validation the call gets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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


async def test_tool_schema_returns_the_named_tools_parameters_and_refuses_bad_arguments(tmp_path: Path) -> None:
    from homarus.tools.base import tool_schema_tool

    async def greet(ctx: ToolContext, name: str, times: int = 1) -> str:
        """Greet someone."""
        return "hi " * times + name

    tool = tool_schema_tool({"greet": tool_from_function(greet)})
    ctx = ToolContext("agent:main:main", "main", "r", "c", tmp_path)
    found = await tool.execute(ctx, {"names": ["greet", "nope"]})
    text = found.content[0].text if isinstance(found.content[0], TextContent) else ""
    assert '"name"' in text and "unknown tools: nope" in text and not found.is_error
    assert (await tool.execute(ctx, {"names": ["nope"]})).is_error
    for bad in ({}, {"names": "greet"}, {"names": [1]}, {"names": ["greet"], "extra": 1}):
        with pytest.raises(InvalidRequest, match="names: a list of tool names"):
            await tool.execute(ctx, bad)


async def test_a_deferred_tools_schema_is_derived_once_on_first_need(tmp_path: Path) -> None:
    deferred = tool_from_function(lookup, deferred=True)
    eager = tool_from_function(lookup)
    assert callable(deferred.schema) and not callable(eager.schema)  # nothing derived yet
    assert deferred.parameters == eager.parameters
    assert deferred.parameters is deferred.parameters  # built once, then kept
    ctx = ToolContext("agent:main:main", "main", "run", "call", tmp_path)
    fresh = tool_from_function(lookup, deferred=True)
    assert (await fresh.execute(ctx, {"title": "a"})).content == [TextContent("a|None|x")]  # a call builds it too
    with pytest.raises(InvalidRequest, match="limit"):
        await fresh.execute(ctx, {"title": "a", "limit": "many"})


def test_every_builtin_deferred_tool_derives_a_schema() -> None:
    """A signature pydantic cannot read would otherwise only fail when the model first asks."""
    from homarus.browser.tool import make_browser_tool
    from homarus.tools.builtin import builtin_tools
    from homarus.tools.cron_tool import cron_tool
    from homarus.tools.memory_tools import memory_tools
    from homarus.tools.session_tools import session_tools
    from homarus.tools.subagents import subagent_tools

    def no_hub() -> Any:
        raise AssertionError("building a schema must not start a browser")

    made = [*builtin_tools(), *session_tools(), *memory_tools(), *subagent_tools(), cron_tool()]
    made.append(make_browser_tool(no_hub))
    deferred = {t.name: t for t in made if t.deferred}
    assert {"browser", "cron", "memory_get", "session_status", "sessions_list", "sessions_spawn"} <= set(deferred)
    for tool in deferred.values():
        assert tool.parameters["type"] == "object" and "properties" in tool.parameters, tool.name
