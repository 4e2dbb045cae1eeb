"""The incremental SSE parser: arbitrary chunk boundaries, multi-line data, comments, CRLF/CR, UTF-8."""

from __future__ import annotations

import pytest

from homarus.providers.sse import MAX_LINE_CHARS, SSEError, SSEEvent, SSEParser

STREAM = (
    ": keep-alive comment\r\n"
    "event: message_start\r\n"
    'data: {"a": "héllo ✓ 🦞"}\r\n'
    "\r\n"
    "data: line one\n"
    "data: line two\n"
    "id: 7\n"
    "retry: 1000\n"
    "\n"
    "data:no-space\r"
    "\r"
    "data: [DONE]\n\n"
)
EXPECTED = [
    SSEEvent("message_start", '{"a": "héllo ✓ 🦞"}'),
    SSEEvent("message", "line one\nline two"),
    SSEEvent("message", "no-space"),
    SSEEvent("message", "[DONE]"),
]


def feed_all(chunks: list[bytes]) -> list[SSEEvent]:
    parser = SSEParser()
    out: list[SSEEvent] = []
    for chunk in chunks:
        out.extend(parser.feed(chunk))
    return out + parser.close()


def test_whole_stream() -> None:
    assert feed_all([STREAM.encode()]) == EXPECTED


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 13])
def test_any_chunk_size_gives_the_same_events(size: int) -> None:
    raw = STREAM.encode()
    assert feed_all([raw[i : i + size] for i in range(0, len(raw), size)]) == EXPECTED


def test_every_two_way_split_including_mid_utf8_and_mid_crlf() -> None:
    raw = STREAM.encode()
    for cut in range(len(raw) + 1):
        assert feed_all([raw[:cut], raw[cut:]]) == EXPECTED, cut


def test_str_chunks_are_accepted() -> None:
    parser = SSEParser()
    assert parser.feed("data: a\n") == []
    assert parser.feed("\n") == [SSEEvent("message", "a")]


def test_events_wait_for_the_blank_line() -> None:
    parser = SSEParser()
    assert parser.feed(b"event: ping\ndata: {}\n") == []
    assert parser.feed(b"\n") == [SSEEvent("ping", "{}")]


def test_lone_cr_at_chunk_end_is_not_a_double_line_break() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: a\r") == []
    # the LF completes the CRLF of the same line; only the next CRLF ends the event
    assert parser.feed(b"\ndata: b\r\n") == []
    assert parser.feed(b"\r\n") == [SSEEvent("message", "a\nb")]


def test_trailing_event_without_blank_line_is_dispatched_on_close() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: [DONE]") == []
    assert parser.close() == [SSEEvent("message", "[DONE]")]


def test_empty_data_field_dispatches_an_empty_event_but_comments_alone_do_not() -> None:
    assert feed_all([b"data:\n\n: only a comment\n\nevent: x\n\n"]) == [SSEEvent("message", "")]


def test_bom_and_field_without_colon() -> None:
    assert feed_all([b"\xef\xbb\xbfdata: x\ndata\n\n"]) == [SSEEvent("message", "x\n")]


def test_invalid_utf8_is_replaced_not_raised() -> None:
    assert feed_all([b"data: \xff\xfe\n\n"]) == [SSEEvent("message", "\ufffd\ufffd")]


def test_unbounded_line_is_refused() -> None:
    parser = SSEParser()
    with pytest.raises(SSEError):
        parser.feed(b"x" * (MAX_LINE_CHARS + 1))
