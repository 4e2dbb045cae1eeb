"""The web tools: ``web_fetch`` (a URL's readable text) and ``web_search`` (a configured provider).

Every request goes through :class:`~homarus.security.ssrf.GuardedClient`: the model cannot make
the gateway reach loopback, the LAN or a cloud-metadata endpoint, even by redirects or DNS
rebinding. What comes back is wrapped as external untrusted content.

The tools read their settings from a :class:`WebSettings` value (built from the ``tools.web``
config section by :meth:`WebSettings.from_config`), so they can be made and tested without a
full config::

    settings = WebSettings.from_config(config.tools)
    client = guarded_client_for(settings)         # close with ``await client.aclose()``
    for tool in make_web_tools(settings, client):
        registry.register(tool)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from homarus.config.loader import provider_env_keys
from homarus.config.tools import SearchProvider, ToolsConfig
from homarus.security.external_content import wrap_external_content
from homarus.security.ssrf_rules import parse_target
from homarus.tools.base import Tool, ToolContext, ToolResult, tool_from_function
from homarus.tools.web_extract import decode_text, html_to_text, is_html, is_textual
from homarus.tools.web_search import API_KEY_ENV, build_search_request, parse_search_hits

if TYPE_CHECKING:
    from homarus.security.ssrf import FetchResult, GuardedClient

__all__ = ["WebSettings", "guarded_client_for", "make_web_tools"]


SEARCH_MAX_BYTES = 1_048_576
_ERROR_BODY_CHARS = 2_000


@dataclass(frozen=True, slots=True)
class WebSettings:
    """What the web tools need from the config (``tools.web``), with the same defaults."""

    max_chars: int = 50_000
    max_bytes: int = 2_097_152
    timeout_s: float = 30.0
    allow_private_network: bool = False
    search_provider: SearchProvider | None = None
    search_api_key: str | None = None
    search_base_url: str | None = None
    search_count: int = 5

    @classmethod
    def from_config(cls, tools: ToolsConfig, env_keys: Mapping[str, str] | None = None) -> WebSettings:
        """From the config section; a missing search apiKey falls back to ``BRAVE_API_KEY``/``TAVILY_API_KEY``."""
        fetch, search = tools.web.fetch, tools.web.search
        key = search.api_key.get_secret_value() if search.api_key is not None else None
        if key is None and search.provider in API_KEY_ENV:
            env = provider_env_keys() if env_keys is None else env_keys
            key = env.get(API_KEY_ENV[search.provider]) or None
        return cls(
            max_chars=fetch.max_chars,
            max_bytes=fetch.max_bytes,
            timeout_s=fetch.timeout_seconds,
            allow_private_network=fetch.allow_private_network,
            search_provider=search.provider,
            search_api_key=key,
            search_base_url=search.base_url,
            search_count=search.count,
        )


def guarded_client_for(settings: WebSettings) -> GuardedClient:
    """The shared guarded client of the web tools (logs a warning when private networks are allowed)."""
    from homarus.security.ssrf import GuardedClient, SsrfPolicy

    return GuardedClient(policy=SsrfPolicy(allow_private_network=settings.allow_private_network))


def make_web_tools(settings: WebSettings, client: GuardedClient | Callable[[], GuardedClient]) -> list[Tool]:
    """``web_fetch`` and ``web_search`` bound to ``settings`` and the shared ``client`` (or a callable
    giving it on the first fetch, so an unused web tool never loads the HTTP stack)."""

    def shared() -> GuardedClient:
        return client() if callable(client) else client

    async def web_fetch(
        ctx: ToolContext,
        url: str,
        max_chars: Annotated[int, Field(ge=100)] = 50_000,
        extract_mode: Literal["text", "markdown"] = "text",
    ) -> ToolResult:
        """Fetch an http(s) URL as readable text (HTML reduced to headings, paragraphs, lists and
        links). Private and local addresses are refused."""
        return await _web_fetch(shared(), settings, url, min(max_chars, settings.max_chars), extract_mode)

    async def web_search(
        ctx: ToolContext,
        query: Annotated[str, Field(min_length=1, max_length=400)],
        count: Annotated[int, Field(ge=1, le=20)] | None = None,
    ) -> ToolResult:
        """Search the web; returns titles, URLs and snippets. Use web_fetch to read a result."""
        return await _web_search(shared(), settings, query, count or settings.search_count)

    tags = frozenset({"web"})
    return [
        tool_from_function(web_fetch, tags=tags, summary="Fetch a URL as readable text"),
        tool_from_function(web_search, tags=tags, summary="Search the web"),
    ]


async def _web_fetch(client: GuardedClient, settings: WebSettings, url: str, max_chars: int, mode: str) -> ToolResult:
    from homarus.security.ssrf import FetchError, SsrfBlocked

    details: dict[str, Any] = {"url": url}
    try:
        result = await client.fetch(
            url,
            max_bytes=settings.max_bytes,
            timeout_s=settings.timeout_s,
            headers={"accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5"},
        )
    except (SsrfBlocked, FetchError) as exc:
        details["error"] = exc.message
        return ToolResult.text(f"web_fetch failed for {url}: {exc.message}", details=details, is_error=True)
    details.update(
        final_url=result.final_url,
        status=result.status,
        content_type=result.content_type,
        bytes=len(result.body),
        truncated=result.truncated,
    )
    if result.redirects:
        details["redirects"] = list(result.redirects)
    encoding = result.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity", "gzip", "x-gzip", "deflate") or not is_textual(
        result.content_type, result.body
    ):
        kind = result.content_type or "unknown type"
        details["binary"] = True
        text = (
            f"{result.final_url} returned binary content ({kind}, {len(result.body)} bytes"
            f"{', cut at the download limit' if result.truncated else ''}); web_fetch only returns text and HTML."
        )
        return ToolResult.text(text, details=details, is_error=result.status >= 400)
    text, title = _extract(result, mode)
    details["title"] = title or None
    notes: list[str] = []
    if result.truncated:
        notes.append(f"[download stopped at {settings.max_bytes} bytes; the page is longer]")
    if len(text) > max_chars:
        notes.append(f"[truncated: showing the first {max_chars} of {len(text)} characters]")
        text = text[:max_chars]
        details["truncated"] = True
    details["chars"] = len(text)
    if result.status >= 400:
        text = text[:_ERROR_BODY_CHARS]
    body = text + ("\n\n" + "\n".join(notes) if notes else "")
    meta = {"URL": result.final_url, "Status": str(result.status), "Title": title}
    wrapped = wrap_external_content(body, source="Web Fetch", meta=meta)
    if result.status >= 400:
        return ToolResult.text(
            f"HTTP {result.status} from {result.final_url}\n\n{wrapped}", details=details, is_error=True
        )
    return ToolResult.text(wrapped, details=details)


def _extract(result: FetchResult, mode: str) -> tuple[str, str]:
    html = is_html(result.content_type, result.body)
    decoded = decode_text(result.body, result.charset, html=html)
    if html:
        return html_to_text(decoded, base_url=result.final_url, markdown=mode == "markdown")
    return decoded.strip(), ""


async def _web_search(client: GuardedClient, settings: WebSettings, query: str, count: int) -> ToolResult:
    from homarus.security.ssrf import FetchError, SsrfBlocked

    provider = settings.search_provider
    if provider is None:
        return ToolResult.text(
            "web search is not configured: set tools.web.search.provider to brave, searxng or tavily "
            "(with its apiKey, or baseUrl for searxng) in the config.",
            details={"configured": False},
            is_error=True,
        )
    details: dict[str, Any] = {"provider": provider, "query": query}
    try:
        request = build_search_request(
            provider, query, count, api_key=settings.search_api_key, base_url=settings.search_base_url
        )
    except ValueError as exc:
        return ToolResult.text(
            f"web search is not configured: {exc}", details={**details, "configured": False}, is_error=True
        )
    policy = client.policy
    if settings.search_base_url:  # the operator's own endpoint may be on a private network (SearXNG at home)
        origin = parse_target(settings.search_base_url).origin
        policy = replace(policy, trusted_origins=policy.trusted_origins | {origin})
    try:
        result = await client.fetch(
            request.url,
            method=request.method,
            headers=request.headers,
            content=request.content,
            max_bytes=SEARCH_MAX_BYTES,
            timeout_s=settings.timeout_s,
            policy=policy,
        )
    except (SsrfBlocked, FetchError) as exc:
        return ToolResult.text(f"web search failed ({provider}): {exc.message}", details=details, is_error=True)
    if result.status != 200:
        snippet = result.body[:300].decode("utf-8", errors="replace")
        details["status"] = result.status
        return ToolResult.text(
            f"web search failed: HTTP {result.status} from {provider}: {snippet}", details=details, is_error=True
        )
    try:
        hits = parse_search_hits(provider, json.loads(result.body), count)
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        return ToolResult.text(
            f"web search failed: unreadable answer from {provider} ({exc})", details=details, is_error=True
        )
    details["results"] = [{"title": h.title, "url": h.url, "snippet": h.snippet} for h in hits]
    if not hits:
        return ToolResult.text(f"No results for {query!r}.", details=details)
    lines = []
    for i, hit in enumerate(hits, 1):
        lines.append(f"{i}. {hit.title}\n   {hit.url}" + (f"\n   {hit.snippet}" if hit.snippet else ""))
    text = wrap_external_content("\n".join(lines), source="Web Search", meta={"Query": query, "Provider": provider})
    return ToolResult.text(text, details=details)
