"""Wire frames (decode/encode/builders) and the AJV-style validation messages."""

from __future__ import annotations

import enum
from typing import Annotated, Any

import orjson
import pytest
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from homarus.protocol.connect import ConnectParams
from homarus.protocol.frames import ErrorShape, encode, error_response, event_frame, ok_response
from homarus.protocol.inbound import FrameError, RequestFrame, decode_request
from homarus.protocol.validation import format_errors

CLIENT: dict[str, Any] = {"id": "cli", "version": "1.0.0", "platform": "linux", "mode": "cli"}


def connect_error(params: Any) -> str:
    with pytest.raises(ValidationError) as info:
        ConnectParams.model_validate(params)
    return format_errors(info.value)


def frame_error(text: str | bytes) -> FrameError:
    result = decode_request(text)
    assert isinstance(result, FrameError), result
    return result


# --- decode_request: good frames -------------------------------------------------------------


def test_decode_minimal_request() -> None:
    frame = decode_request('{"type":"req","id":"r1","method":"health"}')
    assert frame == RequestFrame(type="req", id="r1", method="health", params=None)


def test_decode_request_with_params_from_bytes() -> None:
    frame = decode_request(b'{"type":"req","id":"r2","method":"status","params":{"a":[1,"x",null]}}')
    assert isinstance(frame, RequestFrame)
    assert (frame.id, frame.method, frame.params) == ("r2", "status", {"a": [1, "x", None]})


@pytest.mark.parametrize("params", ["null", "[]", "0", '"s"', "true", '{"nested":{"deep":1}}'])
def test_decode_accepts_any_params_value(params: str) -> None:
    frame = decode_request(f'{{"type":"req","id":"x","method":"m","params":{params}}}')
    assert isinstance(frame, RequestFrame)
    assert frame.params == orjson.loads(params)


def test_decode_keeps_unicode_id_and_method() -> None:
    frame = decode_request('{"type":"req","id":"ü-1","method":"chat.send"}'.encode())
    assert isinstance(frame, RequestFrame)
    assert (frame.id, frame.method) == ("ü-1", "chat.send")


# --- decode_request: not JSON --------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["", "not json", "{", '{"type":"req","id":"a","method":"m"', '{"type":"req"} trailing', "{'a': 1}", b"\xff\xfe"],
)
def test_decode_non_json(text: str | bytes) -> None:
    assert frame_error(text) == FrameError("json", "invalid JSON", None)


# --- decode_request: JSON that is not a req ---------------------------------------------------


@pytest.mark.parametrize("text", ["[1, 2]", '"str"', "42", "null", "true"])
def test_decode_json_non_object(text: str) -> None:
    assert frame_error(text) == FrameError("frame", "at root: must be object", None)


def test_decode_wrong_type_keeps_id() -> None:
    err = frame_error('{"type":"res","id":"r9","method":"m"}')
    assert err == FrameError("frame", "at /type: must be equal to one of the allowed values", "r9")


def test_decode_event_frame_is_not_a_request() -> None:
    err = frame_error('{"type":"event","event":"tick"}')
    assert err.kind == "frame"
    assert err.frame_id is None
    assert err.message == (
        "at /type: must be equal to one of the allowed values; "
        "at root: must have required property 'id'; "
        "at root: must have required property 'method'; "
        "at root: unexpected property 'event'"
    )


def test_decode_unknown_field() -> None:
    err = frame_error('{"type":"req","id":"a1","method":"m","x":1}')
    assert err == FrameError("frame", "at root: unexpected property 'x'", "a1")


def test_decode_several_unknown_fields_joined() -> None:
    err = frame_error('{"type":"req","id":"a1","method":"m","x":1,"y":2}')
    assert err.message == "at root: unexpected property 'x'; at root: unexpected property 'y'"


def test_decode_empty_id_is_not_echoed() -> None:
    err = frame_error('{"type":"req","id":"","method":"m"}')
    assert err == FrameError("frame", "at /id: must NOT have fewer than 1 characters", None)


def test_decode_empty_method_echoes_id() -> None:
    err = frame_error('{"type":"req","id":"q7","method":""}')
    assert err == FrameError("frame", "at /method: must NOT have fewer than 1 characters", "q7")


def test_decode_non_string_id_is_not_echoed() -> None:
    err = frame_error('{"type":"req","id":5,"method":"m"}')
    assert err == FrameError("frame", "at /id: must be string", None)


def test_decode_non_string_method() -> None:
    err = frame_error('{"type":"req","id":"k","method":3}')
    assert err == FrameError("frame", "at /method: must be string", "k")


