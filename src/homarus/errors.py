"""The one exception tree of Homarus.

Every error the gateway can report derives from :class:`HomarusError` and carries the two
facts an edge needs to answer with it: ``http_status`` and the wire ``error_code``
(`INVALID_REQUEST`, `UNAVAILABLE`, ...). The mapping to HTTP bodies and WebSocket error
frames is written once, in ``homarus.gateway.errors``.

    HomarusError
    ├── UserError                 misuse: bad input, bad config, bad registration
    │   ├── ConfigError           config file missing keys, wrong types, bad JSON5
    │   ├── InvalidRequest        a request that fails validation or policy (400)
    │   │   └── Forbidden         caller lacks a scope (403)
    │   ├── Unauthorized          missing/wrong credentials (401)
    │   ├── NotFound              unknown thing (404)
    │   ├── PayloadTooLarge       body/frame over its bound (413)
    │   └── RegistrationError     duplicate method/route/plugin registration
    └── RuntimeFailure            the system could not do what was asked
        ├── Unavailable           temporarily unavailable; may carry retry_after_ms (503)
        │   └── RateLimited       a budget is exhausted (429)
        └── RequestTimeout        an operation ran out of time (408)
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "ConfigError",
    "Forbidden",
    "HomarusError",
    "InvalidRequest",
    "NotFound",
    "PayloadTooLarge",
    "RateLimited",
    "RegistrationError",
    "RequestTimeout",
    "RuntimeFailure",
    "Unauthorized",
    "Unavailable",
    "UserError",
]


class HomarusError(Exception):
    """Root of every error Homarus raises on purpose."""

    http_status: ClassVar[int] = 500
    error_code: ClassVar[str] = "UNAVAILABLE"
    #: the ``type`` string of HTTP JSON error bodies
    http_type: ClassVar[str] = "api_error"

    def __init__(
        self,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        retryable: bool | None = None,
        retry_after_ms: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details = details
        self.retryable = retryable
        self.retry_after_ms = retry_after_ms

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


class UserError(HomarusError):
    http_status = 400
    error_code = "INVALID_REQUEST"
    http_type = "invalid_request_error"


class ConfigError(UserError):
    """The configuration could not be loaded or does not validate."""

    def __init__(self, message: str, *, path: str | None = None, key: str | None = None) -> None:
        where = " ".join(p for p in (f"{path}:" if path else "", f"at {key}:" if key else "") if p)
        super().__init__(f"{where} {message}".strip())
        self.path = path
        self.key = key


class InvalidRequest(UserError):
    pass


class Forbidden(InvalidRequest):
    http_status = 403
    http_type = "forbidden"


class Unauthorized(UserError):
    http_status = 401
    http_type = "unauthorized"


class NotFound(UserError):
    http_status = 404
    http_type = "not_found"


class PayloadTooLarge(UserError):
    http_status = 413


class RegistrationError(UserError):
    """Two parts tried to register the same name; nothing is silently overridden."""


class RuntimeFailure(HomarusError):
    pass


class Unavailable(RuntimeFailure):
    http_status = 503


class RateLimited(Unavailable):
    http_status = 429
    http_type = "rate_limited"

    def __init__(self, message: str, *, retry_after_ms: int, details: dict[str, Any] | None = None) -> None:
        super().__init__(message, details=details, retryable=True, retry_after_ms=retry_after_ms)


class RequestTimeout(RuntimeFailure):
    http_status = 408
    http_type = "invalid_request_error"
