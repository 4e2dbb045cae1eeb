"""Protocol constants and close-reason truncation."""

from __future__ import annotations

import pytest

from homarus.protocol.limits import (
    CLOSE_REASON_MAX_BYTES,
    MAX_BUFFERED_BYTES,
    MAX_PAYLOAD_BYTES,
    MAX_PREAUTH_PAYLOAD_BYTES,
    PROTOCOL_VERSION,
    SUPPORTED_PROTOCOLS,
    TICK_INTERVAL_MS,
    CloseCode,
    truncate_reason,
)


def test_constants_match_the_original() -> None:
    assert PROTOCOL_VERSION == 3
    assert SUPPORTED_PROTOCOLS == (3, 4)
    assert MAX_PAYLOAD_BYTES == 26_214_400
    assert MAX_BUFFERED_BYTES == 52_428_800
    assert MAX_PREAUTH_PAYLOAD_BYTES == 65_536
    assert TICK_INTERVAL_MS == 30_000
    assert CLOSE_REASON_MAX_BYTES == 120


def test_close_codes() -> None:
    assert (CloseCode.NORMAL, CloseCode.PROTOCOL_ERROR, CloseCode.POLICY_VIOLATION) == (1000, 1002, 1008)
    assert (CloseCode.MESSAGE_TOO_BIG, CloseCode.SERVICE_RESTART, CloseCode.AUTH_CHANGED) == (1009, 1012, 4001)


@pytest.mark.parametrize("reason", ["", "slow consumer", "x" * 120, "é" * 60])
def test_short_reasons_unchanged(reason: str) -> None:
    assert truncate_reason(reason) == reason


def test_ascii_cut_to_120_bytes() -> None:
    assert truncate_reason("a" * 121) == "a" * 120
    assert truncate_reason("b" * 5000) == "b" * 120


def test_two_byte_character_not_split() -> None:
    # 1 + 60*2 = 121 bytes: the last "é" would straddle byte 120 and is dropped whole
    assert truncate_reason("a" + "é" * 60) == "a" + "é" * 59


def test_three_byte_character_not_split() -> None:
    # 118 + 3 bytes: the euro sign (3 bytes) would end at byte 121
    assert truncate_reason("a" * 118 + "€") == "a" * 118


def test_four_byte_character_not_split() -> None:
    text = "ab" + "😀" * 40  # 2 + 160 bytes
    out = truncate_reason(text)
    assert out == "ab" + "😀" * 29  # 2 + 116 = 118 bytes; a 30th would need 122
    assert len(out.encode("utf-8")) == 118


def test_character_ending_exactly_at_limit_is_kept() -> None:
    text = "a" * 117 + "€" + "z"  # the euro sign ends at byte 120
    assert truncate_reason(text) == "a" * 117 + "€"


def test_result_is_always_a_prefix_within_limit() -> None:
    for n in range(100, 130):
        for ch in ("x", "é", "€", "😀"):
            text = "y" * (n % 7) + ch * n
            out = truncate_reason(text)
            size = len(out.encode("utf-8"))
            assert text.startswith(out)
            if len(text.encode("utf-8")) <= 120:
                assert out == text
            else:
                assert 120 - len(ch.encode("utf-8")) < size <= 120
