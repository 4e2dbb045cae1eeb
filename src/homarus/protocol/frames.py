"""Outbound wire frames: response, event, and the error shape.

They are built as plain dicts and encoded once with orjson, because an event broadcast to many
clients must not be serialised many times. Inbound frames are :mod:`homarus.protocol.inbound`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["ErrorShape", "encode", "error_response", "event_frame", "ok_response"]


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
