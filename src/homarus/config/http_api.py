"""`gateway.http`: the optional HTTP APIs beside the WebSocket protocol (OpenAI-compatible endpoints).

Both endpoints are off by default: turning one on lets any holder of the gateway secret run the
agents through a second door, so it is a deliberate choice. ``/v1/models`` is served while either
is on.
"""

from __future__ import annotations

from pydantic import Field

from homarus.config.base import ConfigModel

__all__ = ["DEFAULT_MAX_BODY_BYTES", "GatewayHttpConfig", "HttpEndpointConfig", "HttpEndpointsConfig"]

DEFAULT_MAX_BODY_BYTES = 2 * 1024 * 1024


class HttpEndpointConfig(ConfigModel):
    enabled: bool = False
    #: request bodies above this are refused with 413 (inline images count)
    max_body_bytes: int = Field(DEFAULT_MAX_BODY_BYTES, ge=1024, le=20 * 1024 * 1024)


class HttpEndpointsConfig(ConfigModel):
    chat_completions: HttpEndpointConfig = Field(default_factory=HttpEndpointConfig)
    responses: HttpEndpointConfig = Field(default_factory=HttpEndpointConfig)


class GatewayHttpConfig(ConfigModel):
    endpoints: HttpEndpointsConfig = Field(default_factory=HttpEndpointsConfig)
