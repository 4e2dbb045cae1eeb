"""The ``openai-completions`` wire API: ``POST {base_url}/chat/completions`` with SSE streaming.

Speaks to OpenAI and the many compatible servers (vLLM, llama.cpp, Ollama, LM Studio, OpenRouter,
Groq...), so parsing is lenient: reasoning arrives as ``reasoning_content`` or ``reasoning``, usage may
sit on the chunk or the choice, a server may ignore ``stream=true`` and answer with one JSON body, and
tool-call ids may be missing. Everything that goes wrong ends the stream with a ``StreamError``.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from homarus.messages import (
    AssistantMessage,
    Context,
    Done,
    Message,
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
    Usage,
    UserMessage,
    kept_prefix,
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

__all__ = ["OpenAICompletionsProvider", "build_body", "convert_messages", "normalise_usage"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_FINISH: dict[str, StopReason] = {
    "stop": "stop",
    "eos": "stop",
    "end_turn": "stop",
    "length": "length",
    "max_tokens": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
    "content_filter": "error",
}
_EFFORT = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"}


# -- request -----------------------------------------------------------------------------------------
#: where :func:`convert_messages` keeps each message's wire form in ``Context.cache``
_WIRE_KEY = "#openai-completions"


def convert_messages(context: Context) -> list[dict[str, Any]]:
    return _convert(context)[0]


def _convert(context: Context) -> tuple[list[dict[str, Any]], bool]:
    """The wire messages, and whether any assistant message holds tool calls.

    With ``context.cache``, the messages this request shares with the previous one of the
    conversation (the same objects, from the start: its history) are not converted again: their
    wire dicts are taken as they were (shared, never changed after); only the rest is converted."""
    msgs, cache = context.messages, context.cache
    out: list[dict[str, Any]] = []
    #: per message, len(out) once it is converted (-1: tool-result images still to place)
    ends: list[int] = []
    calls: list[bool] = []  # per message, whether any message up to it holds tool calls
    done = 0
    kept = cache.get(_WIRE_KEY) if cache is not None else None
    if kept is not None:
        before, wire, before_ends, before_calls = kept
        done = kept_prefix(before, before_ends, msgs)
        if done:
            out, ends, calls = wire[: before_ends[done - 1]], before_ends[:done], before_calls[:done]
    has_calls = bool(calls) and calls[-1]
    pending_images: list[dict[str, Any]] = []  # tool-result images ride in a user message after the results
    for m in msgs[done:] if done else msgs:
        if not isinstance(m, ToolResultMessage) and pending_images:
            out.append({"role": "user", "content": [{"type": "text", "text": "Images from tool results:"}]})
            out[-1]["content"].extend(pending_images)
            pending_images = []
        if isinstance(m, AssistantMessage):
            has_calls = has_calls or any(isinstance(b, ToolCall) for b in m.content)
        entry, images = _wire(m)
        pending_images.extend(images)
        if entry is not None:
            out.append(entry)
        ends.append(-1 if pending_images else len(out))
        calls.append(has_calls)
    if pending_images:
        out.append(
            {"role": "user", "content": [{"type": "text", "text": "Images from tool results:"}, *pending_images]}
        )
    if cache is not None:
        cache[_WIRE_KEY] = (list(msgs), out, ends, calls)
    if context.system_prompt:
        return [{"role": "system", "content": context.system_prompt}, *out], has_calls
    return out, has_calls


def _wire(m: Message) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """One message's wire dict (None: nothing to send), and the images of a tool result."""
    if isinstance(m, UserMessage):
        if isinstance(m.content, str) or all(isinstance(b, TextContent) for b in m.content):
            return {"role": "user", "content": m.text}, []
        return {"role": "user", "content": [_part(b) for b in m.content]}, []
    if isinstance(m, ToolResultMessage):
        images = [_part(b) for b in m.content if not isinstance(b, TextContent)]
        text = m.text or ("(see the attached image)" if images else "(no output)")
        return {"role": "tool", "tool_call_id": m.tool_call_id, "content": text}, images
    # thinking is not replayed: most compatible servers reject reasoning fields in requests
    entry: dict[str, Any] = {"role": "assistant", "content": m.text or None}
    calls = m.tool_calls
    if calls:
        entry["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments, default=str)},
            }
            for c in calls
        ]
    return (entry if entry["content"] is not None or calls else None), []


