"""Failure classification: context overflow, retryable errors, failover reasons, retry-after, error text."""

from __future__ import annotations

import json
from email.utils import formatdate

import pytest

from homarus.providers.classify import (
    FAILOVER_REASONS,
    classify_failure,
    error_body_text,
    http_error_text,
    is_context_overflow,
    is_retryable,
    parse_retry_after,
    scrub,
)

OVERFLOW_TEXTS = [
    "prompt is too long: 213462 tokens > 200000 maximum",
    "Input is too long for requested model.",
    "Your input exceeds the context window of this model",
    "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
    "This model's maximum prompt length is 131072 but the request contains 140000 tokens.",
    "Please reduce the length of the messages or completion.",
    "This endpoint's maximum context length is 8192 tokens. However, you requested about 9000 tokens",
    "prompt token count of 140000 exceeds the limit of 128000",
    "the request exceeds the available context size, try increasing it",
    "Trying to keep the first 9000 tokens when context the overflows. greater than the context length",
    "invalid params, context window exceeds limit (2013)",
    "Your request exceeded model token limit: 262144",
    "HTTP 400: bad request (context_length_exceeded)",
    "Too many tokens in request",
    "token limit exceeded",
]


@pytest.mark.parametrize("text", OVERFLOW_TEXTS)
def test_overflow_patterns(text: str) -> None:
    assert is_context_overflow(text, 400, stop_reason="error", input_tokens=0, context_window=200_000)
    assert classify_failure(400, text) == "context_overflow"
    assert not is_retryable(text, 400)


def test_overflow_requires_an_error_unless_silent() -> None:
    text = "prompt is too long"
    assert not is_context_overflow(text, None, stop_reason="aborted", input_tokens=0, context_window=1000)
    assert not is_context_overflow(None, None, stop_reason="stop", input_tokens=900, context_window=1000)
    # z.ai: a successful reply whose input exceeds the window overflowed silently
    assert is_context_overflow(None, None, stop_reason="stop", input_tokens=1001, context_window=1000)
    assert not is_context_overflow(None, None, stop_reason="stop", input_tokens=1001, context_window=0)


@pytest.mark.parametrize(("text", "status"), [(None, 400), ("", 413), ("HTTP 400 (no body)", 400), ("  ", 413)])
def test_400_or_413_without_body_is_overflow(text: str | None, status: int) -> None:
    assert is_context_overflow(text, status, stop_reason="error", input_tokens=0, context_window=1000)
    assert classify_failure(status, text) == "context_overflow"


def test_other_empty_errors_are_not_overflow() -> None:
    assert not is_context_overflow("", 500, stop_reason="error", input_tokens=0, context_window=1000)
    assert not is_context_overflow("HTTP 400: bad field", 400, stop_reason="error", input_tokens=0, context_window=1)


@pytest.mark.parametrize(
    "text",
    [
        "Overloaded",
        "Rate limit reached for requests",
        "rate_limit_error",
        "Too Many Requests",
        "HTTP 502: bad gateway",
        "Service Unavailable",
        "internal server error",
        "Internal_Error",
        "connection error: [Errno 111] Connection refused",
        "connection closed mid-response (other side closed): peer closed connection",
        "fetch failed",
        "upstream connect error or disconnect/reset before headers",
        "terminated",
    ],
)
def test_retryable_texts(text: str) -> None:
    assert is_retryable(text, None)


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504, 529])
def test_retryable_statuses(status: int) -> None:
    assert is_retryable("HTTP error", status)


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("HTTP 401: invalid x-api-key", 401),
        ("HTTP 400: messages.0.content is required", 400),
        ("waited 1500 ms for 5000 tokens", None),  # numbers are matched as whole words only
        (None, None),
        ("prompt is too long; the server is overloaded", 529),  # overflow wins: it needs compaction
    ],
)
def test_not_retryable(text: str | None, status: int | None) -> None:
    assert not is_retryable(text, status)


