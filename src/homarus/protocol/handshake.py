"""The connect handshake as a pure state machine.

    AWAITING_CONNECT --receive()--> AUTHENTICATING --accept()--> OPEN
            |                             |
            +------- (any failure) -------+--reject()--> CLOSED

The server sends ``connect.challenge`` on open. The first frame must be a ``connect`` request;
checks run in the original's order (size, JSON, frame shape, method, params, protocol, role) and
the first failure wins. Credentials are checked by the caller between :meth:`receive` and
:meth:`accept`/:meth:`reject`, because they depend on server state (config, rate limits).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from homarus.protocol.connect import ConnectParams
from homarus.protocol.frames import ErrorShape, error_response, event_frame, ok_response
from homarus.protocol.inbound import FrameError, decode_request
from homarus.protocol.limits import MAX_PREAUTH_PAYLOAD_BYTES, SUPPORTED_PROTOCOLS, CloseCode, truncate_reason
from homarus.protocol.validation import format_errors

__all__ = ["Accepted", "Close", "ConnectRequest", "HandshakeState", "Rejected", "ServerHandshake"]

ROLES = ("operator", "node")


class HandshakeState(enum.Enum):
    AWAITING_CONNECT = "awaiting-connect"
    AUTHENTICATING = "authenticating"
    OPEN = "open"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class Close:
    code: int
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Rejected:
    """Send ``response`` (if any), then close the socket."""

    response: dict[str, Any] | None
    close: Close


@dataclass(frozen=True, slots=True)
class ConnectRequest:
    """A well-formed connect request awaiting the caller's credential check."""

    request_id: str
    params: ConnectParams
    protocol: int
    role: str


@dataclass(frozen=True, slots=True)
class Accepted:
    response: dict[str, Any]


class ServerHandshake:
    """One connection's handshake. Feed it text with :meth:`receive`."""

    def __init__(self, *, nonce: str, now_ms: int, preauth_max_bytes: int = MAX_PREAUTH_PAYLOAD_BYTES) -> None:
        self.nonce = nonce
        self.issued_at_ms = now_ms
        self.preauth_max_bytes = preauth_max_bytes
        self.state = HandshakeState.AWAITING_CONNECT
        self._request: ConnectRequest | None = None

    def challenge(self) -> dict[str, Any]:
        return event_frame("connect.challenge", {"nonce": self.nonce, "ts": self.issued_at_ms})

    def receive(self, text: str | bytes) -> ConnectRequest | Rejected:
        if self.state is not HandshakeState.AWAITING_CONNECT:
            raise RuntimeError(f"handshake already {self.state.value}")
        size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8"))
        if size > self.preauth_max_bytes:
            return self._fail(None, Close(CloseCode.MESSAGE_TOO_BIG, "preauth payload too large"))
        frame = decode_request(text)
        if isinstance(frame, FrameError):
            if frame.kind == "json":
                return self._fail(None, Close(CloseCode.NORMAL))
            return self._fail(None, Close(CloseCode.POLICY_VIOLATION, "invalid request frame"))
        req_id = frame.id
        if frame.method != "connect":
            return self._invalid(req_id, "invalid handshake: first request must be connect")
        try:
            params = ConnectParams.model_validate(frame.params)
        except ValidationError as exc:
            return self._invalid(req_id, f"invalid connect params: {format_errors(exc)}")
        protocol = negotiate(params.min_protocol, params.max_protocol)
        if protocol is None:
            expected = SUPPORTED_PROTOCOLS[0]
            err = ErrorShape(
                code="INVALID_REQUEST", message="protocol mismatch", details={"expectedProtocol": expected}
            )
            return self._fail(error_response(req_id, err), Close(CloseCode.PROTOCOL_ERROR, "protocol mismatch"))
        role = params.role or "operator"
        if role not in ROLES:
            return self._invalid(req_id, "invalid role")
        self.state = HandshakeState.AUTHENTICATING
        self._request = ConnectRequest(req_id, params, protocol, role)
        return self._request

    def accept(self, hello: dict[str, Any]) -> Accepted:
        if self.state is not HandshakeState.AUTHENTICATING or self._request is None:
            raise RuntimeError("accept() without a pending connect request")
        self.state = HandshakeState.OPEN
        return Accepted(ok_response(self._request.request_id, hello))

    def reject(self, error: ErrorShape) -> Rejected:
        if self.state is not HandshakeState.AUTHENTICATING or self._request is None:
            raise RuntimeError("reject() without a pending connect request")
        return self._fail(
            error_response(self._request.request_id, error),
            Close(CloseCode.POLICY_VIOLATION, truncate_reason(error.message)),
        )

    def timeout(self) -> Close:
        """The client did not finish the handshake in time: close 1000, no response frame."""
        self.state = HandshakeState.CLOSED
        return Close(CloseCode.NORMAL, "handshake timeout")

    def _invalid(self, req_id: str, message: str) -> Rejected:
        err = ErrorShape(code="INVALID_REQUEST", message=message)
        return self._fail(error_response(req_id, err), Close(CloseCode.POLICY_VIOLATION, truncate_reason(message)))

    def _fail(self, response: dict[str, Any] | None, close: Close) -> Rejected:
        self.state = HandshakeState.CLOSED
        return Rejected(response, close)


def negotiate(min_protocol: int, max_protocol: int) -> int | None:
    """The protocol to speak with a client offering ``[min, max]``, or None."""
    for version in SUPPORTED_PROTOCOLS:
        if min_protocol <= version <= max_protocol:
            return version
    return None
