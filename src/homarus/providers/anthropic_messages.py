"""The ``anthropic-messages`` wire API: ``POST {base_url}/v1/messages`` with SSE streaming.

Events are ``message_start``, ``content_block_start/delta/stop`` (text, thinking with its signature,
tool_use with ``input_json_delta`` fragments), ``message_delta`` (stop reason, cumulative usage),
``message_stop``, ``ping`` and ``error`` (e.g. ``overloaded_error`` mid-stream → status 529).

Tool-call ids must match ``^[a-zA-Z0-9_-]{1,64}$`` here, but the history may hold ids minted by other
APIs. :func:`wire_tool_id` maps an id to a valid one as a pure function of the id, so a call and its
result always map to the same wire id without any per-conversation table.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from homarus.messages import (
    AssistantMessage,
    Context,
    Done,
    ImageContent,
    ModelInfo,
    StopReason,
    StreamEvent,
    StreamOptions,
    TextContent,
    TextDelta,
    ThinkingContent,
    ThinkingDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolResultMessage,
    UserMessage,
)
from homarus.providers.classify import error_body_text
from homarus.providers.sse import (
    HttpAdapter,
    RemoteError,
    SSEEvent,
    SSEParser,
    apply_cost,
    clip,
    fail,
)

__all__ = ["ANTHROPIC_VERSION", "AnthropicMessagesProvider", "convert_messages", "wire_tool_id"]

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_BASE_URL = "https://api.anthropic.com"
_STOP: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "toolUse",
    "refusal": "error",
}
_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 16384}
_WIRE_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def wire_tool_id(call_id: str) -> str:
    """A valid Anthropic tool id for ``call_id``: unchanged when already valid, else sanitised + hashed.

    The hash of the original keeps distinct foreign ids distinct after sanitising (``a.b`` vs ``a:b``).
    """
    if _WIRE_ID.fullmatch(call_id):
        return call_id
    digest = hashlib.sha256(call_id.encode()).hexdigest()[:12]
    clean = re.sub(r"[^a-zA-Z0-9_-]", "_", call_id)[: 64 - len(digest) - 1]
    return f"{clean}_{digest}" if clean else f"toolu_{digest}"


# -- request -----------------------------------------------------------------------------------------
def _user_blocks(blocks: list[TextContent | ImageContent]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for b in blocks:
        if isinstance(b, TextContent):
            if b.text:  # the API rejects empty text blocks
                out.append({"type": "text", "text": b.text})
        else:
            out.append({"type": "image", "source": {"type": "base64", "media_type": b.mime_type, "data": b.data}})
    return out


def convert_messages(context: Context) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in context.messages:
        if isinstance(m, UserMessage):
            content: str | list[dict[str, Any]] = m.content if isinstance(m.content, str) else _user_blocks(m.content)
            if content:
                out.append({"role": "user", "content": content})
        elif isinstance(m, ToolResultMessage):
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": wire_tool_id(m.tool_call_id)}
            if parts := _user_blocks(m.content):
                block["content"] = parts
            if m.is_error:
                block["is_error"] = True
            last = out[-1] if out else None
            if (
                last
                and last["role"] == "user"
                and isinstance(last["content"], list)
                and last["content"]
                and all(b.get("type") == "tool_result" for b in last["content"])
            ):
                last["content"].append(block)  # consecutive results share one user message
            else:
                out.append({"role": "user", "content": [block]})
        else:
            blocks: list[dict[str, Any]] = []
            for b in m.content:
                if isinstance(b, TextContent):
                    if b.text:
                        blocks.append({"type": "text", "text": b.text})
                elif isinstance(b, ThinkingContent):
                    if b.signature:
                        blocks.append({"type": "thinking", "thinking": b.thinking, "signature": b.signature})
                    elif b.thinking:  # unsigned thinking (another model) can only travel as text
                        blocks.append({"type": "text", "text": b.thinking})
                else:
                    blocks.append({"type": "tool_use", "id": wire_tool_id(b.id), "name": b.name, "input": b.arguments})
            if blocks:
                out.append({"role": "assistant", "content": blocks})
    return out


def build_body(model: ModelInfo, context: Context, options: StreamOptions) -> dict[str, Any]:
    max_tokens = options.max_tokens or model.max_tokens
    body: dict[str, Any] = {"model": model.id, "max_tokens": max_tokens, "stream": True}
    if context.system_prompt:
        body["system"] = context.system_prompt
    body["messages"] = convert_messages(context)
    if context.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in context.tools
        ]
    if options.reasoning and model.reasoning:
        budget = _BUDGETS.get(options.reasoning, 8192)
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        body["max_tokens"] = max(max_tokens, budget + 1024)  # the budget must fit below max_tokens
    elif options.temperature is not None:  # the API refuses temperature together with thinking
        body["temperature"] = options.temperature
    return body


# -- response ----------------------------------------------------------------------------------------
@dataclass
class _Block:
    index: int  # position in msg.content
    call: ToolCall | None = None
    args: list[str] = field(default_factory=list)
    initial: dict[str, Any] | None = None
    closed: bool = False


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


class _Decoder:
    def __init__(self, msg: AssistantMessage, model: ModelInfo) -> None:
        self.msg = msg
        self.model = model
        self.stop_reason: str | None = None
        self.stopped = False  # message_stop seen
        self._blocks: dict[int, _Block] = {}

    @property
    def complete(self) -> bool:
        return self.stopped

    def on_sse(self, event: SSEEvent) -> list[StreamEvent]:
        return self.on_data(event.event, event.data)

    def on_data(self, name: str, data: str) -> list[StreamEvent]:
        try:
            payload = json.loads(data)
        except ValueError:
            raise RemoteError(f"malformed event-stream data: {clip(data)}") from None
        if not isinstance(payload, dict):
            raise RemoteError(f"unexpected event-stream data: {clip(data)}")
        return self.on_event(str(payload.get("type") or name), payload)

    def on_event(self, kind: str, p: dict[str, Any]) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        if kind == "message_start":
            message = p.get("message")
            self._usage(message.get("usage") if isinstance(message, dict) else None)
        elif kind == "content_block_start" and isinstance(p.get("content_block"), dict):
            self._start(p.get("index"), p["content_block"], out)
        elif kind == "content_block_delta" and isinstance(p.get("delta"), dict):
            self._delta(self._block(p), p["delta"], out)
        elif kind == "content_block_stop":
            self._stop(self._block(p), out)
        elif kind == "message_delta":
            delta = p.get("delta")
            if isinstance(delta, dict) and delta.get("stop_reason"):
                self.stop_reason = str(delta["stop_reason"])
            self._usage(p.get("usage"))
        elif kind == "message_stop":
            self.stopped = True
        elif kind == "error":
            err = p.get("error")
            etype = err.get("type") if isinstance(err, dict) else None
            text = error_body_text(p) or f"stream error: {clip(json.dumps(p))}"
            raise RemoteError(text, _ERROR_STATUS.get(str(etype)))
        return out  # ping and unknown events are ignored, as the API asks of clients

    def _block(self, p: dict[str, Any]) -> _Block | None:
        index = p.get("index")
        return self._blocks.get(index) if isinstance(index, int) else None

    def _start(self, index: Any, cb: dict[str, Any], out: list[StreamEvent]) -> None:
        if not isinstance(index, int):
            return
        pos = len(self.msg.content)
        kind = cb.get("type")
        if kind == "text":
            text = str(cb.get("text") or "")
            self.msg.content.append(TextContent(text))
            if text:
                out.append(TextDelta(pos, text))
        elif kind == "thinking":
            thinking = str(cb.get("thinking") or "")
            self.msg.content.append(ThinkingContent(thinking, cb.get("signature") or None))
            if thinking:
                out.append(ThinkingDelta(pos, thinking))
        elif kind in ("tool_use", "server_tool_use"):
            call = ToolCall(str(cb.get("id") or f"toolu_{index}"), str(cb.get("name") or ""), {})
            self.msg.content.append(call)
            initial = cb.get("input")
            self._blocks[index] = _Block(pos, call, initial=initial if isinstance(initial, dict) else None)
            out.append(ToolCallStart(pos, call.id, call.name))
            return
        else:  # redacted_thinking and future block types carry nothing we can show
            return
        self._blocks[index] = _Block(pos)

    def _delta(self, block: _Block | None, delta: dict[str, Any], out: list[StreamEvent]) -> None:
        if block is None:
            return
        target = self.msg.content[block.index]
        kind = delta.get("type")
        if kind == "text_delta" and isinstance(target, TextContent):
            text = str(delta.get("text") or "")
            target.text += text
            out.append(TextDelta(block.index, text))
        elif kind == "thinking_delta" and isinstance(target, ThinkingContent):
            text = str(delta.get("thinking") or "")
            target.thinking += text
            out.append(ThinkingDelta(block.index, text))
        elif kind == "signature_delta" and isinstance(target, ThinkingContent):
            target.signature = (target.signature or "") + str(delta.get("signature") or "")
        elif kind == "input_json_delta" and block.call is not None:
            fragment = str(delta.get("partial_json") or "")
            if fragment:
                block.args.append(fragment)
                out.append(ToolCallDelta(block.index, fragment))

    def _stop(self, block: _Block | None, out: list[StreamEvent]) -> None:
        if block is None or block.call is None or block.closed:
            return
        block.closed = True
        call = block.call
        if not block.args and block.initial:  # a non-streamed body carries the whole input up front
            parsed = ToolCall(call.id, call.name, block.initial)
        else:
            parsed = ToolCall.from_arguments(call.id, call.name, "".join(block.args))
        self.msg.content[block.index] = parsed
        out.append(ToolCallEnd(block.index, parsed))

    def _usage(self, raw: Any) -> None:
        if not isinstance(raw, dict):
            return
        u = self.msg.usage
        for attr, key in (
            ("input", "input_tokens"),
            ("output", "output_tokens"),
            ("cache_read", "cache_read_input_tokens"),
            ("cache_write", "cache_creation_input_tokens"),
        ):
            value = _int(raw.get(key))
            if value is not None:  # message_delta repeats only some fields, cumulatively
                setattr(u, attr, value)
        u.total_tokens = u.input + u.output + u.cache_read + u.cache_write
        apply_cost(u, self.model)

    def on_body(self, raw: bytes, content_type: str) -> list[StreamEvent]:
        """A reply that is not ``text/event-stream``: one JSON message, or SSE with the wrong type."""
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
        if isinstance(data, dict) and data.get("type") in ("message", "error"):
            if data["type"] == "error":
                return self.on_event("error", data)
            out = self.on_event("message_start", {"message": data})
            for i, cb in enumerate(data.get("content") or []):
                if isinstance(cb, dict):
                    out += self.on_event("content_block_start", {"index": i, "content_block": cb})
                    out += self.on_event("content_block_stop", {"index": i})
            out += self.on_event("message_delta", {"delta": {"stop_reason": data.get("stop_reason") or "end_turn"}})
            return out + self.on_event("message_stop", {})
        out = []
        parser = SSEParser()
        for event in [*parser.feed(raw), *parser.close()]:
            out.extend(self.on_data(event.event, event.data))
        if not out and not self.stopped and self.stop_reason is None:
            shown = clip(raw.decode("utf-8", errors="replace")) or "(empty)"
            raise RemoteError(f"unexpected response body ({content_type or 'no content-type'}): {shown}")
        return out

    def finish(self, secret: str | None) -> list[StreamEvent]:
        if not self.stopped and self.stop_reason is None:
            return [fail(self.msg, "stream ended before the response was complete (no message_stop)", secret)]
        out: list[StreamEvent] = []
        for block in self._blocks.values():
            self._stop(block, out)
        reason = _STOP.get(self.stop_reason or "end_turn", "stop")
        if reason == "error":
            out.append(fail(self.msg, f"the provider stopped the response ({self.stop_reason})", secret))
            return out
        self.msg.stop_reason = reason
        out.append(Done(self.msg))
        return out


class AnthropicMessagesProvider(HttpAdapter):
    api = "anthropic-messages"

    @staticmethod
    def url(base: str) -> str:
        base = base.rstrip("/")
        # accept both "https://host" and "https://host/v1" (one base_url serves both fake-server APIs)
        return f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"

    async def stream(self, model: ModelInfo, context: Context, options: StreamOptions) -> AsyncIterator[StreamEvent]:
        auth = {"anthropic-version": ANTHROPIC_VERSION}
        if options.api_key:
            auth["x-api-key"] = options.api_key
        decoder = _Decoder(AssistantMessage(api=self.api, provider=model.provider, model=model.id), model)
        events = self.run(
            self.url(model.base_url or self.config.base_url or DEFAULT_BASE_URL),
            lambda: build_body(model, context, options),
            self._headers(model, auth),
            options,
            decoder,
        )
        async with contextlib.aclosing(events):  # an early break by the consumer closes the response now
            async for event in events:
                yield event
