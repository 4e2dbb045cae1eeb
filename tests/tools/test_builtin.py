"""The built-in tools: ``current_time``'s written-out schema is the one its signature gives, and
its arguments are still validated against the signature."""

from __future__ import annotations

from pathlib import Path

import pytest

from homarus.errors import InvalidRequest
from homarus.messages import TextContent
from homarus.tools.base import ToolContext, tool_from_function
from homarus.tools.builtin import CURRENT_TIME_PARAMETERS, builtin_tools, current_time


def test_the_written_out_schema_is_the_derived_one() -> None:
    assert tool_from_function(current_time).parameters == CURRENT_TIME_PARAMETERS
    tools = {t.name: t for t in builtin_tools()}
    assert tools["current_time"].parameters is CURRENT_TIME_PARAMETERS


async def test_current_time_validates_and_answers(tmp_path: Path) -> None:
    tool = {t.name: t for t in builtin_tools()}["current_time"]
    ctx = ToolContext("agent:main:main", "main", "r", "c", tmp_path)
    result = await tool.execute(ctx, {"timezone": "Europe/Paris"})
    assert "CE" in "".join(c.text for c in result.content if isinstance(c, TextContent))
    with pytest.raises(InvalidRequest, match="invalid arguments for current_time"):
        await tool.execute(ctx, {"timezone": 3})
    with pytest.raises(InvalidRequest):
        await tool.execute(ctx, {"tz": "UTC"})
