"""What went wrong with a model call: context overflow, retryable, failover reason, retry-after.

The patterns come from pi's ``overflow.ts`` and agent-session retry regex (reference §2.6/§2.7) so the
agent loop can decide between compaction, retry with backoff, profile rotation and model fallback from
an ``AssistantMessage.error_message`` plus the HTTP status alone. Also home to the helpers that turn an
HTTP error body into that short text, so the text and its classification live side by side.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from collections.abc import Mapping
from typing import Any, Literal, get_args

__all__ = [
    "NO_BODY",
    "FailoverReason",
    "classify_failure",
    "error_body_text",
    "http_error_text",
    "is_context_overflow",
    "is_retryable",
    "parse_retry_after",
    "scrub",
]

FailoverReason = Literal[
    "auth", "billing", "rate_limit", "overloaded", "timeout", "format", "context_overflow", "model_not_found", "unknown"
]
FAILOVER_REASONS: tuple[str, ...] = get_args(FailoverReason)

#: marker the adapters put in the text of an error response without a body (Cerebras overflow)
NO_BODY = "(no body)"

_OVERFLOW = re.compile(
    "|".join(
        [
            r"prompt is too long",  # Anthropic
            r"input is too long for requested model",  # Bedrock
            r"exceeds the context window",  # OpenAI
            r"input token count.*exceeds the maximum",  # Gemini
            r"maximum prompt length is \d+",  # xAI
            r"reduce the length of the messages",  # Groq
            r"maximum context length is \d+ tokens",  # OpenRouter, vLLM
            r"exceeds the limit of \d+",  # Copilot
            r"exceeds the available context size",  # llama.cpp
            r"greater than the context length",  # LM Studio
            r"context window exceeds limit",  # MiniMax
            r"exceeded model token limit",  # Kimi
            r"context[_ ]length[_ ]exceeded",
            r"too many tokens",
            r"token limit exceeded",
        ]
    ),
    re.IGNORECASE,
)
# pi's regex, with word boundaries around the status numbers so "1500 ms" or "5000 tokens" do not match
_RETRYABLE = re.compile(
    r"overloaded|rate.?limit|too many requests|\b(?:429|500|502|503|504|529)\b|service.?unavailable|server.?error"
    r"|internal.?error|connection.?(?:error|refused)|other side closed|fetch failed|upstream.?connect"
    r"|reset before headers|terminated|retry delay",
    re.IGNORECASE,
)
_RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504, 529})

_BILLING = re.compile(
    r"insufficient.?(?:quota|credits?|balance|funds)|billing|payment required|credit balance|out of credits"
    r"|exceeded your current quota|quota exceeded",
    re.IGNORECASE,
)
_AUTH = re.compile(
    r"invalid.{0,12}api.?key|incorrect api key|api.?key.{0,20}(?:invalid|missing|required)|unauthori[sz]ed"
    r"|authentication|permission.?denied|invalid x-api-key|forbidden|access denied|invalid token",
    re.IGNORECASE,
)
_MODEL_NOT_FOUND = re.compile(
    r"model.{0,80}(?:not found|does not exist|not exist|unknown|unsupported|not available)|model_not_found"
    r"|unknown model|no such model|invalid model",
    re.IGNORECASE,
)
_RATE_LIMIT = re.compile(r"rate.?limit|too many requests|\b429\b|resource.?exhausted|throttl", re.IGNORECASE)
_OVERLOADED = re.compile(r"overloaded|\b529\b|service.?unavailable|\b503\b|capacity", re.IGNORECASE)
_TIMEOUT = re.compile(
    r"timed? ?out|timeout|deadline exceeded|other side closed|connection reset|econnreset|etimedout|\b504\b",
    re.IGNORECASE,
)
_FORMAT = re.compile(r"invalid.?request|invalid_request_error|validation|malformed|schema|unexpected field", re.I)


def is_context_overflow(
    error_text: str | None,
    status: int | None,
    *,
    stop_reason: str = "error",
    input_tokens: int = 0,
    context_window: int = 0,
) -> bool:
    """True when the request did not fit the model's context window.

    ``input_tokens`` should be ``usage.input + usage.cache_read`` of the response; a successful
    (``stop``) response whose input exceeds the window overflowed silently (z.ai).
    """
    if stop_reason == "stop":
        return context_window > 0 and input_tokens > context_window
    if stop_reason != "error":
        return False
    return _overflow_text(error_text, status)


def _overflow_text(text: str | None, status: int | None) -> bool:
    body = (text or "").strip()
    if body and _OVERFLOW.search(body):
        return True
    # Cerebras answers an oversized prompt with a bare 400/413
    return status in (400, 413) and (not body or NO_BODY in body)


def is_retryable(error_text: str | None, status: int | None) -> bool:
    """Worth the same request again after a backoff; never a context overflow (that needs compaction)."""
    if _overflow_text(error_text, status):
        return False
    if status in _RETRYABLE_STATUS:
        return True
    return bool(error_text and _RETRYABLE.search(error_text))


def classify_failure(status: int | None, text: str | None) -> FailoverReason:
    """Why a call failed, for auth-profile rotation and model fallback (reference §2.7, §7.1)."""
    body = text or ""
    if _overflow_text(body, status):
        return "context_overflow"
    # billing first: OpenAI reports an empty balance as 429 insufficient_quota, others as 403
    if status == 402 or _BILLING.search(body):
        return "billing"
    by_status: dict[int, FailoverReason] = {
        401: "auth",
        403: "auth",
        404: "model_not_found",
        408: "timeout",
        429: "rate_limit",
        502: "overloaded",
        503: "overloaded",
        529: "overloaded",
        504: "timeout",
    }
    if status in by_status:
        return by_status[status]
    for pattern, reason in (
        (_MODEL_NOT_FOUND, "model_not_found"),
        (_RATE_LIMIT, "rate_limit"),
        (_OVERLOADED, "overloaded"),
        (_AUTH, "auth"),
        (_TIMEOUT, "timeout"),
        (_FORMAT, "format"),
    ):
        if pattern.search(body):
            return reason  # type: ignore[return-value]
    if status in (400, 422):
        return "format"
    return "unknown"


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms``, or ``retry-after`` (seconds or an HTTP date)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            value = float(raw_ms.strip())
        except ValueError:
            value = float("nan")
        if value == value and value >= 0 and value != float("inf"):
            return value / 1000.0
    raw = lowered.get("retry-after")
    if raw is None or not raw.strip():
        return None
    raw = raw.strip()
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        return max(0.0, when.timestamp() - (time.time() if now is None else now))
    if seconds != seconds or seconds < 0 or seconds == float("inf"):
        return None
    return seconds


def scrub(text: str, secret: str | None) -> str:
    """Remove an API key from text that may echo request data (some servers quote the header)."""
    if secret and len(secret) >= 4:
        return text.replace(secret, "***")
    return text


def _clip(text: str, limit: int = 500) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def http_error_text(status: int, body: bytes) -> str:
    """``HTTP 429: Rate limit reached (rate_limit_error)`` from an error response, whatever its shape."""
    raw = body.decode("utf-8", errors="replace").strip()
    if not raw:
        return f"HTTP {status} {NO_BODY}"
    try:
        data: Any = json.loads(raw)
    except ValueError:
        return f"HTTP {status}: {_clip(raw, 300)}"
    text = error_body_text(data, skip=str(status))
    return f"HTTP {status}: {text or _clip(raw, 300)}"


def error_body_text(data: Any, *, skip: str = "") -> str:
    """``message (type, code)`` from the common error shapes; "" when there is no message."""
    message, tags = _error_fields(data)
    if not message:
        return ""
    extra = [t for t in tags if t and t != skip and t.lower() not in message.lower()]
    suffix = f" ({', '.join(dict.fromkeys(extra))})" if extra else ""
    return f"{_clip(message)}{suffix}"


def _error_fields(data: Any) -> tuple[str, list[str]]:
    """The human message and the machine tags (type, code) of the common error-body shapes."""
    if isinstance(data, list) and data:  # Google wraps the body in a list
        data = data[0]
    if not isinstance(data, dict):
        return ("", [])
    err = data.get("error", data)
    if isinstance(err, str):
        return (err, [])
    if not isinstance(err, dict):
        return ("", [])
    message = err.get("message") or err.get("detail") or data.get("message") or data.get("detail") or ""
    tags = [str(err[k]) for k in ("type", "code", "status") if isinstance(err.get(k), str | int)]
    return (str(message) if not isinstance(message, dict | list) else json.dumps(message), tags)
