"""The ``gateway.controlUi`` section: the browser Control UI served by the gateway.

Wired with one line in :class:`homarus.config.schema.GatewayConfig`::

    control_ui: ControlUiConfig = Field(default_factory=ControlUiConfig)

``allowedOrigins`` widens the WebSocket origin check: by default a browser page may connect only
when it was loaded from the gateway itself (its ``Origin`` names the same host and port).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from homarus.config.base import ConfigModel

__all__ = ["ControlUiConfig", "normalize_origin"]

# One path segment: letters, digits and the few punctuation marks that need no escaping in HTML/URLs.
_SEGMENT = re.compile(r"^[A-Za-z0-9._~-]+$")


def normalize_origin(origin: str) -> str | None:
    """``scheme://host[:port]`` lower-cased with the scheme's default port made explicit, or None.

    Only http(s) origins with a host and nothing after it (no path, query, user info) qualify;
    ``null`` (sandboxed frames, file: pages) and anything malformed is not an origin we accept.
    """
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
        return None
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port or (443 if scheme == 'https' else 80)}"


class ControlUiConfig(ConfigModel):
    enabled: bool = True
    #: URL prefix the UI lives under ("/" = the root of the gateway port)
    base_path: str = Field("/", max_length=200)
    #: extra browser origins allowed to open a WebSocket (``"*"`` = any; use with care)
    allowed_origins: tuple[str, ...] = Field(default=(), max_length=64)

    @field_validator("base_path")
    @classmethod
    def _base_path_ok(cls, v: str) -> str:
        if v in ("", "/"):
            return "/"
        if not v.startswith("/"):
            raise ValueError('basePath must start with "/"')
        segments = v.strip("/").split("/")
        if any(s in (".", "..") or not _SEGMENT.match(s) for s in segments):
            raise ValueError("basePath may contain only letters, digits and . _ ~ - between slashes")
        return "/" + "/".join(segments)

    @field_validator("allowed_origins")
    @classmethod
    def _origins_ok(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        out = []
        for origin in v:
            if origin == "*":
                out.append(origin)
                continue
            normalized = normalize_origin(origin)
            if normalized is None:
                raise ValueError(f"not an http(s) origin (scheme://host[:port]): {origin!r}")
            out.append(normalized)
        return tuple(out)

    @property
    def prefix(self) -> str:
        """The base path without its trailing slash ("" at the root), for joining paths."""
        return "" if self.base_path == "/" else self.base_path
