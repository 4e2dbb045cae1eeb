"""The ``tools`` section: settings of built-in tools (for now the web tools).

```json5
tools: {
  web: {
    fetch: { maxChars: 50000, maxBytes: 2097152, timeoutSeconds: 30,
             allowPrivateNetwork: false },      // true is dangerous: the model can reach your LAN
    search: { provider: "brave",                // "brave" | "searxng" | "tavily"; unset = no web_search
              apiKey: "${BRAVE_API_KEY}",       // or the BRAVE_API_KEY / TAVILY_API_KEY environment variable
              baseUrl: null,                    // searxng: required (e.g. "http://127.0.0.1:8888")
              count: 5 },
  },
}
```
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from homarus.config.base import ConfigModel

__all__ = ["SearchProvider", "ToolsConfig", "WebFetchConfig", "WebSearchConfig", "WebToolsConfig"]

SearchProvider = Literal["brave", "searxng", "tavily"]


class WebFetchConfig(ConfigModel):
    #: the most characters of extracted text ``web_fetch`` returns (also caps its ``max_chars`` argument)
    max_chars: int = Field(50_000, ge=100, le=1_000_000)
    #: download limit; the body is cut past it
    max_bytes: int = Field(2_097_152, ge=1024, le=64 * 1024 * 1024)
    timeout_seconds: float = Field(30, gt=0, le=600)
    #: dangerous: let ``web_fetch`` reach loopback and private networks (cloud metadata stays blocked)
    allow_private_network: bool = False


class WebSearchConfig(ConfigModel):
    provider: SearchProvider | None = None
    api_key: SecretStr | None = None
    #: the provider's endpoint; required for searxng, optional (a different host) for the others
    base_url: str | None = None
    count: int = Field(5, ge=1, le=20)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith(("http://", "https://")):
            raise ValueError("baseUrl must be an http:// or https:// URL")
        return v

    @model_validator(mode="after")
    def _searxng_needs_url(self) -> WebSearchConfig:
        if self.provider == "searxng" and not self.base_url:
            raise ValueError("searxng needs baseUrl (the address of your SearXNG instance)")
        return self


class WebToolsConfig(ConfigModel):
    fetch: WebFetchConfig = Field(default_factory=WebFetchConfig)
    search: WebSearchConfig = Field(default_factory=WebSearchConfig)


ExecSecurity = Literal["deny", "allowlist", "full"]


class ExecToolConfig(ConfigModel):
    """``exec`` on the gateway host: deny runs nothing (the default); allowlist runs commands whose
    every segment is listed (or a safe bin) and asks an operator about the rest; full runs anything.
    The approvals file ``$STATE/exec-approvals.json`` can only tighten this."""

    security: ExecSecurity = "deny"
    #: ``on-miss``: ask an operator when the allowlist misses; ``always``: for every command
    ask: Literal["off", "on-miss", "always"] = "on-miss"
    #: when approval is needed and no operator is connected
    ask_fallback: ExecSecurity = "deny"
    #: binary names (ls, git) or globs on the resolved path (/usr/bin/*); shells/wrappers are always refused
    allowlist: tuple[str, ...] = ()
    #: stdin-only filters (grep, sort, wc, ...) with checked flags pass without being listed
    safe_bins: bool = True
    approval_timeout_seconds: int = Field(1800, ge=1, le=86_400)
    path: str = "/usr/local/bin:/usr/bin:/bin"
    max_timeout_seconds: int = Field(1800, ge=1, le=86_400)
    max_output_bytes: int = Field(200_000, ge=1024, le=16 * 1024 * 1024)
    max_background: int = Field(8, ge=1, le=64)


class ToolPolicyLayer(ConfigModel):
    """One layer of tool policy: a profile and/or allow/deny globs (deny wins; ``*`` wildcard)."""

    profile: Literal["minimal", "coding", "messaging", "full"] | None = None
    allow: tuple[str, ...] | None = None
    deny: tuple[str, ...] = ()
    also_allow: tuple[str, ...] = ()


class AgentToolsConfig(ToolPolicyLayer):
    """An agent's own tool policy: a layer, plus layers per provider or provider/model."""

    by_provider: dict[str, ToolPolicyLayer] = Field(default_factory=dict)


class SubagentToolsConfig(ConfigModel):
    #: a sub-agent at this depth or deeper may not spawn, list or read sessions (1 = default leaf)
    max_spawn_depth: int = Field(1, ge=1, le=5)
    tools: ToolPolicyLayer = Field(default_factory=ToolPolicyLayer)


class ToolsConfig(ConfigModel):
    profile: Literal["minimal", "coding", "messaging", "full"] | None = None
    allow: tuple[str, ...] | None = None
    deny: tuple[str, ...] = ()
    also_allow: tuple[str, ...] = ()
    #: per provider or provider/model
    by_provider: dict[str, ToolPolicyLayer] = Field(default_factory=dict)
    subagents: SubagentToolsConfig = Field(default_factory=SubagentToolsConfig)
    #: describe every tool by name + one line only; the model fetches parameters with ``tool_schema``
    lazy_schemas: bool = False
    #: describe the tools their authors mark as large or rarely needed (the browser, cron, sessions,
    #: process, memory_get) by name + one line, their parameters on demand; false: all in full
    deferred_schemas: bool = True
    web: WebToolsConfig = Field(default_factory=WebToolsConfig)
    exec: ExecToolConfig = Field(default_factory=ExecToolConfig)
