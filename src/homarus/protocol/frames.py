"""Wire frames: request, response, event, and the error shape. All closed objects.

Inbound frames are validated with pydantic straight from the JSON text; outbound frames are
built as plain dicts and encoded once with orjson, because an event broadcast to many clients
must not be serialised many times.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from homarus.protocol.validation import format_errors

__all__ = [
    "ErrorShape",
    "FrameError",
    "RequestFrame",
    "decode_request",
    "encode",
    "error_response",
    "event_frame",
    "ok_response",
]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class RequestFrame(_Closed):
    type: Literal["req"]
    id: str = Field(min_length=1)
    method: str = Field(min_length=1)
    params: Any = None


@dataclass(frozen=True, slots=True)
class ErrorShape:
    """The ``error`` object of a failed response."""

    code: str
    message: str
    details: Any = None
    retryable: bool | None = None
    retry_after_ms: int | None = None

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details is not None:
            out["details"] = self.details
        if self.retryable is not None:
            out["retryable"] = self.retryable
        if self.retry_after_ms is not None:
            out["retryAfterMs"] = self.retry_after_ms
        return out


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


def encode(frame: dict[str, Any]) -> str:
    return orjson.dumps(frame).decode("utf-8")


def ok_response(request_id: str, payload: Any) -> dict[str, Any]:
    return {"type": "res", "id": request_id, "ok": True, "payload": payload}


def error_response(request_id: str, error: ErrorShape | dict[str, Any], payload: Any = None) -> dict[str, Any]:
    frame: dict[str, Any] = {
        "type": "res",
        "id": request_id,
        "ok": False,
        "error": error.to_wire() if isinstance(error, ErrorShape) else error,
    }
    if payload is not None:
        frame["payload"] = payload
    return frame


def event_frame(
    event: str, payload: Any = None, *, seq: int | None = None, state_version: dict[str, int] | None = None
) -> dict[str, Any]:
    frame: dict[str, Any] = {"type": "event", "event": event}
    if payload is not None:
        frame["payload"] = payload
    if seq is not None:
        frame["seq"] = seq
    if state_version is not None:
        frame["stateVersion"] = state_version
    return frame