def test_decode_missing_id() -> None:
    err = frame_error('{"type":"req","method":"m"}')
    assert err == FrameError("frame", "at root: must have required property 'id'", None)


def test_decode_empty_object_lists_all_required() -> None:
    err = frame_error("{}")
    assert err.message == (
        "at root: must have required property 'type'; "
        "at root: must have required property 'id'; "
        "at root: must have required property 'method'"
    )


def test_decode_bytes_frame_error_echoes_id() -> None:
    err = frame_error(b'{"type":"req","id":"b1","method":"m","extra":true}')
    assert err == FrameError("frame", "at root: unexpected property 'extra'", "b1")


# --- AJV-style messages from real models ------------------------------------------------------


def test_connect_missing_nested_required() -> None:
    client = {k: v for k, v in CLIENT.items() if k != "id"}
    assert (
        connect_error({"minProtocol": 3, "maxProtocol": 3, "client": client})
        == "at /client: must have required property 'id'"
    )


def test_connect_missing_top_level_required() -> None:
    assert connect_error({"maxProtocol": 3, "client": CLIENT}) == "at root: must have required property 'minProtocol'"


def test_connect_unexpected_root_property() -> None:
    assert (
        connect_error({"minProtocol": 3, "maxProtocol": 3, "client": CLIENT, "x": 1})
        == "at root: unexpected property 'x'"
    )


def test_connect_unexpected_nested_property() -> None:
    assert (
        connect_error({"minProtocol": 3, "maxProtocol": 3, "client": {**CLIENT, "color": "red"}})
        == "at /client: unexpected property 'color'"
    )


def test_connect_enum_message() -> None:
    assert (
        connect_error({"minProtocol": 3, "maxProtocol": 3, "client": {**CLIENT, "id": "nope"}})
        == "at /client/id: must be equal to one of the allowed values"
    )


@pytest.mark.parametrize("value", ["3", 3.0, 3.5, True, None])
def test_connect_integer_type_message_without_coercion(value: Any) -> None:
    assert (
        connect_error({"minProtocol": value, "maxProtocol": 3, "client": CLIENT}) == "at /minProtocol: must be integer"
    )


def test_connect_minimum_message() -> None:
    assert connect_error({"minProtocol": 0, "maxProtocol": 3, "client": CLIENT}) == "at /minProtocol: must be >= 1"


def test_connect_min_length_message() -> None:
    assert (
        connect_error({"minProtocol": 3, "maxProtocol": 3, "client": {**CLIENT, "version": ""}})
        == "at /client/version: must NOT have fewer than 1 characters"
    )


def test_connect_max_length_message() -> None:
    assert (
        connect_error({"minProtocol": 3, "maxProtocol": 3, "client": {**CLIENT, "platform": "p" * 129}})
        == "at /client/platform: must NOT have more than 128 characters"
    )


def test_connect_array_items_messages() -> None:
    base = {"minProtocol": 3, "maxProtocol": 3, "client": CLIENT}
    assert connect_error({**base, "caps": ["c"] * 65}) == "at /caps: must NOT have more than 64 items"
    assert connect_error({**base, "caps": ["ok", 1]}) == "at /caps/1: must be string"
    assert connect_error({**base, "caps": "tool-events"}) == "at /caps: must be array"


def test_connect_object_type_messages() -> None:
    base = {"minProtocol": 3, "maxProtocol": 3, "client": CLIENT}
    assert connect_error({**base, "auth": "secret"}) == "at /auth: must be object"
    assert connect_error({**base, "permissions": []}) == "at /permissions: must be object"
    assert connect_error(None) == "at root: must be object"
    assert connect_error([]) == "at root: must be object"


def test_connect_all_errors_joined_in_order() -> None:
    msg = connect_error({"minProtocol": 0, "client": {**CLIENT, "mode": "x"}, "zz": 1})
    assert msg == (
        "at /minProtocol: must be >= 1; "
        "at root: must have required property 'maxProtocol'; "
        "at /client/mode: must be equal to one of the allowed values; "
        "at root: unexpected property 'zz'"
    )


# --- format_errors on purpose-built models ----------------------------------------------------


class Color(enum.Enum):
    RED = "red"


def _no_bad(v: str) -> str:
    if v == "bad":
        raise ValueError("no bad values here")
    return v


class Sample(BaseModel):
    model_config = ConfigDict(extra="forbid")

    small: int = Field(0, le=5)
    code: str = Field("a", pattern=r"^a+$")
    items: list[int] = Field(default_factory=lambda: [1, 2], min_length=2)
    flag: bool = False
    ratio: float = 0.0
    count: int = 0
    color: Color = Color.RED
    nothing: None = None
    pair: tuple[int, int] = (0, 0)
    mapping: dict[str, int] = Field(default_factory=dict)
    checked: Annotated[str, AfterValidator(_no_bad)] = "ok"


