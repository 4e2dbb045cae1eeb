"""The ``mcp`` config section: the MCP servers whose tools the agents may call.

``mcp.servers.<name>`` is a local server started as a child process and spoken to over its
stdin/stdout (``command``, ``args``, ``env``, ``cwd``) or a remote one (``url``, ``headers``; the
streamable HTTP transport, SSE when ``transport: "sse"`` or when ``auto`` finds no streamable
endpoint). ``env`` and ``headers`` values are secrets: never logged, never in a status.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, SecretStr, model_validator

from homarus.config.base import ConfigModel
from homarus.config.sandbox import SandboxLimits

__all__ = ["SERVER_NAME", "McpConfig", "McpServerConfig"]

#: a server's name prefixes its tools' names (``<server>__<tool>``): letters, digits, ``_`` and ``-``
SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")


class McpServerConfig(ConfigModel):
    enabled: bool = True
    command: str | None = Field(None, min_length=1, max_length=4096)
    args: list[str] = Field(default_factory=list, max_length=256)
    env: dict[str, SecretStr] = Field(default_factory=dict)
    cwd: str | None = Field(None, max_length=4096)
    url: str | None = Field(None, min_length=1, max_length=4096)
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    transport: Literal["auto", "stdio", "http", "sse"] = "auto"
    #: ``lazy``: started by the first agent run that lists tools; ``eager``: when the gateway starts
    startup: Literal["lazy", "eager"] = "lazy"
    #: one tool call, and the server's start (handshake and tool listing)
    timeout_ms: int = Field(60_000, ge=100, le=3_600_000)
    #: a tool result is cut to this many characters of text
    max_output_chars: int = Field(50_000, ge=1_000, le=5_000_000)
    #: agents that get this server's tools (absent: every agent; tool policy still applies)
    agents: list[str] | None = None
    #: a remote server on a private, loopback or link-local address (refused by default, as for
    #: web_fetch; cloud-metadata addresses stay refused)
    allow_private_network: bool = False
    #: a stdio server runs inside the bubblewrap sandbox as an unprivileged user, in a private
    #: directory (or ``cwd``) mounted read-write, with the system read-only and no network
    sandbox: bool = False
    #: the sandboxed server shares the host's network (it needs to reach an API)
    sandbox_network: bool = False
    #: host paths the sandboxed server may read (read-only, at the same place); the command's
    #: own install prefix (a virtualenv, a ``node_modules``) is added for it
    sandbox_read_paths: list[str] = Field(default_factory=list, max_length=64)
    #: rlimits of the sandboxed server (CPU seconds default to a day: it lives long)
    sandbox_limits: SandboxLimits = Field(default_factory=lambda: SandboxLimits(cpu_seconds=86_400))

    @model_validator(mode="after")
    def _one_kind(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("a server has either command (stdio) or url (remote), not both or neither")
        if self.sandbox and self.command is None:
            raise ValueError("sandbox is for stdio servers (a command)")
        for path in self.sandbox_read_paths:
            if not path.startswith("/") or "\0" in path:
                raise ValueError(f"sandboxReadPaths: {path!r} is not an absolute path")
        if self.command is not None and self.transport not in ("auto", "stdio"):
            raise ValueError(f"transport {self.transport!r} needs a url")
        if self.url is not None:
            if self.transport == "stdio":
                raise ValueError('transport "stdio" needs a command')
            if not self.url.startswith(("http://", "https://")):
                raise ValueError("url must be http:// or https://")
        return self

    @property
    def kind(self) -> Literal["stdio", "http", "sse"]:
        if self.command is not None:
            return "stdio"
        return "sse" if self.transport == "sse" else "http"


class McpConfig(ConfigModel):
    servers: dict[str, McpServerConfig] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _names(self) -> McpConfig:
        for name in self.servers:
            if not SERVER_NAME.match(name):
                raise ValueError(f"server name {name!r}: letters, digits, '_' and '-' (at most 32), not '__'")
            if "__" in name:
                raise ValueError(f"server name {name!r} must not contain '__' (it separates server and tool)")
        return self

    def enabled(self) -> dict[str, McpServerConfig]:
        return {name: s for name, s in self.servers.items() if s.enabled}
