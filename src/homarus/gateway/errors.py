"""The one place that turns exceptions into wire errors (WS error shapes, HTTP bodies)."""

from __future__ import annotations

import logging
import math

from starlette.responses import JSONResponse, PlainTextResponse, Response

from homarus.errors import Forbidden, HomarusError, RateLimited
from homarus.protocol.frames import ErrorShape

__all__ = ["error_shape", "http_error_response", "plain_error"]

log = logging.getLogger("homarus.gateway")


def error_shape(exc: BaseException, *, protocol: int = 3) -> ErrorShape:
    """The WS error for ``exc``. Unexpected exceptions become UNAVAILABLE, logged with traceback."""
    if isinstance(exc, HomarusError):
        code = exc.error_code
        if protocol >= 4 and isinstance(exc, Forbidden):
            code = "FORBIDDEN"  # v4 clients get the dedicated code; message stays the same
        return ErrorShape(
            code=code,
            message=exc.message,
            details=exc.details,
            retryable=exc.retryable,
            retry_after_ms=exc.retry_after_ms,
        )
    log.exception("unhandled error in method handler", exc_info=exc)
    return ErrorShape(code="UNAVAILABLE", message=f"internal error: {type(exc).__name__}")


def http_error_response(exc: HomarusError) -> Response:
    """JSON error body in the OpenAI-style shape ``{"error": {"message", "type"}}``."""
    headers: dict[str, str] = {}
    if isinstance(exc, RateLimited) and exc.retry_after_ms is not None:
        headers["Retry-After"] = str(max(1, math.ceil(exc.retry_after_ms / 1000)))
    return JSONResponse(
        {"error": {"message": exc.message, "type": exc.http_type}},
        status_code=exc.http_status,
        headers=headers,
    )


def plain_error(status: int, text: str, headers: dict[str, str] | None = None) -> Response:
    return PlainTextResponse(text, status_code=status, headers=headers)
