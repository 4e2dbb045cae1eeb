"""Line-based Markdown chunking with overlap, as the original indexes memory files.

A chunk is a run of whole lines of at most ``tokens * 4`` characters (one "token" ≈ 4 chars);
lines longer than that are cut into segments. When a chunk is full, the next one starts with the
last lines of the previous one, up to ``overlap * 4`` characters (and never more than half a
chunk), so a fact that straddles a boundary is whole in at least one chunk.

One deliberate difference from the original: it always carried at least one line of overlap and
then truncated the joined chunk to the maximum, which silently dropped text after a very long
line. Here the overlap shrinks instead, so every character of the file is in some chunk and no
chunk exceeds the maximum.

Line numbers are 1-based and refer to the file as split by :func:`split_lines` (``\\n`` or
``\\r\\n``), the same split ``memory_get`` uses, so a result's ``startLine`` can be read back.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

__all__ = ["Chunk", "ChunkingParams", "chunk_markdown", "split_for_input_limit", "split_lines", "text_hash"]

CHARS_PER_TOKEN = 4
MIN_CHUNK_CHARS = 32


@dataclass(frozen=True, slots=True)
class ChunkingParams:
    tokens: int = 400
    overlap: int = 80

    @property
    def max_chars(self) -> int:
        return max(MIN_CHUNK_CHARS, self.tokens * CHARS_PER_TOKEN)

    @property
    def overlap_chars(self) -> int:
        return min(max(0, self.overlap * CHARS_PER_TOKEN), self.max_chars // 2)


@dataclass(frozen=True, slots=True)
class Chunk:
    start_line: int
    end_line: int
    text: str
    hash: str


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def split_lines(content: str) -> list[str]:
    """Split on ``\\n``, dropping the ``\\r`` of CRLF endings (a lone ``\\r`` is ordinary text).

    A final newline ends the last line rather than starting an empty one, as editors count lines.
    """
    lines = content.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def chunk_markdown(content: str, params: ChunkingParams | None = None) -> list[Chunk]:
    """Chunks of ``content`` in file order; whitespace-only chunks are dropped."""
    p = params or ChunkingParams()
    max_chars, overlap_chars = p.max_chars, p.overlap_chars
    chunks: list[Chunk] = []
    current: list[tuple[str, int]] = []  # (segment, 1-based line number)
    size = 0

    def flush() -> None:
        text = "\n".join(seg for seg, _ in current)
        if text.strip():
            chunks.append(Chunk(current[0][1], current[-1][1], text, text_hash(text)))

    def carry(next_cost: int) -> tuple[list[tuple[str, int]], int]:
        kept: list[tuple[str, int]] = []
        acc = 0
        for seg, line in reversed(current):
            cost = len(seg) + 1
            if acc + cost > overlap_chars or acc + cost + next_cost > max_chars:
                break
            kept.append((seg, line))
            acc += cost
        kept.reverse()
        return kept, acc

    for index, line in enumerate(split_lines(content)):
        segments = [line[i : i + max_chars] for i in range(0, len(line), max_chars)] or [""]
        for seg in segments:
            cost = len(seg) + 1
            if size + cost > max_chars + 1 and current:
                # +1: the last line of a chunk needs no separator, so exactly max_chars of text fits
                flush()
                current, size = carry(cost)
            current.append((seg, index + 1))
            size += cost
    if current:
        flush()
    return chunks


def split_for_input_limit(chunk: Chunk, max_bytes: int) -> list[Chunk]:
    """Cut a chunk whose UTF-8 size exceeds ``max_bytes`` into pieces (each with its own hash).

    Embedding providers bound their input; CJK or emoji text can be 4 bytes per character, so a
    chunk within the character limit may still be too long for the model.
    """
    if max_bytes <= 0 or len(chunk.text.encode("utf-8", "surrogatepass")) <= max_bytes:
        return [chunk]
    pieces: list[Chunk] = []
    line = chunk.start_line
    start = 0
    text = chunk.text
    while start < len(text):
        end = start
        used = 0
        while end < len(text):
            b = len(text[end].encode("utf-8", "surrogatepass"))
            if used + b > max_bytes and end > start:
                break
            used += b
            end += 1
        # prefer to cut after a newline so pieces keep whole lines where possible
        cut = text.rfind("\n", start, end)
        if end < len(text) and cut > start:
            end = cut + 1
        piece = text[start:end]
        last_line = line + piece.count("\n") - (1 if piece.endswith("\n") else 0)
        body = piece.rstrip("\n") if piece.endswith("\n") else piece
        if body.strip():
            pieces.append(Chunk(line, last_line, body, text_hash(body)))
        line += piece.count("\n")
        start = end
    return pieces