def _part(block: Any) -> dict[str, Any]:
    if isinstance(block, TextContent):
        return {"type": "text", "text": block.text}
    return {"type": "image_url", "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"}}


def build_body(model: ModelInfo, context: Context, options: StreamOptions) -> dict[str, Any]:
    messages, has_calls = _convert(context)
    body: dict[str, Any] = {
        "model": model.id,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": options.max_tokens or model.max_tokens,
    }
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.reasoning and model.reasoning:
        body["reasoning_effort"] = _EFFORT.get(options.reasoning, "medium")
    if context.tools or has_calls:
        # an empty list is still sent when the history holds calls: LiteLLM/Anthropic proxies need it
        body["tools"] = [
            {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in context.tools
        ]
    return body


# -- response ----------------------------------------------------------------------------------------
@dataclass
class _Call:
    id: str
    name: str
    index: int
    args: list[str] = field(default_factory=list)
    ended: bool = False


class _Decoder:
    """Turns chunks (or one non-streamed body) into events, accumulating the final message."""

    def __init__(self, msg: AssistantMessage, model: ModelInfo) -> None:
        self.msg = msg
        self.model = model
        self.finish_reason: str | None = None
        self.done = False  # [DONE] seen
        self._open: tuple[str, int] | None = None
        self._calls: dict[int, _Call] = {}
        self._usage: dict[str, Any] | None = None

    @property
    def complete(self) -> bool:
        return self.done

    def on_sse(self, event: SSEEvent) -> list[StreamEvent]:
        if event.data.strip() == "[DONE]":
            self.done = True
            return []
        return self.on_data(event.data)

    def on_data(self, data: str) -> list[StreamEvent]:
        try:
            chunk = json.loads(data)
        except ValueError:
            raise RemoteError(f"malformed event-stream data: {clip(data)}") from None
        if not isinstance(chunk, dict):
            raise RemoteError(f"unexpected event-stream data: {clip(data)}")
        return self.on_chunk(chunk)

    def on_chunk(self, chunk: dict[str, Any]) -> list[StreamEvent]:
        err = chunk.get("error")
        if err:
            text = error_body_text(chunk) or f"stream error: {clip(json.dumps(chunk))}"
            code = err.get("code") if isinstance(err, dict) else None
            raise RemoteError(text, code if isinstance(code, int) else None)
        out: list[StreamEvent] = []
        if isinstance(chunk.get("usage"), dict):
            self._usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            if isinstance(choice.get("usage"), dict):
                self._usage = choice["usage"]
            delta = choice.get("delta") or choice.get("message") or {}
            if isinstance(delta, dict):
                self._delta(delta, out)
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
        return out

    def _delta(self, delta: dict[str, Any], out: list[StreamEvent]) -> None:
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            self._append("thinking", reasoning, out)
        content = delta.get("content")
        if isinstance(content, str) and content:
            self._append("text", content, out)
        calls = delta.get("tool_calls")
        for pos, tc in enumerate(calls if isinstance(calls, list) else []):
            if isinstance(tc, dict):
                self._tool(pos, tc, out)

    def _append(self, kind: str, text: str, out: list[StreamEvent]) -> None:
        if self._open is None or self._open[0] != kind:
            self.msg.content.append(TextContent("") if kind == "text" else ThinkingContent(""))
            self._open = (kind, len(self.msg.content) - 1)
        index = self._open[1]
        block = self.msg.content[index]
        if isinstance(block, TextContent):
            block.text += text
            out.append(TextDelta(index, text))
        elif isinstance(block, ThinkingContent):
            block.thinking += text
            out.append(ThinkingDelta(index, text))

    def _tool(self, pos: int, tc: dict[str, Any], out: list[StreamEvent]) -> None:
        key = tc["index"] if isinstance(tc.get("index"), int) else pos
        fn = tc.get("function")
        if not isinstance(fn, dict):
            fn = {}
        call = self._calls.get(key)
        if call is None:
            self._end_calls(out)  # calls arrive one after another: a new index closes the previous one
            call_id = str(tc.get("id") or f"call_{uuid.uuid4().hex[:24]}")  # some local servers omit ids
            call = _Call(call_id, str(fn.get("name") or ""), len(self.msg.content))
            self._calls[key] = call
            self.msg.content.append(ToolCall(call.id, call.name, {}))
            self._open = None
            out.append(ToolCallStart(call.index, call.id, call.name))
        elif fn.get("name") and not call.name:
            call.name = str(fn["name"])
        args = fn.get("arguments")
        if isinstance(args, dict):  # a few servers send the object itself
            args = json.dumps(args)
        if isinstance(args, str) and args:
            call.args.append(args)
            out.append(ToolCallDelta(call.index, args))

    def _end_calls(self, out: list[StreamEvent]) -> None:
        for call in self._calls.values():
            if not call.ended:
                call.ended = True
                parsed = ToolCall.from_arguments(call.id, call.name, "".join(call.args))
                self.msg.content[call.index] = parsed
                out.append(ToolCallEnd(call.index, parsed))

    def on_body(self, raw: bytes, content_type: str) -> list[StreamEvent]:
        """A reply that is not ``text/event-stream``: one JSON completion, or SSE with the wrong type."""
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
        if isinstance(data, dict) and ("choices" in data or "error" in data):
            out = self.on_chunk(data)
            self.done = True
            return out
        parser = SSEParser()
        out = []
        for event in [*parser.feed(raw), *parser.close()]:
            out.extend(self.on_sse(event))
            if self.done:
                break
        if not out and not self.done and self.finish_reason is None:
            shown = clip(raw.decode("utf-8", errors="replace")) or "(empty)"
            raise RemoteError(f"unexpected response body ({content_type or 'no content-type'}): {shown}")
        return out

    def finish(self, secret: str | None) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        for call in self._calls.values():
            if call.ended:  # the final message is authoritative, should a fragment arrive late
                self.msg.content[call.index] = ToolCall.from_arguments(call.id, call.name, "".join(call.args))
        self._end_calls(out)
        if self._usage is not None:
            self.msg.usage = normalise_usage(self._usage, self.model)
        if self.finish_reason is None and not self.done:
            out.append(fail(self.msg, "stream ended before the response was complete (no finish_reason)", secret))
            return out
        reason = _FINISH.get(self.finish_reason or "stop", "stop")
        if reason == "stop" and self._calls:
            reason = "toolUse"  # Ollama and others say "stop" after tool calls
        if reason == "error":
            out.append(fail(self.msg, f"the provider stopped the response ({self.finish_reason})", secret))
            return out
        self.msg.stop_reason = reason
        out.append(Done(self.msg))
        return out


def normalise_usage(raw: dict[str, Any], model: ModelInfo) -> Usage:
    def num(value: Any) -> int:
        return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0

    details = raw.get("prompt_tokens_details")
    cached = num(details.get("cached_tokens")) if isinstance(details, dict) else 0
    prompt = num(raw.get("prompt_tokens"))
    usage = Usage(max(0, prompt - cached), num(raw.get("completion_tokens")), cached)
    usage.total_tokens = usage.input + usage.output + usage.cache_read
    return apply_cost(usage, model)


class OpenAICompletionsProvider(HttpAdapter):
    api = "openai-completions"

    async def stream(self, model: ModelInfo, context: Context, options: StreamOptions) -> AsyncIterator[StreamEvent]:
        base = (model.base_url or self.config.base_url or DEFAULT_BASE_URL).rstrip("/")
        auth = {"authorization": f"Bearer {options.api_key}"} if options.api_key else {}
        decoder = _Decoder(AssistantMessage(api=self.api, provider=model.provider, model=model.id), model)
        events = self.run(
            f"{base}/chat/completions",
            lambda: build_body(model, context, options),
            self._headers(model, auth),
            options,
            decoder,
        )
        async with contextlib.aclosing(events):  # an early break by the consumer closes the response now
            async for event in events:
                yield event
