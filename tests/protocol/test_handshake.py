"""The sans-I/O connect handshake: challenge, checks a..g in order, and state transitions."""

from __future__ import annotations

import json
from typing import Any

import pytest

from homarus.protocol.frames import ErrorShape
from homarus.protocol.handshake import (
    Accepted,
    Close,
    ConnectRequest,
    HandshakeState,
    Rejected,
    ServerHandshake,
    negotiate,
)
from homarus.protocol.limits import MAX_PREAUTH_PAYLOAD_BYTES

NONCE = "0b8f1d9e-4c1a-4f6e-9a34-3f1f5b2e7c10"
CLIENT: dict[str, Any] = {"id": "cli", "version": "1.2.3", "platform": "linux", "mode": "cli"}


def params(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"minProtocol": 3, "maxProtocol": 3, "client": dict(CLIENT)}
    base.update(overrides)
    return base


def req(method: str = "connect", p: Any = None, *, req_id: str = "c1") -> str:
    frame: dict[str, Any] = {"type": "req", "id": req_id, "method": method}
    if p is not None:
        frame["params"] = p
    return json.dumps(frame)


def fresh(**kwargs: Any) -> ServerHandshake:
    return ServerHandshake(nonce=NONCE, now_ms=1_700_000_000_123, **kwargs)


def rejected(hs: ServerHandshake, text: str | bytes) -> Rejected:
    result = hs.receive(text)
    assert isinstance(result, Rejected), result
    assert hs.state is HandshakeState.CLOSED
    return result


def pending(hs: ServerHandshake, text: str | bytes) -> ConnectRequest:
    result = hs.receive(text)
    assert isinstance(result, ConnectRequest), result
    assert hs.state is HandshakeState.AUTHENTICATING
    return result


def invalid_request(req_id: str, message: str, details: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": "INVALID_REQUEST", "message": message}
    if details is not None:
        error["details"] = details
    return {"type": "res", "id": req_id, "ok": False, "error": error}


# --- challenge ----------------------------------------------------------------------------------


def test_initial_state() -> None:
    hs = fresh()
    assert hs.state is HandshakeState.AWAITING_CONNECT
    assert hs.preauth_max_bytes == 65_536 == MAX_PREAUTH_PAYLOAD_BYTES


def test_challenge_frame_shape() -> None:
    assert fresh().challenge() == {
        "type": "event",
        "event": "connect.challenge",
        "payload": {"nonce": NONCE, "ts": 1_700_000_000_123},
    }


def test_challenge_does_not_change_state() -> None:
    hs = fresh()
    hs.challenge()
    assert hs.state is HandshakeState.AWAITING_CONNECT


# --- happy path ---------------------------------------------------------------------------------


def test_good_connect_then_accept() -> None:
    hs = fresh()
    request = pending(hs, req(p=params(auth={"token": "t" * 20})))
    assert request.request_id == "c1"
    assert request.protocol == 3
    assert request.role == "operator"
    assert request.params.client.id == "cli"
    assert request.params.auth is not None and request.params.auth.token == "t" * 20
    accepted = hs.accept({"type": "hello-ok", "protocol": 3})
    assert accepted == Accepted({"type": "res", "id": "c1", "ok": True, "payload": {"type": "hello-ok", "protocol": 3}})
    assert hs.state is HandshakeState.OPEN


def test_good_connect_as_bytes_with_node_role() -> None:
    request = pending(fresh(), req(p=params(role="node"), req_id="n1").encode())
    assert (request.request_id, request.role) == ("n1", "node")


def test_reject_after_credential_check() -> None:
    hs = fresh()
    pending(hs, req(p=params()))
    err = ErrorShape(
        code="INVALID_REQUEST",
        message="unauthorized: gateway token mismatch (check gateway.auth.token)",
        details={"code": "AUTH_TOKEN_MISMATCH"},
    )
    result = hs.reject(err)
    assert result == Rejected(
        invalid_request(
            "c1", "unauthorized: gateway token mismatch (check gateway.auth.token)", {"code": "AUTH_TOKEN_MISMATCH"}
        ),
        Close(1008, "unauthorized: gateway token mismatch (check gateway.auth.token)"),
    )
    assert hs.state is HandshakeState.CLOSED


def test_reject_truncates_close_reason_but_not_message() -> None:
    hs = fresh()
    pending(hs, req(p=params()))
    message = "x" * 300
    result = hs.reject(ErrorShape(code="INVALID_REQUEST", message=message))
    assert result.response is not None
    assert result.response["error"]["message"] == message
    assert result.close == Close(1008, "x" * 120)


# --- a: size --------------------------------------------------------------------------------------


def test_a_oversized_frame_closes_1009_without_response() -> None:
    result = rejected(fresh(), "x" * (MAX_PREAUTH_PAYLOAD_BYTES + 1))
    assert result == Rejected(None, Close(1009, "preauth payload too large"))


def test_a_limit_is_inclusive() -> None:
    pad = MAX_PREAUTH_PAYLOAD_BYTES - len(req(p=params(pathEnv="")).encode())
    text = req(p=params(pathEnv="p" * pad))
    assert len(text.encode()) == MAX_PREAUTH_PAYLOAD_BYTES
    assert pending(fresh(), text).params.path_env == "p" * pad
    longer = req(p=params(pathEnv="p" * (pad + 1)))
    assert rejected(fresh(), longer) == Rejected(None, Close(1009, "preauth payload too large"))


def test_a_size_is_counted_in_utf8_bytes() -> None:
    text = "é" * 33_000  # 33 000 characters, 66 000 bytes
    assert len(text) < MAX_PREAUTH_PAYLOAD_BYTES
    assert rejected(fresh(), text).close == Close(1009, "preauth payload too large")


def test_a_size_check_comes_before_json_check() -> None:
    assert rejected(fresh(), b"{" * (MAX_PREAUTH_PAYLOAD_BYTES + 1)).close.code == 1009


def test_a_custom_limit() -> None:
    assert rejected(fresh(preauth_max_bytes=10), req()).close == Close(1009, "preauth payload too large")


# --- b: not JSON ----------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["hello", "", "{", b"\xff"])
def test_b_non_json_plain_close(text: str | bytes) -> None:
    assert rejected(fresh(), text) == Rejected(None, Close(1000, ""))


# --- c: not a request frame --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"type":"event","event":"connect"}',
        "[1,2]",
        '{"type":"req","id":"c1","method":"connect","extra":1}',
        '{"type":"req","id":"","method":"connect"}',
        '{"type":"req","id":"c1"}',
    ],
)
def test_c_invalid_frame_closes_1008_without_response(text: str) -> None:
    assert rejected(fresh(), text) == Rejected(None, Close(1008, "invalid request frame"))


