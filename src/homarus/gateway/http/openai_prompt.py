"""OpenAI request bodies → one agent prompt, and the OpenAI error shape.

A Homarus session keeps its own history, so an OpenAI request does not replace it: the last
user message becomes the run's message, system/developer messages become extra system prompt
for this run, and the messages in between (earlier user, assistant and tool turns the client
sent) are folded into the prompt as labelled context above the current message. Clients that
resend their whole conversation on a fresh session (no ``user``, no session header) therefore
get the conversation they sent; on a stable session they should send only the new message.

Images are accepted only inline (``data:image/...;base64,``): fetching remote URLs on a
caller's behalf would turn the endpoint into a request forwarder.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field
from typing import Any

from homarus.errors import InvalidRequest
from homarus.gateway.errors import openai_error_body
from homarus.messages import ImageContent

__all__ = ["MAX_IMAGES", "ApiError", "Prompt", "chat_prompt", "error_body", "responses_prompt"]

MAX_IMAGES = 8
_DATA_URL = re.compile(r"^data:(image/[a-z0-9.+-]+);base64,(.*)$", re.IGNORECASE | re.DOTALL)
_ROLES = {"user": "User", "assistant": "Assistant", "tool": "Tool", "function": "Tool"}


class ApiError(InvalidRequest):
    """An error answered in the OpenAI shape ``{"error": {message, type, code?, param?}}``."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        kind: str = "invalid_request_error",
        code: str | None = None,
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.code = code
        self.param = param

    def body(self) -> dict[str, Any]:
        return error_body(self.message, self.kind, self.code, self.param)


error_body = openai_error_body  # the openai family of gateway/errors.py


@dataclass
class Prompt:
    message: str
    images: list[ImageContent] = field(default_factory=list)
    system: str | None = None


@dataclass
class _Turn:
    role: str
    text: str
    images: list[ImageContent] = field(default_factory=list)
    name: str | None = None


def chat_prompt(messages: Any) -> Prompt:
    """The prompt of a Chat Completions ``messages`` array; ApiError(400) when it has no user message."""
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "`messages` must be a non-empty array.", param="messages")
    turns: list[_Turn] = []
    for i, raw in enumerate(messages):
        if not isinstance(raw, dict):
            raise ApiError(400, f"`messages[{i}]` must be an object.", param=f"messages[{i}]")
        role = raw.get("role")
        if role not in ("system", "developer", *_ROLES):
            raise ApiError(400, f"`messages[{i}].role` {role!r} is not supported.", param=f"messages[{i}].role")
        text, images = _content(raw.get("content"), f"messages[{i}].content")
        name = raw.get("name") if isinstance(raw.get("name"), str) else raw.get("tool_call_id")
        turns.append(_Turn(str(role), text, images, name if isinstance(name, str) else None))
    return _flatten(turns, "messages")


def responses_prompt(items: Any, instructions: Any) -> Prompt:
    """The prompt of a Responses ``input`` (a string or a list of items) plus ``instructions``."""
    turns: list[_Turn] = []
    if isinstance(instructions, str) and instructions.strip():
        turns.append(_Turn("system", instructions))
    elif instructions is not None and not isinstance(instructions, str):
        raise ApiError(400, "`instructions` must be a string.", param="instructions")
    if isinstance(items, str):
        turns.append(_Turn("user", items))
    elif isinstance(items, list) and items:
        for i, raw in enumerate(items):
            turns.append(_item(raw, f"input[{i}]"))
    else:
        raise ApiError(400, "`input` must be a string or a non-empty array of items.", param="input")
    return _flatten(turns, "input")


def _item(raw: Any, where: str) -> _Turn:
    if isinstance(raw, str):
        return _Turn("user", raw)
    if not isinstance(raw, dict):
        raise ApiError(400, f"`{where}` must be an object.", param=where)
    kind = raw.get("type", "message")
    if kind == "function_call_output":
        output = raw.get("output")
        return _Turn("tool", output if isinstance(output, str) else str(output), name=str(raw.get("call_id") or ""))
    if kind == "function_call":
        return _Turn("assistant", f"[called {raw.get('name')}({raw.get('arguments', '')})]")
    if kind != "message":
        raise ApiError(400, f"`{where}.type` {kind!r} is not supported.", param=f"{where}.type")
    role = raw.get("role")
    if role not in ("system", "developer", "user", "assistant"):
        raise ApiError(400, f"`{where}.role` {role!r} is not supported.", param=f"{where}.role")
    text, images = _content(raw.get("content"), f"{where}.content")
    return _Turn(str(role), text, images)


def _content(content: Any, where: str) -> tuple[str, list[ImageContent]]:
    """Text and inline images of a message's content (a string or a list of parts)."""
    if content is None:
        return "", []
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        raise ApiError(400, f"`{where}` must be a string or an array of parts.", param=where)
    texts: list[str] = []
    images: list[ImageContent] = []
    for j, part in enumerate(content):
        if not isinstance(part, dict):
            raise ApiError(400, f"`{where}[{j}]` must be an object.", param=f"{where}[{j}]")
        kind = part.get("type")
        if kind in ("text", "input_text", "output_text"):
            text = part.get("text")
            if not isinstance(text, str):
                raise ApiError(400, f"`{where}[{j}].text` must be a string.", param=f"{where}[{j}].text")
            texts.append(text)
        elif kind in ("image_url", "input_image"):
            url = part.get("image_url")
            if isinstance(url, dict):
                url = url.get("url")
            images.append(_image(url, f"{where}[{j}]"))
        elif kind == "refusal":
            texts.append(str(part.get("refusal") or ""))
        else:
            raise ApiError(400, f"`{where}[{j}].type` {kind!r} is not supported.", param=f"{where}[{j}].type")
    return "\n".join(texts), images


def _image(url: Any, where: str) -> ImageContent:
    match = _DATA_URL.match(url) if isinstance(url, str) else None
    if match is None:
        raise ApiError(
            400,
            f"`{where}` must be an inline image (data:image/...;base64,...); remote URLs are not fetched.",
            param=where,
        )
    data = re.sub(r"\s+", "", match.group(2))
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ApiError(400, f"`{where}` is not valid base64.", param=where) from None
    return ImageContent(data, match.group(1).lower())


def _flatten(turns: list[_Turn], param: str) -> Prompt:
    system = "\n\n".join(t.text for t in turns if t.role in ("system", "developer") and t.text.strip())
    convo = [t for t in turns if t.role not in ("system", "developer")]
    last = next((i for i in range(len(convo) - 1, -1, -1) if convo[i].role == "user"), None)
    if last is None or not (convo[last].text.strip() or convo[last].images):
        raise ApiError(400, f"Missing user message in `{param}`.", param=param)
    current = convo[last]
    images = [img for t in convo for img in t.images]
    if len(images) > MAX_IMAGES:
        raise ApiError(400, f"At most {MAX_IMAGES} images per request.", param=param)
    context = [t for i, t in enumerate(convo) if i != last and t.text.strip()]
    if not context:
        return Prompt(current.text, images, system or None)
    lines = ["Earlier messages of this conversation, as sent by the client (context only):"]
    for t in context:
        label = _ROLES[t.role] + (f" ({t.name})" if t.role == "tool" and t.name else "")
        lines.append(f"{label}: {t.text}")
    lines += ["", "Current message (reply to this):", current.text]
    return Prompt("\n".join(lines), images, system or None)