def sample_error(data: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as info:
        Sample.model_validate(data)
    return format_errors(info.value)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"small": 6}, "at /small: must be <= 5"),
        ({"code": "b"}, 'at /code: must match pattern "^a+$"'),
        ({"items": [1]}, "at /items: must NOT have fewer than 2 items"),
        ({"flag": []}, "at /flag: must be boolean"),
        ({"ratio": [1]}, "at /ratio: must be number"),
        ({"count": 1.5}, "at /count: must be integer"),
        ({"color": "blue"}, "at /color: must be equal to one of the allowed values"),
        ({"nothing": 1}, "at /nothing: must be null"),
        ({"pair": 5}, "at /pair: must be array"),
        ({"mapping": 5}, "at /mapping: must be object"),
        ({"checked": "bad"}, "at /checked: no bad values here"),
    ],
)
def test_format_errors_wording(data: dict[str, Any], expected: str) -> None:
    assert sample_error(data) == expected


def test_format_errors_unknown_type_falls_back_to_pydantic_message() -> None:
    exc = ValidationError.from_exception_data(
        "M", [{"type": "url_parsing", "loc": ("u",), "input": "x", "ctx": {"error": "relative URL"}}]
    )
    assert format_errors(exc) == "at /u: Input should be a valid URL, relative URL"


def test_format_errors_deduplicates_and_strips_function_locations() -> None:
    exc = ValidationError.from_exception_data(
        "M",
        [
            {"type": "missing", "loc": ("client", "id"), "input": {}},
            {"type": "missing", "loc": ("client", "function-after[check(), Client]", "id"), "input": {}},
        ],
    )
    assert format_errors(exc) == "at /client: must have required property 'id'"


def test_format_errors_empty_is_unknown() -> None:
    assert format_errors(ValidationError.from_exception_data("M", [])) == "unknown validation error"


# --- encode and outbound builders -------------------------------------------------------------


def test_encode_is_compact_utf8_json() -> None:
    assert encode({"a": "é", "b": [1, None], "c": True}) == '{"a":"é","b":[1,null],"c":true}'


def test_ok_response_shape() -> None:
    assert ok_response("r1", {"x": 1}) == {"type": "res", "id": "r1", "ok": True, "payload": {"x": 1}}
    assert ok_response("r2", None) == {"type": "res", "id": "r2", "ok": True, "payload": None}


def test_error_response_from_minimal_shape() -> None:
    frame = error_response("r1", ErrorShape(code="INVALID_REQUEST", message="bad"))
    assert frame == {"type": "res", "id": "r1", "ok": False, "error": {"code": "INVALID_REQUEST", "message": "bad"}}


def test_error_response_full_shape_and_payload() -> None:
    err = ErrorShape("UNAVAILABLE", "later", details={"method": "m"}, retryable=True, retry_after_ms=1500)
    frame = error_response("r3", err, payload={"partial": 1})
    assert frame == {
        "type": "res",
        "id": "r3",
        "ok": False,
        "error": {
            "code": "UNAVAILABLE",
            "message": "later",
            "details": {"method": "m"},
            "retryable": True,
            "retryAfterMs": 1500,
        },
        "payload": {"partial": 1},
    }


def test_error_shape_keeps_false_and_zero() -> None:
    wire = ErrorShape("X", "m", details={}, retryable=False, retry_after_ms=0).to_wire()
    assert wire == {"code": "X", "message": "m", "details": {}, "retryable": False, "retryAfterMs": 0}


def test_error_response_from_dict_passes_through() -> None:
    frame = error_response("r4", {"code": "NOT_PAIRED", "message": "pairing required"})
    assert frame["error"] == {"code": "NOT_PAIRED", "message": "pairing required"}
    assert "payload" not in frame


def test_event_frame_minimal() -> None:
    assert event_frame("tick") == {"type": "event", "event": "tick"}


def test_event_frame_full() -> None:
    frame = event_frame("presence", {"presence": []}, seq=0, state_version={"presence": 2, "health": 1})
    assert frame == {
        "type": "event",
        "event": "presence",
        "payload": {"presence": []},
        "seq": 0,
        "stateVersion": {"presence": 2, "health": 1},
    }


def test_builders_round_trip_through_encode() -> None:
    text = encode(event_frame("tick", {"ts": 5}, seq=7))
    assert orjson.loads(text) == {"type": "event", "event": "tick", "payload": {"ts": 5}, "seq": 7}
