"""Inbound wire frames: a request, validated with pydantic straight from the JSON text.

Every inbound object is closed (unknown keys are errors) and nothing is coerced.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from homarus.protocol.validation import format_errors

__all__ = ["FrameError", "RequestFrame", "decode_request"]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class RequestFrame(_Closed):
    type: Literal["req"]
    id: str = Field(min_length=1)
    method: str = Field(min_length=1)
    params: Any = None


@dataclass(frozen=True, slots=True)
class FrameError:
    """An inbound text that is not a valid request frame."""

    #: "json" when the text is not JSON at all, "frame" when it is JSON but not a req
    kind: Literal["json", "frame"]
    message: str
    #: the id to echo in an error response, when the frame had a usable one
    frame_id: str | None = None


def decode_request(text: str | bytes) -> RequestFrame | FrameError:
    """Parse one inbound frame. Never raises on bad input."""
    try:
        return RequestFrame.model_validate_json(text)
    except ValidationError as exc:
        if any(e["type"] == "json_invalid" for e in exc.errors()):
            return FrameError("json", "invalid JSON")
        frame_id = None
        try:
            obj = orjson.loads(text)
            if isinstance(obj, dict) and isinstance(obj.get("id"), str) and obj["id"]:
                frame_id = obj["id"]
        except orjson.JSONDecodeError:
            pass
        return FrameError("frame", format_errors(exc), frame_id)
