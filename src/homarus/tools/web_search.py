"""Web search providers: how to ask Brave, SearXNG or Tavily, and how to read their answers.

Pure request building and response parsing; the request itself goes through the SSRF-guarded
client in :mod:`homarus.tools.web`.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from homarus.config.tools import SearchProvider

__all__ = ["DEFAULT_BASE_URLS", "SearchHit", "SearchRequest", "build_search_request", "parse_search_hits"]

DEFAULT_BASE_URLS: dict[SearchProvider, str] = {
    "brave": "https://api.search.brave.com",
    "tavily": "https://api.tavily.com",
}
#: environment variables consulted (through the config loader) when the config has no apiKey
API_KEY_ENV: dict[SearchProvider, str] = {"brave": "BRAVE_API_KEY", "tavily": "TAVILY_API_KEY"}
_TAG = re.compile(r"<[^>]{0,200}>")


@dataclass(frozen=True, slots=True)
class SearchHit:
    title: str
    url: str
    snippet: str = ""


@dataclass(frozen=True, slots=True)
class SearchRequest:
    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    content: bytes | None = None


def build_search_request(
    provider: SearchProvider, query: str, count: int, *, api_key: str | None, base_url: str | None
) -> SearchRequest:
    """The HTTP request of one search. ValueError names what is missing from the config."""
    base = (base_url or DEFAULT_BASE_URLS.get(provider, "")).rstrip("/")
    if not base:
        raise ValueError(f"{provider} needs tools.web.search.baseUrl")
    if provider == "searxng":
        params = urlencode({"q": query, "format": "json", "safesearch": 1})
        return SearchRequest("GET", f"{base}/search?{params}", {"accept": "application/json"})
    if not api_key:
        raise ValueError(f"{provider} needs tools.web.search.apiKey (or the {API_KEY_ENV[provider]} variable)")
    if provider == "brave":
        params = urlencode({"q": query, "count": count})
        headers = {"accept": "application/json", "x-subscription-token": api_key}
        return SearchRequest("GET", f"{base}/res/v1/web/search?{params}", headers)
    body = json.dumps({"query": query, "max_results": count, "search_depth": "basic"}).encode()
    headers = {"accept": "application/json", "content-type": "application/json", "authorization": f"Bearer {api_key}"}
    return SearchRequest("POST", f"{base}/search", headers, body)


def _clean(value: Any) -> str:
    text = value if isinstance(value, str) else ""
    return re.sub(r"\s+", " ", html.unescape(_TAG.sub("", text))).strip()


def parse_search_hits(provider: SearchProvider, data: Any, count: int) -> list[SearchHit]:
    """The hits of a provider's JSON answer (at most ``count``); ValueError when the shape is wrong."""
    if not isinstance(data, dict):
        raise ValueError("the answer is not a JSON object")
    items: Any = (data.get("web") or {}).get("results") if provider == "brave" else data.get("results")
    if items is None:
        items = []
    if not isinstance(items, list):
        raise ValueError("results is not a list")
    snippet_key = "description" if provider == "brave" else "content"
    hits: list[SearchHit] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("url"), str):
            continue
        hits.append(SearchHit(_clean(item.get("title")) or item["url"], item["url"], _clean(item.get(snippet_key))))
        if len(hits) >= count:
            break
    return hits
