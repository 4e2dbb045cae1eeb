from __future__ import annotations

from itertools import pairwise

import pytest

from homarus.memory.chunking import (
    Chunk,
    ChunkingParams,
    chunk_markdown,
    split_for_input_limit,
    split_lines,
    text_hash,
)


def _lines_of(chunk: Chunk, content: str) -> list[str]:
    return split_lines(content)[chunk.start_line - 1 : chunk.end_line]


def test_empty_and_whitespace_only_files_have_no_chunks() -> None:
    assert chunk_markdown("") == []
    assert chunk_markdown("\n\n   \n\t\n") == []


def test_small_file_is_one_chunk_with_line_numbers() -> None:
    chunks = chunk_markdown("# Title\nline two\nline three\n")
    assert len(chunks) == 1
    c = chunks[0]
    assert (c.start_line, c.end_line) == (1, 3)
    assert c.text == "# Title\nline two\nline three"
    assert c.hash == text_hash(c.text)


def test_chunks_respect_the_size_and_overlap_and_cover_every_line() -> None:
    content = "\n".join(f"line {i:04d} " + "x" * 50 for i in range(200))  # 61 chars per line
    p = ChunkingParams(tokens=100, overlap=20)  # 400 chars, 80 chars overlap
    chunks = chunk_markdown(content, p)
    assert len(chunks) > 5
    assert all(len(c.text) <= p.max_chars for c in chunks)
    for c in chunks:  # text and line numbers agree
        assert c.text == "\n".join(_lines_of(c, content))
    for a, b in pairwise(chunks):  # one line (61+1 <= 80) carried over
        assert b.start_line == a.end_line
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 200


def test_zero_overlap_gives_disjoint_chunks() -> None:
    content = "\n".join("word " * 20 for _ in range(50))
    chunks = chunk_markdown(content, ChunkingParams(tokens=50, overlap=0))
    for a, b in pairwise(chunks):
        assert b.start_line == a.end_line + 1


def test_one_huge_line_is_cut_without_losing_text() -> None:
    line = "".join(chr(ord("a") + i % 26) for i in range(10_000))
    p = ChunkingParams()
    chunks = chunk_markdown(line, p)
    assert all(c.start_line == 1 and c.end_line == 1 for c in chunks)
    assert all(len(c.text) <= p.max_chars for c in chunks)
    # segments of a long line are not re-carried as overlap, so joining them restores the line
    assert "".join(c.text for c in chunks) == line


def test_huge_line_between_normal_lines_is_kept_whole() -> None:
    content = "before\n" + "y" * 5000 + "\nafter"
    chunks = chunk_markdown(content)
    joined = "".join(c.text for c in chunks)
    assert joined.count("y") >= 5000
    assert chunks[0].text.startswith("before") and chunks[-1].text.endswith("after")


def test_crlf_line_endings_are_normalised() -> None:
    chunks = chunk_markdown("one\r\ntwo\r\nthree\r\n")
    assert chunks[0].text == "one\ntwo\nthree"
    assert (chunks[0].start_line, chunks[0].end_line) == (1, 3)
    assert chunks == chunk_markdown("one\ntwo\nthree\n")


def test_unicode_text_is_counted_in_characters() -> None:
    content = "\n".join("日本語のメモ🦞" * 10 for _ in range(100))
    chunks = chunk_markdown(content)
    assert all(len(c.text) <= 1600 for c in chunks)
    assert "🦞" in chunks[0].text
    assert chunks[-1].end_line == 100


@pytest.mark.parametrize("tokens", [1, 3, 8])
def test_tiny_chunk_sizes_use_the_minimum(tokens: int) -> None:
    assert ChunkingParams(tokens=tokens, overlap=0).max_chars == 32
    chunks = chunk_markdown("abc\n" * 40, ChunkingParams(tokens=tokens, overlap=0))
    assert all(len(c.text) <= 32 for c in chunks)


def test_split_for_input_limit_respects_bytes_and_lines() -> None:
    text = "\n".join("é" * 30 for _ in range(10))  # 60 bytes per line
    chunk = Chunk(5, 14, text, text_hash(text))
    pieces = split_for_input_limit(chunk, 200)
    assert len(pieces) > 1
    assert all(len(p.text.encode()) <= 200 for p in pieces)
    assert pieces[0].start_line == 5 and pieces[-1].end_line == 14
    assert "".join(p.text for p in pieces).replace("\n", "") == text.replace("\n", "")
    assert all(p.hash == text_hash(p.text) for p in pieces)
    assert split_for_input_limit(chunk, 10_000) == [chunk]
