"""Messages, content blocks, usage and the model stream events shared by providers, tools and agents.

Dataclasses inside; ``to_json``/``from_json`` convert to the transcript's camelCase shape
(``{"role":"assistant","content":[{"type":"toolCall","id",...}],"stopReason":...}``).
"""

from __future__ import annotations

import asyncio
import operator
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

__all__ = [
    "AssistantMessage",
    "Context",
    "Cost",
    "Done",
    "ImageContent",
    "Message",
    "ModelInfo",
    "StopReason",
    "StreamError",
    "StreamEvent",
    "StreamOptions",
    "TextContent",
    "TextDelta",
    "ThinkingContent",
    "ThinkingDelta",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolResultMessage",
    "ToolSpec",
    "Usage",
    "UserMessage",
    "kept_prefix",
    "message_from_json",
    "now_ms",
]

StopReason = Literal["stop", "length", "toolUse", "error", "aborted"]


def now_ms() -> int:
    return int(time.time() * 1000)


# -- content blocks ---------------------------------------------------------------------------
@dataclass(slots=True)
class TextContent:
    text: str
    type: Literal["text"] = "text"

    def to_json(self) -> dict[str, Any]:
        return {"type": "text", "text": self.text}


@dataclass(slots=True)
class ThinkingContent:
    thinking: str
    signature: str | None = None
    type: Literal["thinking"] = "thinking"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "thinking", "thinking": self.thinking}
        if self.signature:
            out["thinkingSignature"] = self.signature
        return out


@dataclass(slots=True)
class ImageContent:
    data: str
    mime_type: str
    type: Literal["image"] = "image"

    def to_json(self) -> dict[str, Any]:
        return {"type": "image", "data": self.data, "mimeType": self.mime_type}


@dataclass(slots=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    type: Literal["toolCall"] = "toolCall"
    #: set when the model's argument JSON did not parse; the loop answers with an error result
    parse_error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"type": "toolCall", "id": self.id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_arguments(cls, call_id: str, name: str, raw: str) -> ToolCall:
        """A call from its finished argument JSON; broken JSON keeps the call, with ``parse_error`` set."""
        import json

        try:
            args = json.loads(raw) if raw.strip() else {}
        except ValueError as exc:
            return cls(call_id, name, {}, parse_error=f"invalid JSON arguments: {exc}")
        if not isinstance(args, dict):
            return cls(call_id, name, {}, parse_error="tool arguments must be a JSON object")
        return cls(call_id, name, args)


UserBlock: TypeAlias = TextContent | ImageContent
AssistantBlock: TypeAlias = TextContent | ThinkingContent | ToolCall


@dataclass(slots=True)
class Cost:
    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0


@dataclass(slots=True)
class Usage:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: Cost = field(default_factory=Cost)

    def to_json(self) -> dict[str, Any]:
        c = self.cost
        return {
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
            "totalTokens": self.total_tokens,
            "cost": {
                "input": c.input,
                "output": c.output,
                "cacheRead": c.cache_read,
                "cacheWrite": c.cache_write,
                "total": c.total,
            },
        }

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Usage:
        if not data:
            return cls()
        c = data.get("cost") or {}
        return cls(
            int(data.get("input", 0)),
            int(data.get("output", 0)),
            int(data.get("cacheRead", 0)),
            int(data.get("cacheWrite", 0)),
            int(data.get("totalTokens", 0)),
            Cost(
                float(c.get("input", 0)),
                float(c.get("output", 0)),
                float(c.get("cacheRead", 0)),
                float(c.get("cacheWrite", 0)),
                float(c.get("total", 0)),
            ),
        )


# -- messages -----------------------------------------------------------------------------------
@dataclass(slots=True)
class UserMessage:
    content: str | list[UserBlock]
    timestamp: int = field(default_factory=now_ms)
    role: Literal["user"] = "user"

    def to_json(self) -> dict[str, Any]:
        content = self.content if isinstance(self.content, str) else [b.to_json() for b in self.content]
        return {"role": "user", "content": content, "timestamp": self.timestamp}

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "\n".join(b.text for b in self.content if isinstance(b, TextContent))


@dataclass(slots=True)
class AssistantMessage:
    content: list[AssistantBlock] = field(default_factory=list)
    api: str = ""
    provider: str = ""
    model: str = ""
    usage: Usage = field(default_factory=Usage)
    stop_reason: StopReason = "stop"
    error_message: str | None = None
    timestamp: int = field(default_factory=now_ms)
    role: Literal["assistant"] = "assistant"

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextContent))

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [b for b in self.content if isinstance(b, ToolCall)]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "role": "assistant",
            "content": [b.to_json() for b in self.content],
            "api": self.api,
            "provider": self.provider,
            "model": self.model,
            "usage": self.usage.to_json(),
            "stopReason": self.stop_reason,
            "timestamp": self.timestamp,
        }
        if self.error_message:
            out["errorMessage"] = self.error_message
        return out