# --- d: first request must be connect ----------------------------------------------------------------


def test_d_method_not_connect() -> None:
    message = "invalid handshake: first request must be connect"
    result = rejected(fresh(), req("health", req_id="h1"))
    assert result == Rejected(invalid_request("h1", message), Close(1008, message))


def test_d_method_check_before_params_check() -> None:
    message = "invalid handshake: first request must be connect"
    result = rejected(fresh(), req("status", {"bogus": True}, req_id="s1"))
    assert result == Rejected(invalid_request("s1", message), Close(1008, message))


# --- e: connect params -----------------------------------------------------------------------------


def test_e_missing_params() -> None:
    message = "invalid connect params: at root: must be object"
    assert rejected(fresh(), req()) == Rejected(invalid_request("c1", message), Close(1008, message))


def test_e_missing_client_id() -> None:
    client = {k: v for k, v in CLIENT.items() if k != "id"}
    message = "invalid connect params: at /client: must have required property 'id'"
    result = rejected(fresh(), req(p=params(client=client), req_id="e2"))
    assert result == Rejected(invalid_request("e2", message), Close(1008, message))


def test_e_unknown_property() -> None:
    message = "invalid connect params: at root: unexpected property 'x'"
    result = rejected(fresh(), req(p=params(x=1)))
    assert result == Rejected(invalid_request("c1", message), Close(1008, message))


def test_e_long_message_truncated_in_close_reason_only() -> None:
    extras = {f"unexpected_{i:02d}": i for i in range(10)}
    result = rejected(fresh(), req(p=params(**extras)))
    assert result.response is not None
    full = result.response["error"]["message"]
    assert full.startswith("invalid connect params: at root: unexpected property 'unexpected_00'; ")
    assert full.endswith("at root: unexpected property 'unexpected_09'")
    assert len(full.encode()) > 120
    assert result.close.code == 1008
    assert result.close.reason == full.encode()[:120].decode()
    assert len(result.close.reason.encode()) == 120


def test_e_truncation_keeps_multibyte_characters_whole() -> None:
    # 55 ASCII bytes of prefix, then 2-byte characters: byte 120 falls inside one of them
    result = rejected(fresh(), req(p=params(**{"a" + "é" * 60: 1})))
    assert result.response is not None
    full = result.response["error"]["message"]
    assert full.startswith("invalid connect params: at root: unexpected property 'aéé")
    assert result.close.reason == "invalid connect params: at root: unexpected property 'a" + "é" * 32
    assert len(result.close.reason.encode()) == 119


