"""Asking a model provider what it offers, and one real round trip: for onboarding and
``homarus models list --discover`` / ``models test``.

Every failure becomes :class:`ProbeFailed` with one sentence a person can act on (a refused key,
nothing listening at a local URL, a model id the provider does not have), never a traceback.
The URLs here are the operator's own choice (a local Ollama is meant to be on loopback), so no
SSRF guard applies; the key goes in a header, never in a URL or a message.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from homarus.errors import Unavailable
from homarus.messages import Context, Done, ModelInfo, StreamError, StreamOptions, TextDelta, Usage, UserMessage
from homarus.providers.base import Provider

__all__ = ["Offered", "ProbeFailed", "RoundTrip", "list_models", "round_trip"]

ANTHROPIC_VERSION = "2023-06-01"


class ProbeFailed(Unavailable):
    """The provider could not be reached or refused: the message says what to do."""


@dataclass(frozen=True, slots=True)
class Offered:
    id: str
    context_window: int | None = None


@dataclass(slots=True)
class RoundTrip:
    text: str
    seconds: float
    first_token_s: float | None
    usage: Usage = field(default_factory=Usage)


def _models_url(api: str, base_url: str) -> str:
    base = base_url.rstrip("/")
    return f"{base}/v1/models" if api == "anthropic-messages" else f"{base}/models"


def _headers(api: str, api_key: str | None) -> dict[str, str]:
    if api == "anthropic-messages":
        return {"anthropic-version": ANTHROPIC_VERSION, **({"x-api-key": api_key} if api_key else {})}
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


async def list_models(api: str, base_url: str, api_key: str | None, *, timeout: float = 15.0) -> list[Offered]:
    """The models the provider lists (``GET /models``; Anthropic's ``/v1/models``), sorted by id."""
    url = _models_url(api, base_url)
    try:
        async with httpx.AsyncClient(timeout=timeout, follow_redirects=False, trust_env=False) as client:
            response = await client.get(url, headers=_headers(api, api_key))
    except httpx.ConnectError:
        raise ProbeFailed(f"nothing answers at {base_url}: is the server running, and is the URL right?") from None
    except httpx.TimeoutException:
        raise ProbeFailed(f"{base_url} did not answer within {timeout:.0f} s: is it up and reachable?") from None
    except httpx.HTTPError as exc:
        raise ProbeFailed(f"could not reach {base_url}: {type(exc).__name__}") from None
    if response.status_code in (401, 403):
        raise ProbeFailed(f"the provider refused the key (HTTP {response.status_code}): check it, or make a new one")
    if response.status_code == 404:
        raise ProbeFailed(f"no model list at {url} (HTTP 404): is this the API's base URL (often ending in /v1)?")
    if response.status_code >= 400:
        raise ProbeFailed(f"the provider answered HTTP {response.status_code} to {url}: try again later")
    try:
        body: Any = response.json()
        rows = body["data"] if isinstance(body, dict) and "data" in body else body.get("models", [])
        offered = [_offered(row) for row in rows if isinstance(row, dict)]
    except (ValueError, AttributeError, KeyError, TypeError):
        raise ProbeFailed(f"{url} did not answer with a model list (not the JSON an OpenAI-style API sends)") from None
    return sorted((o for o in offered if o.id), key=lambda o: o.id)


def _offered(row: dict[str, Any]) -> Offered:
    ident = str(row.get("id") or row.get("name") or row.get("model") or "")
    window = row.get("context_length") or row.get("context_window") or row.get("max_context_length")
    if window is None and isinstance(row.get("top_provider"), dict):
        window = row["top_provider"].get("context_length")
    return Offered(ident, int(window) if isinstance(window, int | float) and window > 0 else None)


async def round_trip(provider: Provider, model: ModelInfo, api_key: str | None, *, timeout: float = 60.0) -> RoundTrip:
    """Ask for one word and time it: the whole answer and its first token."""
    context = Context("You are a connectivity check. Answer with exactly: OK", [UserMessage("Say OK.")])
    options = StreamOptions(api_key=api_key, max_tokens=16, timeout_s=timeout)
    started = time.monotonic()
    first: float | None = None
    async for event in provider.stream(model, context, options):
        if isinstance(event, TextDelta) and first is None:
            first = time.monotonic() - started
        elif isinstance(event, Done):
            message = event.message
            return RoundTrip(message.text, time.monotonic() - started, first, message.usage)
        elif isinstance(event, StreamError):
            raise ProbeFailed(_stream_failure(event, model))
    raise ProbeFailed(f"{model.ref}: the answer ended without a final event")


def _stream_failure(event: StreamError, model: ModelInfo) -> str:
    detail = (event.message.error_message or "no detail").splitlines()[0][:300]
    if event.status in (401, 403):
        return f"{model.ref}: the provider refused the key (HTTP {event.status}): check it"
    if event.status == 404 or ("model" in detail.lower() and "not" in detail.lower()):
        hint = "pick one from `homarus models list --discover`"
        return f"{model.ref}: the provider does not have this model ({detail}): {hint}"
    if event.status == 429:
        return f"{model.ref}: rate-limited or out of credit (HTTP 429): wait, or check the account's billing"
    if event.status is None and ("connect" in detail.lower() or "refused" in detail.lower()):
        return f"{model.ref}: nothing answers at {model.base_url}: is the server running? ({detail})"
    return f"{model.ref}: the request failed" + (f" (HTTP {event.status})" if event.status else "") + f": {detail}"
