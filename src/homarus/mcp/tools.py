"""An MCP server's tools as Homarus tools: ``<server>__<tool>``, described by the server's own
schema, in groups ``group:mcp`` and ``mcp:<server>``, called through the server's connection.

What a server answers is external content: its text reaches the model inside the untrusted-content
wrapper, capped at ``maxOutputChars``; images pass as image parts (capped); audio, binary
resources and links become a short note.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Final

import mcp_types as mt

from homarus.messages import ImageContent, TextContent
from homarus.security.external_content import wrap_external_content
from homarus.tools.base import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from mcp_types import CallToolResult
    from mcp_types import Tool as McpTool

    from homarus.mcp.connection import McpConnection

__all__ = ["MAX_IMAGE_BYTES", "TOOL_NAME_MAX", "as_tool", "result_of", "tool_name"]

#: providers accept tool names up to 64 characters of [A-Za-z0-9_-]
TOOL_NAME_MAX: Final = 64
MAX_IMAGE_BYTES: Final = 5_000_000
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    return f"{server}__{_UNSAFE.sub('_', tool)}"[:TOOL_NAME_MAX]


def as_tool(conn: McpConnection, spec: McpTool, name: str) -> Tool:
    schema = spec.input_schema if isinstance(spec.input_schema, dict) else {"type": "object"}
    description = (spec.description or spec.title or spec.name).strip()

    async def execute(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        def progress(done: float, total: float | None, message: str | None) -> None:
            if ctx.on_update is not None:
                ctx.on_update({"progress": done, "total": total, "message": message})

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress(done, total, message)

        result = await conn.call(spec.name, args, on_progress=on_progress)
        return result_of(conn.name, spec.name, result, conn.cfg.max_output_chars)

    return Tool(
        name=name,
        description=f"{description} (MCP server {conn.name!r})",
        schema=schema,
        execute=execute,
        label=spec.title or spec.name,
        tags=frozenset({"mcp", f"mcp:{conn.name}"}),
        summary=(description.split("\n", 1)[0])[:120],
    )


def result_of(server: str, tool: str, result: CallToolResult, max_chars: int) -> ToolResult:
    texts: list[str] = []
    images: list[ImageContent] = []
    for block in result.content:
        if isinstance(block, mt.TextContent):
            texts.append(block.text)
        elif isinstance(block, mt.ImageContent):
            if len(block.data) * 3 // 4 <= MAX_IMAGE_BYTES:
                images.append(ImageContent(block.data, block.mime_type))
            else:
                texts.append(f"[image omitted: larger than {MAX_IMAGE_BYTES} bytes]")
        elif isinstance(block, mt.EmbeddedResource):
            res = block.resource
            if isinstance(res, mt.TextResourceContents):
                texts.append(f"[resource {res.uri}]\n{res.text}")
            else:
                texts.append(f"[binary resource {res.uri} omitted]")
        elif isinstance(block, mt.ResourceLink):
            texts.append(f"[resource link: {block.uri}]")
        else:
            texts.append(f"[{getattr(block, 'type', 'unknown')} content omitted]")
    if not texts and not images and result.structured_content is not None:
        texts.append(json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n".join(texts)
    if len(text) > max_chars:
        text = text[:max_chars] + f"\n[… cut at {max_chars} characters]"
    content: list[TextContent | ImageContent] = [
        TextContent(wrap_external_content(text, source=f"MCP server {server!r}, tool {tool!r}"))
    ]
    content.extend(images)
    return ToolResult(content, details={"server": server, "tool": tool}, is_error=result.is_error)
