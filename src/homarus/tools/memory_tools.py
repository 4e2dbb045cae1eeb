"""``memory_search`` and ``memory_get``: the agent's recall of its Markdown memory.

The tools do not import the memory package (tools and memory are sibling layers): the gateway
lends the agent's memory manager as ``ctx.services.memory``, typed here by
:class:`MemoryService`. Without one, both tools answer with ``disabled: true`` and an error the
model is told to surface, instead of pretending nothing was remembered.

Results are JSON text in the original's shapes (``results[]`` with path, line span, score,
snippet, source and a ``path#Lx-Ly`` citation), plus what Homarus adds for honesty: ``mode``
(``hybrid`` / ``vector`` / ``fts-only`` and the reason), and ``index`` (``fresh`` / ``syncing`` /
``stale``).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import Field

from homarus.errors import HomarusError
from homarus.tools.base import Tool, ToolContext, ToolResult, tool_from_function
from homarus.tools.services import MemoryService

__all__ = ["memory_tools"]

DISABLED_MESSAGE = "memory is disabled"
MAX_QUERY_CHARS = 2000


def _service(ctx: ToolContext) -> MemoryService | None:
    svc = ctx.services.memory
    return svc


def _json(payload: dict[str, Any], *, is_error: bool = False) -> ToolResult:
    return ToolResult.text(json.dumps(payload, ensure_ascii=False), details=payload, is_error=is_error)


def _unavailable(error: str) -> ToolResult:
    return _json(
        {
            "results": [],
            "disabled": True,
            "unavailable": True,
            "error": error,
            "warning": "Memory search is unavailable; say so instead of answering as if nothing was remembered.",
            "action": "Tell the user memory retrieval is unavailable.",
        },
        is_error=True,
    )


async def memory_search(
    ctx: ToolContext,
    query: str,
    maxResults: Annotated[int | None, Field(ge=1, le=50)] = None,
    minScore: Annotated[float | None, Field(ge=0, le=1)] = None,
) -> ToolResult:
    """Mandatory recall step: search MEMORY.md and memory/*.md (keywords and meaning) before answering questions about prior work, decisions, dates, people, preferences or todos.

    Returns the best snippets with path, line span and a path#Lx-Ly citation; use memory_get to
    read more lines. "index" says whether the memory index is fresh, syncing or stale, and "mode"
    whether vector search took part. If the response has disabled=true, memory retrieval is
    unavailable and that should be surfaced to the user.
    """  # noqa: E501 - the first paragraph is the tool summary sent to the model
    svc = _service(ctx)
    if svc is None:
        return _unavailable(DISABLED_MESSAGE)
    if not query.strip():
        return _json({"results": [], "error": "query is empty"}, is_error=True)
    try:
        response = await svc.search(query[:MAX_QUERY_CHARS], max_results=maxResults, min_score=minScore)
    except HomarusError as exc:
        return _unavailable(exc.message)
    except Exception as exc:  # the manager promises not to raise; if it does, the run goes on
        return _unavailable(f"memory search failed: {type(exc).__name__}: {exc}")
    return _json(response.to_dict())


async def memory_get(
    ctx: ToolContext,
    path: str,
    from_: Annotated[int | None, Field(alias="from", ge=1)] = None,
    lines: Annotated[int | None, Field(ge=1, le=10_000)] = None,
) -> ToolResult:
    """Read lines from MEMORY.md, memory/*.md or a configured extra memory path.

    Use after memory_search to pull only the lines needed and keep the context small: from is the
    1-based first line (default 1), lines how many (default: to the end of the file).
    """
    svc = _service(ctx)
    if svc is None:
        return _json({"path": path, "text": "", "disabled": True, "error": DISABLED_MESSAGE}, is_error=True)
    try:
        result = await svc.read(path, from_line=from_, lines=lines)
    except HomarusError as exc:
        return _json({"path": path, "text": "", "error": exc.message}, is_error=True)
    except OSError as exc:
        return _json({"path": path, "text": "", "error": f"read failed: {exc.strerror or exc}"}, is_error=True)
    payload: dict[str, Any] = result.to_dict()
    return _json(payload)


def memory_tools() -> list[Tool]:
    return [
        tool_from_function(memory_search, summary="Recall: search memory before answering about the past"),
        tool_from_function(memory_get, summary="Read lines of a memory file", deferred=True),
    ]
