"""The one place that turns exceptions and refusals into wire errors: WS error shapes, and HTTP
error bodies in one shape per surface family — the original's where its clients read them:

* ``gateway``: ``{"ok": false, "error": {"type", "message"}}`` — ``/tools/invoke``, ``/sessions/*``;
* ``hooks``: ``{"ok": false, "error": "<message>"}`` — ``/hooks/*`` once the caller is authenticated;
* ``openai``: ``{"error": {"message", "type", "code"?, "param"?}}`` — ``/v1/*`` and every bearer-auth
  refusal;
* ``plain``: ``text/plain`` — probes, unknown routes, the Control UI's files, webhook authentication.
"""

from __future__ import annotations

import logging
import math
from typing import Any, Literal

from starlette.responses import JSONResponse, PlainTextResponse, Response

from homarus.errors import Forbidden, HomarusError, RateLimited
from homarus.protocol.frames import ErrorShape

__all__ = [
    "Family",
    "error_response",
    "error_shape",
    "http_error_response",
    "openai_error_body",
    "plain_error",
    "retry_after",
]

Family = Literal["gateway", "hooks", "openai", "plain"]

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


def openai_error_body(message: str, kind: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    """The ``openai`` family's body (also sent as an SSE error event)."""
    err: dict[str, Any] = {"message": message, "type": kind}
    if code is not None:
        err["code"] = code
    if param is not None:
        err["param"] = param
    return {"error": err}


def error_response(
    family: Family,
    status: int,
    message: str,
    *,
    kind: str = "invalid_request_error",
    code: str | None = None,
    param: str | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    """An HTTP error in ``family``'s shape (``kind`` and ``code`` where the shape has them)."""
    if family == "plain":
        return PlainTextResponse(message, status_code=status, headers=headers)
    body: dict[str, Any]
    if family == "gateway":
        body = {"ok": False, "error": {"type": kind, "message": message}}
    elif family == "hooks":
        body = {"ok": False, "error": message}
    else:
        body = openai_error_body(message, kind, code, param)
    return JSONResponse(body, status_code=status, headers=headers)


def retry_after(seconds: float) -> dict[str, str]:
    return {"Retry-After": str(max(1, math.ceil(seconds)))}


def http_error_response(exc: HomarusError, family: Family = "openai") -> Response:
    """``exc`` as an HTTP error of ``family``: its status and type (``Retry-After`` when rate limited)."""
    headers: dict[str, str] = {}
    if isinstance(exc, RateLimited) and exc.retry_after_ms is not None:
        headers = retry_after(exc.retry_after_ms / 1000)
    return error_response(family, exc.http_status, exc.message, kind=exc.http_type, headers=headers)


def plain_error(status: int, text: str, headers: dict[str, str] | None = None) -> Response:
    return error_response("plain", status, text, headers=headers)
