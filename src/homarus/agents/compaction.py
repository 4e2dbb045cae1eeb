"""Compaction: replace the older part of a conversation with a model-written summary.

The pieces are pure functions (token estimates, the trigger, where to cut, the summariser's
request) plus :func:`compact`, which calls a summariser supplied by the caller. Nothing here
touches the transcript: the caller stores the :class:`CompactionResult`.

Token counts are estimates: ``ceil(chars / 4)``, an image counting as 4800 characters; the last
successful model reply's reported usage is trusted over estimates where it exists.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from homarus.errors import RuntimeFailure
from homarus.messages import (
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

__all__ = [
    "SUMMARY_PREFIX",
    "CompactionFailed",
    "CompactionResult",
    "build_summary_request",
    "compact",
    "context_tokens",
    "estimate_tokens",
    "find_cut",
    "is_summary_message",
    "memory_flush_due",
    "serialize_conversation",
    "should_compact",
    "summary_max_tokens",
    "summary_message",
]

#: how a compaction summary is introduced to the model (as the first, user-role message)
SUMMARY_PREFIX = "The conversation history before this point was compacted into the following summary:"
IMAGE_CHARS = 4800
#: what the summariser sees of one tool result
TOOL_RESULT_MAX_CHARS = 2000
_PATH_ARGS = ("path", "file_path")
_MODIFYING = ("write", "edit", "patch", "create", "append", "delete", "remove", "move", "rename")
_FILE_LIST_RE = re.compile(r"\n*<(read-files|modified-files)>\n(.*?)\n?</\1>", re.DOTALL)


class CompactionFailed(RuntimeFailure):
    """The summary could not be produced, or it would not have made the context smaller."""


@dataclass(slots=True)
class CompactionResult:
    summary: str
    #: index (into the messages given to :func:`compact`) of the first message kept verbatim
    first_kept_index: int
    #: the larger of the usage-based context size and the plain estimate of all messages
    tokens_before: int
    #: estimate of summary + kept messages (the system prompt and tools are not counted)
    tokens_after: int
    read_files: tuple[str, ...] = ()
    modified_files: tuple[str, ...] = ()


# -- estimates and triggers ----------------------------------------------------------------------
def _chars(message: Message) -> int:
    if isinstance(message, UserMessage) and isinstance(message.content, str):
        return len(message.content)
    total = 0
    for block in message.content:
        if isinstance(block, TextContent):
            total += len(block.text)
        elif isinstance(block, ThinkingContent):
            total += len(block.thinking)
        elif isinstance(block, ImageContent):
            total += IMAGE_CHARS
        elif isinstance(block, ToolCall):
            total += len(block.name) + len(json.dumps(block.arguments, ensure_ascii=False))
    return total


def estimate_tokens(message: Message) -> int:
    """``ceil(chars / 4)`` over text, thinking, tool-call name + argument JSON and images."""
    return math.ceil(_chars(message) / 4)


def _usage_tokens(usage: Usage) -> int:
    return usage.total_tokens or usage.input + usage.output + usage.cache_read + usage.cache_write


def context_tokens(messages: Sequence[Message]) -> int:
    """Size of the context: the last usable reported usage plus estimates of everything after it."""
    total = 0
    for message in reversed(messages):
        if isinstance(message, AssistantMessage) and message.stop_reason not in ("error", "aborted"):
            reported = _usage_tokens(message.usage)
            if reported > 0:
                return reported + total
        total += estimate_tokens(message)
    return total


def should_compact(tokens: int, context_window: int, reserve_tokens: int) -> bool:
    """True when the context has eaten into the reserve kept free below the window."""
    return context_window > 0 and tokens > context_window - reserve_tokens


def memory_flush_due(tokens: int, context_window: int, reserve_floor: int, soft_threshold: int) -> bool:
    """True when a pre-compaction memory flush turn should run (the caller runs it once per cycle)."""
    return context_window > 0 and tokens >= context_window - reserve_floor - soft_threshold


def summary_max_tokens(reserve_tokens: int) -> int:
    """Output budget for the summariser: 80 % of the reserve."""
    return max(1, int(reserve_tokens * 0.8))


# -- where to cut ----------------------------------------------------------------------------------
def find_cut(messages: Sequence[Message], keep_recent_tokens: int) -> int:
    """Index of the first message kept verbatim; 0 when nothing can be summarised.

    Walks back from the newest message until at least ``keep_recent_tokens`` are kept, then moves
    further back until the cut is not on a tool result and every kept tool result's call is kept.
    """
    kept = 0
    cut = 0
    for i in range(len(messages) - 1, -1, -1):
        kept += estimate_tokens(messages[i])
        if kept >= keep_recent_tokens:
            cut = i
            break
    if cut <= 0:
        return 0
    call_owner: dict[str, int] = {}
    for i, message in enumerate(messages):
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                call_owner.setdefault(call.id, i)
    checked = len(messages)
    while cut > 0:
        earliest = cut
        for i in range(cut, checked):
            message = messages[i]
            if isinstance(message, ToolResultMessage):
                earliest = min(earliest, call_owner.get(message.tool_call_id, earliest))
        checked = cut
        if isinstance(messages[cut], ToolResultMessage):
            earliest = min(earliest, cut - 1)
        if earliest == cut:
            break
        cut = earliest
    return cut


# -- the summary as the model sees it --------------------------------------------------------------
def summary_message(summary: str) -> UserMessage:
    return UserMessage([TextContent(f"{SUMMARY_PREFIX}\n\n{summary}")])


def is_summary_message(message: Message) -> bool:
    return isinstance(message, UserMessage) and message.text.startswith(SUMMARY_PREFIX)


def _summary_text(message: UserMessage) -> str:
    return message.text[len(SUMMARY_PREFIX) :].strip()


# -- the summariser's request ----------------------------------------------------------------------
def _neutralise(text: str) -> str:
    """Keep message text from closing the wrapper tags of the request."""
    return re.sub(r"</(conversation|previous-summary)>", r"</ \1>", text)


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} more characters truncated]"


def serialize_conversation(messages: Sequence[Message]) -> str:
    """The messages as role-tagged plain text inside ``<conversation>…</conversation>``."""
    lines: list[str] = []
    for message in messages:
        if isinstance(message, UserMessage):
            images = (
                0 if isinstance(message.content, str) else sum(isinstance(b, ImageContent) for b in message.content)
            )
            text = message.text + (f" [{images} image(s)]" if images else "")
            lines.append(f"[User]: {text}")
        elif isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, ThinkingContent) and block.thinking.strip():
                    lines.append(f"[Assistant thinking]: {block.thinking}")
                elif isinstance(block, TextContent) and block.text.strip():
                    lines.append(f"[Assistant]: {block.text}")
                elif isinstance(block, ToolCall):
                    args = json.dumps(block.arguments, ensure_ascii=False, sort_keys=True)
                    lines.append(f"[Assistant tool call]: {block.name} {args}")
            if message.stop_reason in ("error", "aborted"):
                lines.append(f"[Assistant {message.stop_reason}]: {message.error_message or ''}".rstrip())
        else:
            status = " (error)" if message.is_error else ""
            images = sum(isinstance(b, ImageContent) for b in message.content)
            text = _clip(message.text, TOOL_RESULT_MAX_CHARS) + (f" [{images} image(s)]" if images else "")
            lines.append(f"[Tool result {message.tool_name}{status}]: {text}")
    body = _neutralise("\n\n".join(lines))
    return f"<conversation>\n{body}\n</conversation>"


_SYSTEM_PROMPT = (
    "You write context summaries. Another model will continue this conversation using only your "
    "summary and the most recent messages, so it must be able to pick up the work without asking "
    "what happened. Do not continue the conversation and do not answer questions in it: output "
    "only the structured summary."
)

_SECTIONS = """Use exactly these Markdown sections:

## Goal
What the user wants to achieve (several goals as a list).

## Constraints & Preferences
Requirements, limits and preferences the user stated or implied.

## Progress
### Done
- [x] finished work
### In Progress
- [ ] work under way
### Blocked
- problems stopping progress, if any

## Key Decisions
- **decision**: why it was made

## Next Steps
1. what should happen next, in order

## Critical Context
- data, references or findings needed to continue

Copy file paths, function and variable names, identifiers (IDs, hashes, URLs) and error messages \
exactly as written. Be concise; drop small talk and anything already resolved that no longer matters."""

_UPDATE_TASK = """Above are new messages since the last compaction, and the summary written then in \
<previous-summary>. Update that summary with the new messages: keep everything from it that still \
holds, add new goals, constraints and decisions, move finished items from In Progress to Done, and \
rewrite Next Steps for the current state."""

_INITIAL_TASK = "Above is a conversation to summarise so that the work can continue from the summary alone."


def build_summary_request(
    messages: Sequence[Message], previous_summary: str | None, custom_instructions: str | None
) -> tuple[str, str]:
    """(system prompt, user text) for the summariser; with ``previous_summary`` the update variant."""
    parts = [serialize_conversation(messages)]
    previous = _split_file_lists(previous_summary)[0] if previous_summary else ""
    if previous:
        parts.append(f"<previous-summary>\n{_neutralise(previous)}\n</previous-summary>")
        parts.append(_UPDATE_TASK)
    else:
        parts.append(_INITIAL_TASK)
    parts.append(_SECTIONS)
    if custom_instructions and custom_instructions.strip():
        parts.append(f"Additional focus for this summary: {custom_instructions.strip()}")
    return _SYSTEM_PROMPT, "\n\n".join(parts)


# -- files touched ------------------------------------------------------------------------------------
def _split_file_lists(summary: str | None) -> tuple[str, list[str], list[str]]:
    """(summary without its file lists, files read, files modified)."""
    if not summary:
        return "", [], []
    found: dict[str, list[str]] = {"read-files": [], "modified-files": []}
    for match in _FILE_LIST_RE.finditer(summary):
        found[match.group(1)].extend(line.strip() for line in match.group(2).splitlines() if line.strip())
    return _FILE_LIST_RE.sub("", summary).strip(), found["read-files"], found["modified-files"]


def _files_touched(messages: Sequence[Message]) -> tuple[list[str], list[str]]:
    read: list[str] = []
    modified: list[str] = []
    for message in messages:
        if not isinstance(message, AssistantMessage):
            continue
        for call in message.tool_calls:
            path = next((call.arguments[k] for k in _PATH_ARGS if isinstance(call.arguments.get(k), str)), None)
            if path:
                name = call.name.lower()
                (modified if any(word in name for word in _MODIFYING) else read).append(path)
    return read, modified


def _file_lists(read: list[str], modified: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    mod = tuple(sorted(set(modified)))
    return tuple(sorted(set(read) - set(mod))), mod


def _with_file_lists(summary: str, read: Sequence[str], modified: Sequence[str]) -> str:
    out = summary
    if read:
        out += "\n\n<read-files>\n" + "\n".join(read) + "\n</read-files>"
    if modified:
        out += "\n\n<modified-files>\n" + "\n".join(modified) + "\n</modified-files>"
    return out


# -- the orchestrator ------------------------------------------------------------------------------------
async def compact(
    messages: Sequence[Message],
    *,
    previous_summary: str | None,
    keep_recent_tokens: int,
    summarize: Callable[[str, str], Awaitable[str]],
    custom_instructions: str | None = None,
) -> CompactionResult | None:
    """Summarise everything before the cut; None when there is nothing to summarise.

    ``messages`` is the live context. A leading summary message (as built by
    :func:`summary_message`) is recognised: it is never re-serialised, and its text serves as the
    previous summary when ``previous_summary`` is not given. ``summarize(system, user)`` returns
    the model's text. Raises :class:`CompactionFailed` if it fails, returns nothing, or the result
    would not be smaller than what it replaces.
    """
    start = 0
    head = messages[0] if messages else None
    if isinstance(head, UserMessage) and is_summary_message(head):
        start = 1
        if previous_summary is None:
            previous_summary = _summary_text(head)
    cut = find_cut(messages, keep_recent_tokens)
    if cut <= start:
        return None
    dropped = messages[start:cut]
    system, user = build_summary_request(dropped, previous_summary, custom_instructions)
    try:
        text = await summarize(system, user)
    except Exception as exc:
        raise CompactionFailed(f"compaction failed: the summary request failed: {exc}") from exc
    body = _split_file_lists(text)[0] if text else ""
    if not body:
        raise CompactionFailed("compaction failed: the summariser returned an empty summary")

    _, old_read, old_modified = _split_file_lists(previous_summary)
    new_read, new_modified = _files_touched(dropped)
    read, modified = _file_lists(old_read + new_read, old_modified + new_modified)
    summary = _with_file_lists(body, read, modified)

    replaced = sum(estimate_tokens(m) for m in messages[:cut])
    replacement = estimate_tokens(summary_message(summary))
    if replacement >= replaced:
        raise CompactionFailed(
            f"compaction failed: the summary (~{replacement} tokens) is not smaller than "
            f"what it replaces (~{replaced} tokens)"
        )
    tokens_before = max(context_tokens(messages), sum(estimate_tokens(m) for m in messages))
    kept = sum(estimate_tokens(m) for m in messages[cut:])
    return CompactionResult(summary, cut, tokens_before, replacement + kept, read, modified)