@pytest.mark.parametrize(
    ("status", "text", "reason"),
    [
        (401, "HTTP 401: Incorrect API key provided", "auth"),
        (403, "HTTP 403: permission denied", "auth"),
        (None, "invalid x-api-key", "auth"),
        (402, "HTTP 402: payment required", "billing"),
        (429, "You exceeded your current quota (insufficient_quota)", "billing"),
        (400, "Your credit balance is too low to access the Anthropic API", "billing"),
        (429, "HTTP 429: slow down", "rate_limit"),
        (None, "rate limit exceeded", "rate_limit"),
        (529, "HTTP 529: Overloaded (overloaded_error)", "overloaded"),
        (None, "overloaded_error", "overloaded"),
        (503, "HTTP 503: Service Unavailable", "overloaded"),
        (408, "HTTP 408", "timeout"),
        (504, "HTTP 504: gateway timeout", "timeout"),
        (None, "request timed out after 30s", "timeout"),
        (None, "connection closed mid-response (other side closed)", "timeout"),
        (404, "HTTP 404: The model `gpt-9` does not exist", "model_not_found"),
        (400, "HTTP 400: model 'llama9' not found", "model_not_found"),
        (400, "HTTP 400: messages: roles must alternate (invalid_request_error)", "format"),
        (422, "HTTP 422: unprocessable", "format"),
        (400, "prompt is too long: 300000 tokens > 200000 maximum", "context_overflow"),
        (500, "HTTP 500: oops", "unknown"),
        (None, None, "unknown"),
    ],
)
def test_classify_failure(status: int | None, text: str | None, reason: str) -> None:
    assert classify_failure(status, text) == reason
    assert reason in FAILOVER_REASONS


def test_failover_reasons_are_the_documented_set() -> None:
    assert set(FAILOVER_REASONS) == {
        "auth",
        "billing",
        "rate_limit",
        "overloaded",
        "timeout",
        "format",
        "context_overflow",
        "model_not_found",
        "unknown",
    }


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after": " 1.5 "}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after-ms": "junk", "retry-after": "9"}) == 9.0
    assert parse_retry_after({}) is None
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({"retry-after": "-3"}) is None
    assert parse_retry_after({"retry-after": "inf"}) is None


def test_parse_retry_after_http_date() -> None:
    now = 1_700_000_000.0
    assert parse_retry_after({"retry-after": formatdate(now + 30, usegmt=True)}, now=now) == 30.0
    assert parse_retry_after({"retry-after": formatdate(now - 30, usegmt=True)}, now=now) == 0.0


@pytest.mark.parametrize(
    ("status", "body", "text"),
    [
        (
            429,
            {"error": {"message": "Slow down", "type": "rate_limit_error"}},
            "HTTP 429: Slow down (rate_limit_error)",
        ),
        (
            400,
            {"error": {"message": "too long", "type": "invalid_request_error", "code": "context_length_exceeded"}},
            "HTTP 400: too long (invalid_request_error, context_length_exceeded)",
        ),
        (
            529,
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            "HTTP 529: Overloaded (overloaded_error)",
        ),
        (404, {"error": "model 'x' not found"}, "HTTP 404: model 'x' not found"),
        (422, {"detail": "bad field"}, "HTTP 422: bad field"),
        (500, [{"error": {"message": "boom", "status": "INTERNAL", "code": 500}}], "HTTP 500: boom (INTERNAL)"),
    ],
)
def test_http_error_text_shapes(status: int, body: object, text: str) -> None:
    assert http_error_text(status, json.dumps(body).encode()) == text


def test_http_error_text_edge_cases() -> None:
    assert http_error_text(413, b"") == "HTTP 413 (no body)"
    assert http_error_text(502, b"<html>\n<b>Bad   gateway</b></html>") == "HTTP 502: <html> <b>Bad gateway</b></html>"
    assert http_error_text(500, b'{"unrelated": 1}') == 'HTTP 500: {"unrelated": 1}'
    long = http_error_text(500, json.dumps({"error": {"message": "x" * 2000}}).encode())
    assert len(long) < 600 and long.endswith("…")
    assert error_body_text({"nothing": True}) == ""


def test_scrub() -> None:
    assert scrub("bad key sk-secret-123 given", "sk-secret-123") == "bad key *** given"
    assert scrub("text", None) == "text"
    assert scrub("a b", "a") == "a b"  # too short to be a key: scrubbing would mangle text
