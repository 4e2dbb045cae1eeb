"""OpenAI, Gemini and Voyage embedding clients against a loopback server speaking their JSON."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from typing import Any

import pytest

from homarus.memory import remote
from homarus.memory.embedding import EmbeddingError, MissingApiKey
from homarus.memory.remote import EMBEDDING_BATCH_MAX_TOKENS, resolve_api_key, truncate_utf8
from homarus.memory.remote_gemini import GeminiEmbeddings
from homarus.memory.remote_openai import OpenAICompatibleEmbeddings, OpenAIEmbeddings
from homarus.memory.remote_voyage import VoyageEmbeddings
from tests.fakes.http_server import Answer, Seen, serve

KEY = "sk-test-SECRET-0123456789"


def vec(i: int, dims: int = 4) -> list[float]:
    return [float(i + 1)] + [0.0] * (dims - 1)


def openai_answer(seen: Seen, *, dims: int = 4, reverse: bool = False) -> Answer:
    inputs = json.loads(seen.body)["input"]
    data = [{"object": "embedding", "index": i, "embedding": vec(i, dims)} for i in range(len(inputs))]
    if reverse:
        data.reverse()
    body = {"object": "list", "data": data, "model": "m", "usage": {"prompt_tokens": 1, "total_tokens": 1}}
    return Answer(200, {"content-type": "application/json"}, json.dumps(body).encode())


def raw(status: int, body: str | bytes, **headers: str) -> Answer:
    data = body.encode() if isinstance(body, str) else body
    return Answer(status, {"content-type": "application/json", **headers}, data)


def sequence(*answers: Answer | Callable[[Seen], Answer]) -> Callable[[Seen], Answer]:
    """Answer each request with the next item; the last one repeats."""
    items = list(answers)

    def route(seen: Seen) -> Answer:
        item = items.pop(0) if len(items) > 1 else items[0]
        return item(seen) if callable(item) else item

    return route


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def openai(url: str, sleeps: Sleeps | None = None, **kw: Any) -> OpenAIEmbeddings:
    return OpenAIEmbeddings(base_url=url, api_key=KEY, sleep=sleeps or Sleeps(), jitter=lambda: 0.5, **kw)


async def test_openai_request_shape_order_and_normalisation() -> None:
    async with serve(lambda s: openai_answer(s, reverse=True)) as srv:
        p = openai(srv.url("/v1"))
        vectors = await p.embed(["alpha", "beta", "gamma"])
        await p.aclose()
    (req,) = srv.requests
    assert (req.method, req.target) == ("POST", "/v1/embeddings")
    assert req.headers["authorization"] == f"Bearer {KEY}"
    body = json.loads(req.body)
    assert body == {"model": "text-embedding-3-small", "input": ["alpha", "beta", "gamma"], "encoding_format": "float"}
    # data came back in reverse index order; each vec(i) normalises to the unit vector e0
    assert vectors == [[1.0, 0.0, 0.0, 0.0]] * 3
    assert p.dims == 4
    assert p.retries == 0


async def test_gemini_uses_batch_embed_with_task_types_and_header_key() -> None:
    def route(seen: Seen) -> Answer:
        reqs = json.loads(seen.body)["requests"]
        return raw(200, json.dumps({"embeddings": [{"values": [0.0, 3.0, 4.0]} for _ in reqs]}))

    async with serve(route) as srv:
        p = GeminiEmbeddings(model="models/gemini-embedding-001", base_url=srv.url("/v1beta"), api_key=KEY)
        q = await p.embed(["what is up"], task="query")
        d = await p.embed(["doc one", "doc two"], task="document")
        await p.aclose()
    first, second = srv.requests
    assert first.target == "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    assert KEY not in first.target
    assert first.headers["x-goog-api-key"] == KEY
    assert "authorization" not in first.headers
    body = json.loads(first.body)
    assert body["requests"] == [
        {
            "model": "models/gemini-embedding-001",
            "content": {"parts": [{"text": "what is up"}]},
            "taskType": "RETRIEVAL_QUERY",
        }
    ]
    assert [r["taskType"] for r in json.loads(second.body)["requests"]] == ["RETRIEVAL_DOCUMENT"] * 2
    assert q == [[0.0, 0.6, 0.8]]
    assert len(d) == 2


async def test_voyage_sends_input_type() -> None:
    async with serve(openai_answer) as srv:
        p = VoyageEmbeddings(base_url=srv.url("/v1"), api_key=KEY)
        await p.embed(["q"], task="query")
        await p.embed(["d"], task="document")
        await p.aclose()
    bodies = [json.loads(r.body) for r in srv.requests]
    assert [b["input_type"] for b in bodies] == ["query", "document"]
    assert bodies[0]["model"] == "voyage-4-large"
    assert srv.requests[0].target == "/v1/embeddings"


async def test_429_is_retried_with_backoff_then_succeeds() -> None:
    sleeps = Sleeps()
    route = sequence(raw(429, '{"error": {"message": "Rate limit reached"}}'), openai_answer)
    async with serve(route) as srv:
        p = openai(srv.url("/v1"), sleeps)
        vectors = await p.embed(["x"])
        await p.aclose()
    assert len(srv.requests) == 2
    assert p.retries == 1
    assert sleeps.waits == [pytest.approx(0.55)]  # 0.5 s + 10 % jitter (jitter() = 0.5 of 20 %)
    assert len(vectors) == 1


async def test_5xx_gives_up_after_three_retries_doubling_the_wait() -> None:
    sleeps = Sleeps()
    async with serve(lambda s: raw(503, "upstream unavailable")) as srv:
        p = openai(srv.url("/v1"), sleeps)
        with pytest.raises(EmbeddingError, match=r"after 4 attempts.*HTTP 503") as info:
            await p.embed(["x"])
        await p.aclose()
    assert len(srv.requests) == 4
    assert sleeps.waits == [pytest.approx(0.55), pytest.approx(1.1), pytest.approx(2.2)]
    assert info.value.retryable is True


async def test_retry_after_is_honoured_up_to_the_cap() -> None:
    sleeps = Sleeps()
    route = sequence(
        raw(429, "slow down", **{"retry-after": "3"}), raw(429, "slow down", **{"retry-after": "60"}), openai_answer
    )
    async with serve(route) as srv:
        p = openai(srv.url("/v1"), sleeps)
        await p.embed(["x"])
        await p.aclose()
    assert sleeps.waits == [pytest.approx(3.0), pytest.approx(8.0)]


async def test_rate_limit_text_in_another_status_is_retried() -> None:
    sleeps = Sleeps()
    route = sequence(raw(400, '{"error": {"status": "RESOURCE_EXHAUSTED", "message": "quota"}}'), openai_answer)
    async with serve(route) as srv:
        p = openai(srv.url("/v1"), sleeps)
        await p.embed(["x"])
        await p.aclose()
    assert p.retries == 1


async def test_400_is_not_retried_and_the_key_is_scrubbed(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    sleeps = Sleeps()
    async with serve(lambda s: raw(400, f'{{"error": {{"message": "bad input for key {KEY}"}}}}')) as srv:
        p = openai(srv.url("/v1"), sleeps)
        with pytest.raises(EmbeddingError, match="HTTP 400") as info:
            await p.embed(["x"])
        await p.aclose()
    assert len(srv.requests) == 1
    assert sleeps.waits == []
    assert KEY not in info.value.message
    assert "***" in info.value.message
    assert info.value.retryable is False
    assert KEY not in caplog.text


async def test_retries_never_log_the_key(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    route = sequence(raw(429, f"rate limited ({KEY})"), openai_answer)
    async with serve(route) as srv:
        p = openai(srv.url("/v1"))
        await p.embed(["x"])
        await p.aclose()
    assert "retry 1" in caplog.text
    assert KEY not in caplog.text


async def test_malformed_json_is_an_error_without_retry() -> None:
    async with serve(lambda s: raw(200, b'{"data": [ {"embedding": [1, 2')) as srv:
        p = openai(srv.url("/v1"))
        with pytest.raises(EmbeddingError, match="not JSON"):
            await p.embed(["x"])
        await p.aclose()
    assert len(srv.requests) == 1


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ('{"object": "list"}', "no 'data'"),
        ('{"data": {"embedding": [1]}}', "not a list"),
        ('{"data": [{"index": 0}]}', "no 'embedding'"),
        ('{"data": [{"index": 0, "embedding": []}]}', "non-empty list"),
        ('{"data": [{"index": 0, "embedding": [1, "2", 3]}]}', "other than numbers"),
        ('{"data": [{"index": 0, "embedding": [true, false]}]}', "other than numbers"),
        ("[]", "no 'data'"),
    ],
)
async def test_bad_shapes_are_embedding_errors(body: str, match: str) -> None:
    async with serve(lambda s: raw(200, body)) as srv:
        p = openai(srv.url("/v1"))
        with pytest.raises(EmbeddingError, match=match):
            await p.embed(["x"])
        await p.aclose()


async def test_nan_and_infinity_in_vectors_are_sanitised() -> None:
    body = '{"data": [{"index": 0, "embedding": [NaN, 3, 4, Infinity]}, {"index": 1, "embedding": [NaN, NaN, 0, 0]}]}'
    async with serve(lambda s: raw(200, body)) as srv:
        p = openai(srv.url("/v1"))
        a, b = await p.embed(["x", "y"])
        await p.aclose()
    assert a == pytest.approx([0.0, 0.6, 0.8, 0.0])
    assert b == [0.0, 0.0, 0.0, 0.0]  # nothing finite left: a zero vector, never NaN
    assert all(math.isfinite(x) for x in a + b)


async def test_wrong_number_of_vectors_is_an_error() -> None:
    body = json.dumps({"data": [{"index": 0, "embedding": [1.0, 0.0]}]})
    async with serve(lambda s: raw(200, body)) as srv:
        p = openai(srv.url("/v1"))
        with pytest.raises(EmbeddingError, match="1 vectors for 2 inputs"):
            await p.embed(["x", "y"])
        await p.aclose()


async def test_changing_dimensions_are_an_error() -> None:
    route = sequence(lambda s: openai_answer(s, dims=4), lambda s: openai_answer(s, dims=8))
    async with serve(route) as srv:
        p = openai(srv.url("/v1"))
        await p.embed(["x"])
        with pytest.raises(EmbeddingError, match="got 8 dimensions, expected 4"):
            await p.embed(["y"])
        await p.aclose()


async def test_mixed_lengths_in_one_answer_are_an_error() -> None:
    body = json.dumps({"data": [{"index": 0, "embedding": [1.0, 0.0]}, {"index": 1, "embedding": [1.0]}]})
    async with serve(lambda s: raw(200, body)) as srv:
        p = openai(srv.url("/v1"))
        with pytest.raises(EmbeddingError, match="different lengths"):
            await p.embed(["x", "y"])
        await p.aclose()


async def test_large_calls_are_split_into_bounded_batches_in_order() -> None:
    texts = [f"{i:04d} " + "x" * 995 for i in range(30)]  # 1000 bytes each: 8 per batch
    async with serve(openai_answer) as srv:
        p = openai(srv.url("/v1"))
        vectors = await p.embed(texts)
        await p.aclose()
    sent = [json.loads(r.body)["input"] for r in srv.requests]
    assert [len(batch) for batch in sent] == [8, 8, 8, 6]
    assert [t for batch in sent for t in batch] == texts
    assert all(sum(len(t.encode()) for t in batch) <= EMBEDDING_BATCH_MAX_TOKENS for batch in sent)
    assert len(vectors) == 30


async def test_gemini_batches_hold_at_most_100_requests() -> None:
    def route(seen: Seen) -> Answer:
        n = len(json.loads(seen.body)["requests"])
        return raw(200, json.dumps({"embeddings": [{"values": [1.0, 0.0]}] * n}))

    async with serve(route) as srv:
        p = GeminiEmbeddings(base_url=srv.url("/v1beta"), api_key=KEY)
        vectors = await p.embed(["hi"] * 250)
        await p.aclose()
    assert [len(json.loads(r.body)["requests"]) for r in srv.requests] == [100, 100, 50]
    assert len(vectors) == 250


async def test_oversized_input_is_truncated_to_the_provider_limit() -> None:
    def route(seen: Seen) -> Answer:
        reqs = json.loads(seen.body)["requests"]
        return raw(200, json.dumps({"embeddings": [{"values": [1.0]} for _ in reqs]}))

    async with serve(route) as srv:
        p = GeminiEmbeddings(base_url=srv.url("/v1beta"), api_key=KEY)
        await p.embed(["é" * 5000, "", "   "])
        await p.aclose()
    sent = [r["content"]["parts"][0]["text"] for r in json.loads(srv.requests[0].body)["requests"]]
    assert sent[0] == "é" * 1024  # 2048 bytes, cut between characters
    assert sent[1:] == [" ", " "]  # blank inputs are sent as one space, never rejected as empty


def test_truncate_utf8_never_splits_a_character() -> None:
    assert truncate_utf8("aé€😀", 4) == "aé"
    assert truncate_utf8("aé€😀", 6) == "aé€"
    assert truncate_utf8("short", 100) == "short"


async def test_timeout_is_an_error_not_a_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote, "QUERY_TIMEOUT_S", 0.2)
    sleeps = Sleeps()
    async with serve(lambda s: Answer(200, body=b"{}", delay_s=5)) as srv:
        p = openai(srv.url("/v1"), sleeps)
        with pytest.raises(EmbeddingError, match=r"timed out after 0\.2s"):
            await p.embed(["q"], task="query")
        await p.aclose()
    assert sleeps.waits == []


async def test_connection_refused_is_an_error() -> None:
    async with serve(openai_answer) as srv:
        url = srv.url("/v1")
    p = openai(url)  # the server is gone: nothing listens on that port now
    with pytest.raises(EmbeddingError, match="request failed"):
        await p.embed(["x"])
    await p.aclose()


def test_missing_key_raises_missing_api_key() -> None:
    with pytest.raises(MissingApiKey, match="OPENAI_API_KEY"):
        OpenAIEmbeddings(api_key=None)
    with pytest.raises(MissingApiKey, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        GeminiEmbeddings(api_key="")


async def test_openai_compatible_works_without_a_key_and_sends_extra_headers() -> None:
    async with serve(openai_answer) as srv:
        p = OpenAICompatibleEmbeddings(
            model="nomic-embed-text", base_url=srv.url("/api/v1/"), headers={"X-Tenant": "home"}
        )
        await p.embed(["x"])
        await p.aclose()
    (req,) = srv.requests
    assert req.target == "/api/v1/embeddings"
    assert "authorization" not in req.headers
    assert req.headers["x-tenant"] == "home"
    assert json.loads(req.body)["model"] == "nomic-embed-text"


def test_key_resolution_prefers_config_then_env_in_order() -> None:
    env = {"GOOGLE_API_KEY": "g2", "GEMINI_API_KEY": " ", "OPENAI_API_KEY": "o"}
    assert resolve_api_key("gemini", None, env) == "g2"
    assert resolve_api_key("gemini", None, {**env, "GEMINI_API_KEY": "g1"}) == "g1"
    assert resolve_api_key("gemini", " cfg ", env) == "cfg"
    assert resolve_api_key("voyage", None, env) is None
    assert resolve_api_key("openai", None, env) == "o"