@dataclass(slots=True)
class ToolResultMessage:
    tool_call_id: str
    tool_name: str
    content: list[UserBlock]
    is_error: bool = False
    details: Any = None
    timestamp: int = field(default_factory=now_ms)
    role: Literal["toolResult"] = "toolResult"

    @property
    def text(self) -> str:
        return "\n".join(b.text for b in self.content if isinstance(b, TextContent))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "role": "toolResult",
            "toolCallId": self.tool_call_id,
            "toolName": self.tool_name,
            "content": [b.to_json() for b in self.content],
            "isError": self.is_error,
            "timestamp": self.timestamp,
        }
        if self.details is not None:
            out["details"] = self.details
        return out


Message: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage


def _block(data: dict[str, Any]) -> TextContent | ThinkingContent | ImageContent | ToolCall:
    kind = data.get("type")
    if kind == "text":
        return TextContent(str(data.get("text", "")))
    if kind == "thinking":
        return ThinkingContent(str(data.get("thinking", "")), data.get("thinkingSignature"))
    if kind == "image":
        return ImageContent(str(data.get("data", "")), str(data.get("mimeType", "")))
    if kind == "toolCall":
        args = data.get("arguments")
        return ToolCall(str(data["id"]), str(data["name"]), args if isinstance(args, dict) else {})
    raise ValueError(f"unknown content block type {kind!r}")


def message_from_json(data: dict[str, Any]) -> Message:
    """Rebuild a message stored in a transcript (already validated when it was written)."""
    role = data.get("role")
    ts = int(data.get("timestamp") or now_ms())
    if role == "user":
        content = data.get("content")
        if isinstance(content, str):
            return UserMessage(content, ts)
        blocks = [b for b in (_block(x) for x in content or []) if isinstance(b, TextContent | ImageContent)]
        return UserMessage(blocks, ts)
    if role == "assistant":
        blocks_a = [b for b in (_block(x) for x in data.get("content") or []) if not isinstance(b, ImageContent)]
        return AssistantMessage(
            blocks_a,
            str(data.get("api", "")),
            str(data.get("provider", "")),
            str(data.get("model", "")),
            Usage.from_json(data.get("usage")),
            data.get("stopReason") or "stop",
            data.get("errorMessage"),
            ts,
        )
    if role == "toolResult":
        blocks_r = [
            b for b in (_block(x) for x in data.get("content") or []) if isinstance(b, TextContent | ImageContent)
        ]
        return ToolResultMessage(
            str(data["toolCallId"]),
            str(data.get("toolName", "")),
            blocks_r,
            bool(data.get("isError")),
            data.get("details"),
            ts,
        )
    raise ValueError(f"unknown message role {role!r}")


# -- requests -------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]
    #: a few words for the system prompt's tool list (empty: the description's first sentence)
    summary: str = ""


@dataclass(slots=True)
class Context:
    system_prompt: str
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    #: where a provider may keep what it derived from these messages for the next request of the
    #: same conversation (its wire form per message: a turn converts only its new messages); the
    #: caller owns the dict and its lifetime (a session's cached transcript view); None: nothing kept
    cache: dict[str, Any] | None = None


def kept_prefix(before: Sequence[object], ends: Sequence[int], now: Sequence[object]) -> int:
    """How many leading messages of ``now`` a pass kept from the last request can stand for: those
    ``now`` shares with it (the same objects in the same order: its history), cut back to the last
    one after which the pass was in a clean state (``ends[i] >= 0``; -1 marks a message that left
    something pending, such as a tool call still open). 0: start over."""
    same = list(map(operator.is_, before, now))  # in C: a few microseconds for a long history
    try:
        n = same.index(False)
    except ValueError:
        n = len(same)
    while n and ends[n - 1] < 0:
        n -= 1
    return n


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """A resolved model: which provider, which wire API, and its limits."""

    provider: str
    id: str
    api: str
    base_url: str = ""
    context_window: int = 200_000
    max_tokens: int = 8192
    reasoning: bool = False
    #: $ per million tokens: input, output, cacheRead, cacheWrite
    cost: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def ref(self) -> str:
        return f"{self.provider}/{self.id}"


@dataclass(slots=True)
class StreamOptions:
    api_key: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    reasoning: str | None = None
    #: set to abort the request; the provider then ends with an ``aborted`` error event
    abort: asyncio.Event | None = None
    timeout_s: float = 600.0


# -- stream events ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TextDelta:
    index: int
    delta: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    index: int
    delta: str


@dataclass(frozen=True, slots=True)
class ToolCallStart:
    index: int
    id: str
    name: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    index: int
    delta: str


@dataclass(frozen=True, slots=True)
class ToolCallEnd:
    index: int
    tool_call: ToolCall


@dataclass(frozen=True, slots=True)
class Done:
    """The final event of a successful stream."""

    message: AssistantMessage


@dataclass(frozen=True, slots=True)
class StreamError:
    """The final event of a failed stream; ``message.stop_reason`` is ``error`` or ``aborted``."""

    message: AssistantMessage
    status: int | None = None
    retry_after_s: float | None = None


StreamEvent: TypeAlias = TextDelta | ThinkingDelta | ToolCallStart | ToolCallDelta | ToolCallEnd | Done | StreamError