def test_e_params_check_before_protocol_check() -> None:
    result = rejected(fresh(), req(p=params(minProtocol=9, maxProtocol=9, y=2)))
    assert result.close == Close(1008, "invalid connect params: at root: unexpected property 'y'")


# --- f: protocol ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("lo", "hi"), [(1, 2), (5, 9), (4, 3), (1, 1)])
def test_f_protocol_mismatch(lo: int, hi: int) -> None:
    result = rejected(fresh(), req(p=params(minProtocol=lo, maxProtocol=hi), req_id="p1"))
    assert result == Rejected(
        invalid_request("p1", "protocol mismatch", {"expectedProtocol": 3}),
        Close(1002, "protocol mismatch"),
    )


def test_f_protocol_check_before_role_check() -> None:
    result = rejected(fresh(), req(p=params(minProtocol=1, maxProtocol=2, role="admin")))
    assert result.close == Close(1002, "protocol mismatch")


@pytest.mark.parametrize(("lo", "hi", "expected"), [(3, 4, 3), (4, 4, 4), (1, 3, 3), (4, 10, 4), (1, 99, 3)])
def test_f_negotiation(lo: int, hi: int, expected: int) -> None:
    assert pending(fresh(), req(p=params(minProtocol=lo, maxProtocol=hi))).protocol == expected


@pytest.mark.parametrize(
    ("lo", "hi", "expected"), [(3, 3, 3), (3, 4, 3), (4, 4, 4), (2, 5, 3), (5, 6, None), (4, 3, None)]
)
def test_negotiate_function(lo: int, hi: int, expected: int | None) -> None:
    assert negotiate(lo, hi) == expected


# --- g: role ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["admin", "Operator", "nodes"])
def test_g_invalid_role(role: str) -> None:
    result = rejected(fresh(), req(p=params(role=role), req_id="g1"))
    assert result == Rejected(invalid_request("g1", "invalid role"), Close(1008, "invalid role"))


def test_g_role_defaults_to_operator() -> None:
    assert pending(fresh(), req(p=params())).role == "operator"


# --- transitions ---------------------------------------------------------------------------------------


def test_receive_twice_raises() -> None:
    hs = fresh()
    pending(hs, req(p=params()))
    with pytest.raises(RuntimeError, match="handshake already authenticating"):
        hs.receive(req(p=params()))


def test_receive_after_rejection_raises() -> None:
    hs = fresh()
    rejected(hs, "nope")
    with pytest.raises(RuntimeError, match="handshake already closed"):
        hs.receive(req(p=params()))


def test_receive_after_accept_raises() -> None:
    hs = fresh()
    pending(hs, req(p=params()))
    hs.accept({})
    with pytest.raises(RuntimeError, match="handshake already open"):
        hs.receive(req(p=params()))


def test_accept_without_pending_raises() -> None:
    hs = fresh()
    with pytest.raises(RuntimeError, match=r"accept\(\) without a pending connect request"):
        hs.accept({})
    assert hs.state is HandshakeState.AWAITING_CONNECT


def test_reject_without_pending_raises() -> None:
    with pytest.raises(RuntimeError, match=r"reject\(\) without a pending connect request"):
        fresh().reject(ErrorShape("INVALID_REQUEST", "no"))


def test_accept_after_failed_receive_raises() -> None:
    hs = fresh()
    rejected(hs, req("health"))
    with pytest.raises(RuntimeError):
        hs.accept({})


def test_accept_twice_raises() -> None:
    hs = fresh()
    pending(hs, req(p=params()))
    hs.accept({})
    with pytest.raises(RuntimeError):
        hs.accept({})
    with pytest.raises(RuntimeError):
        hs.reject(ErrorShape("INVALID_REQUEST", "late"))
    assert hs.state is HandshakeState.OPEN


def test_accept_after_reject_raises() -> None:
    hs = fresh()
    pending(hs, req(p=params()))
    hs.reject(ErrorShape("INVALID_REQUEST", "no"))
    with pytest.raises(RuntimeError):
        hs.accept({})
    assert hs.state is HandshakeState.CLOSED


def test_timeout_closes_plainly() -> None:
    hs = fresh()
    assert hs.timeout() == Close(1000, "handshake timeout")
    assert hs.state is HandshakeState.CLOSED
    with pytest.raises(RuntimeError, match="handshake already closed"):
        hs.receive(req(p=params()))


def test_timeout_while_authenticating() -> None:
    hs = fresh()
    pending(hs, req(p=params()))
    assert hs.timeout() == Close(1000, "handshake timeout")
    with pytest.raises(RuntimeError):
        hs.accept({})
