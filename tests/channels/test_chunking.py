"""Replies cut to a channel's limit at the most natural boundary, code fences kept whole or
closed and re-opened so each message renders on its own."""

from __future__ import annotations

import pytest

from homarus.channels.chunking import chunk_text


def test_short_text_is_one_piece_and_blank_text_none() -> None:
    assert chunk_text("hello", 4000) == ["hello"]
    assert chunk_text("\n\n  \n", 4000) == []


def test_cuts_prefer_paragraphs_then_lines_then_sentences_then_spaces() -> None:
    para = "a" * 60
    assert chunk_text(f"{para}\n\n{para}", 100) == [para, para]
    assert chunk_text(f"{para}\n{para}", 100) == [para, para]
    sentences = "One sentence here. " * 8
    pieces = chunk_text(sentences.strip(), 100)
    assert all(p.endswith(".") for p in pieces[:-1]) and all(len(p) <= 100 for p in pieces)
    words = " ".join(["word"] * 60)
    assert all(not p.startswith(" ") and len(p) <= 100 for p in chunk_text(words, 100))


def test_nothing_is_lost_even_without_any_boundary() -> None:
    blob = "x" * 1000
    pieces = chunk_text(blob, 120)
    assert "".join(pieces) == blob and all(len(p) <= 120 for p in pieces)


def test_a_code_block_that_fits_is_never_split() -> None:
    code = "```python\n" + "\n".join(f"line_{i} = {i}" for i in range(10)) + "\n```"
    text = "Intro paragraph. " * 5 + "\n\n" + code + "\n\nAfter."
    pieces = chunk_text(text, 250)
    assert any(code in p for p in pieces)
    assert all(p.count("```") % 2 == 0 for p in pieces)


def test_a_long_code_block_is_closed_and_reopened_with_its_language() -> None:
    code = "```js\n" + "\n".join(f"console.log({i});" for i in range(80)) + "\n```"
    pieces = chunk_text(code, 300)
    assert len(pieces) > 1 and all(len(p) <= 300 for p in pieces)
    assert all(p.startswith("```js") and p.rstrip().endswith("```") for p in pieces)
    body = [line for p in pieces for line in p.splitlines() if not line.startswith("```")]
    assert body == [f"console.log({i});" for i in range(80)]


def test_a_limit_too_small_to_hold_a_fence_is_refused() -> None:
    with pytest.raises(ValueError, match="too small"):
        chunk_text("x", 10)
