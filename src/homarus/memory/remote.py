"""What the HTTP embedding providers share: key lookup, input limits, batching, retries, checks.

Each remote provider (OpenAI and compatible endpoints, Gemini, Voyage) only says how to build its
request and where the vectors are in its answer; :class:`RemoteEmbeddingProvider` does the rest the
same way for all of them, with the numbers of the original (reference §2):

* inputs are cut to the provider's token limit counted as UTF-8 bytes: a token of any byte-level
  tokenizer covers at least one byte, so this never exceeds the limit whatever the script;
* a call is split into requests of at most ``EMBEDDING_BATCH_MAX_TOKENS`` (UTF-8 bytes again);
* a request that fails with a rate limit, 429 or 5xx is retried 3 times, waiting 0.5 s, 1 s, 2 s
  (doubling each time, at most 8 s, plus 0-20 % jitter, or the server's ``Retry-After`` when longer); any
  other failure (400, 401, a timeout, garbage) is final and raised as :class:`EmbeddingError`;
* the answer must hold one vector per input, all of one length (and the length seen before);
  non-finite components become 0 and every vector is L2-normalised.

The API key goes into a header only: it never appears in a URL, a log line or an error message.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from homarus.memory.embedding import EmbeddingError, MissingApiKey, TaskType, normalize

if TYPE_CHECKING:
    import httpx

__all__ = [
    "BATCH_TIMEOUT_S",
    "EMBEDDING_BATCH_MAX_TOKENS",
    "QUERY_TIMEOUT_S",
    "RETRY_ATTEMPTS",
    "RemoteEmbeddingProvider",
    "batches",
    "is_retryable",
    "resolve_api_key",
    "truncate_utf8",
]

log = logging.getLogger(__name__)

#: bound of one request, "tokens" estimated as UTF-8 bytes like the original
EMBEDDING_BATCH_MAX_TOKENS = 8000
#: retries after the first try
RETRY_ATTEMPTS = 3
RETRY_BASE_S = 0.5
RETRY_MAX_S = 8.0
RETRY_JITTER = 0.2
QUERY_TIMEOUT_S = 60.0
BATCH_TIMEOUT_S = 120.0
#: error text worth another try (the original's list; Gemini says RESOURCE_EXHAUSTED)
_RETRYABLE_TEXT = re.compile(
    r"rate[ _-]?limit|\b429\b|too many requests|resource has been exhausted|resource_exhausted|\b5\d\d\b|cloudflare",
    re.IGNORECASE,
)
#: where a provider's key comes from when the config has none, in order
ENV_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "openai-compatible": ("OPENAI_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "voyage": ("VOYAGE_API_KEY",),
}
_ERROR_TEXT_MAX = 300


def resolve_api_key(provider_id: str, configured: str | None, env: Mapping[str, str]) -> str | None:
    """The configured key, else the first non-empty environment variable for the provider."""
    if configured and configured.strip():
        return configured.strip()
    for name in ENV_KEYS.get(provider_id, ()):
        value = env.get(name, "").strip()
        if value:
            return value
    return None


def is_retryable(status: int | None, text: str) -> bool:
    if status is not None and (status == 429 or 500 <= status <= 599):
        return True
    return bool(_RETRYABLE_TEXT.search(text))


def truncate_utf8(text: str, max_bytes: int) -> str:
    """``text`` cut to at most ``max_bytes`` UTF-8 bytes, never inside a character."""
    raw = text.encode("utf-8")
    if len(raw) <= max_bytes:
        return text
    return raw[:max_bytes].decode("utf-8", errors="ignore")


def batches(texts: Sequence[str], max_bytes: int, max_items: int) -> Iterator[list[str]]:
    """Greedy runs of consecutive texts under both bounds (an oversized text goes alone)."""
    current: list[str] = []
    size = 0
    for text in texts:
        cost = len(text.encode("utf-8"))
        if current and (size + cost > max_bytes or len(current) >= max_items):
            yield current
            current, size = [], 0
        current.append(text)
        size += cost
    if current:
        yield current


class _Retry(Exception):
    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after_s = retry_after_s


class RemoteEmbeddingProvider:
    """Base of the HTTP providers; subclasses set the class attributes and the two hooks."""

    id: str = ""
    default_model: str = ""
    default_base_url: str = ""
    #: per input, see the module docstring
    max_input_tokens: int = 8192
    #: the API's limit on inputs per request
    max_batch_items: int = 2048
    key_required: bool = True

    def __init__(
        self,
        *,
        model: str = "",
        base_url: str | None = None,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        client: httpx.AsyncClient | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        if self.key_required and not api_key:
            names = " or ".join(ENV_KEYS.get(self.id, ()))
            raise MissingApiKey(f"no API key for {self.id} embeddings (set memorySearch.remote.apiKey or {names})")
        self.model = self.normalize_model(model.strip() or self.default_model)
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        self.dims: int | None = None
        #: retries done so far (status and tests)
        self.retries = 0
        self._api_key = api_key
        self._extra_headers = dict(headers or {})
        self._client = client
        self._owns_client = client is None
        self._sleep = sleep
        self._jitter = jitter

    # -- hooks --------------------------------------------------------------------------------------
    def normalize_model(self, model: str) -> str:
        return model

    def build_request(self, texts: list[str], task: TaskType) -> tuple[str, dict[str, Any]]:
        """(URL, JSON body) of one request."""
        raise NotImplementedError

    def auth_headers(self, api_key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"}

    def extract_vectors(self, payload: Any) -> list[Any]:
        """The raw vectors of a 2xx answer, in input order; raise :class:`EmbeddingError` if absent."""
        raise NotImplementedError

    # -- the provider protocol ----------------------------------------------------------------------
    async def embed(self, texts: Sequence[str], task: TaskType = "document") -> list[list[float]]:
        # some APIs reject empty strings; a blank input gets the embedding of a single space
        prepared = [truncate_utf8(t, self.max_input_tokens) if t.strip() else " " for t in texts]
        out: list[list[float]] = []
        for batch in batches(prepared, EMBEDDING_BATCH_MAX_TOKENS, self.max_batch_items):
            out.extend(await self._embed_batch(batch, task))
        return out

    async def aclose(self) -> None:
        if self._client is not None and self._owns_client:
            await self._client.aclose()
        self._client = None

    # -- internals ----------------------------------------------------------------------------------
    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            import httpx

            from homarus.tls import client_context

            self._client = httpx.AsyncClient(verify=client_context())
            self._owns_client = True
        return self._client

    def _headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", **{k.lower(): v for k, v in self._extra_headers.items()}}
        if self._api_key:
            headers.update(self.auth_headers(self._api_key))
        return headers

    def _scrub(self, text: str) -> str:
        if self._api_key:
            text = text.replace(self._api_key, "***")
        text = " ".join(text.split())
        return text[:_ERROR_TEXT_MAX]

    async def _embed_batch(self, texts: list[str], task: TaskType) -> list[list[float]]:
        timeout_s = QUERY_TIMEOUT_S if task == "query" else BATCH_TIMEOUT_S
        delay = RETRY_BASE_S
        attempt = 0
        while True:
            try:
                return await self._post(texts, task, timeout_s)
            except _Retry as exc:
                if attempt >= RETRY_ATTEMPTS:
                    raise EmbeddingError(
                        f"{self.id} embeddings failed after {attempt + 1} attempts: {exc.message}", retryable=True
                    ) from None
                wait = min(RETRY_MAX_S, delay * (1.0 + RETRY_JITTER * self._jitter()))
                if exc.retry_after_s is not None:
                    wait = min(RETRY_MAX_S, max(wait, exc.retry_after_s))
                log.info("%s embeddings: %s; retry %d in %.2fs", self.id, exc.message, attempt + 1, wait)
                attempt += 1
                self.retries += 1
                await self._sleep(wait)
                delay *= 2

    async def _post(self, texts: list[str], task: TaskType, timeout_s: float) -> list[list[float]]:
        import httpx

        url, body = self.build_request(texts, task)
        try:
            response = await self._http().post(url, json=body, headers=self._headers(), timeout=timeout_s)
        except httpx.TimeoutException:
            raise EmbeddingError(f"{self.id} embeddings timed out after {timeout_s:g}s", retryable=True) from None
        except httpx.HTTPError as exc:
            text = self._scrub(f"{type(exc).__name__}: {exc}")
            if is_retryable(None, text):
                raise _Retry(text) from None
            raise EmbeddingError(f"{self.id} embeddings request failed: {text}", retryable=True) from None
        if response.status_code >= 300:
            text = self._scrub(f"HTTP {response.status_code}: {response.text}")
            if is_retryable(response.status_code, text):
                raise _Retry(text, _retry_after(response.headers))
            raise EmbeddingError(f"{self.id} embeddings failed: {text}", retryable=False)
        try:
            payload = json.loads(response.content)
        except ValueError:
            raise EmbeddingError(f"{self.id} embeddings: the response is not JSON", retryable=False) from None
        return self._check(self.extract_vectors(payload), len(texts))

    def _check(self, raw: list[Any], count: int) -> list[list[float]]:
        if len(raw) != count:
            raise EmbeddingError(f"{self.id} embeddings: {len(raw)} vectors for {count} inputs")
        vectors: list[list[float]] = []
        for row in raw:
            if not isinstance(row, list) or not row:
                raise EmbeddingError(f"{self.id} embeddings: a vector is not a non-empty list of numbers")
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in row):
                raise EmbeddingError(f"{self.id} embeddings: a vector holds something other than numbers")
            vectors.append(normalize([float(x) for x in row]))
        dims = {len(v) for v in vectors}
        if len(dims) > 1:
            raise EmbeddingError(f"{self.id} embeddings: vectors of different lengths {sorted(dims)}")
        (width,) = dims
        if self.dims is not None and width != self.dims:
            raise EmbeddingError(f"{self.id} embeddings: got {width} dimensions, expected {self.dims}")
        self.dims = width
        return vectors


def _retry_after(headers: Mapping[str, str]) -> float | None:
    raw = headers.get("retry-after-ms")
    scale = 0.001
    if raw is None:
        raw, scale = headers.get("retry-after"), 1.0
    try:
        return max(0.0, float(raw) * scale) if raw is not None else None
    except ValueError:
        return None  # an HTTP date: our own backoff applies


def field(payload: Any, key: str, provider_id: str) -> Any:
    """``payload[key]`` of a JSON object, or :class:`EmbeddingError` naming what was missing."""
    if not isinstance(payload, dict) or key not in payload:
        raise EmbeddingError(f"{provider_id} embeddings: the response has no {key!r}")
    return payload[key]
