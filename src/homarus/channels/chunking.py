"""Split a reply into messages a channel accepts, at the most natural boundary that fits.

Preference, for each cut: a blank line (paragraph), a line break, a sentence end, a space, and
only then anywhere. A cut never falls inside a fenced code block when the block fits in one
message; a block longer than the limit is cut at a line inside it and the fence is closed and
opened again (same language) on both sides, so every message renders on its own.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["chunk_text"]

_FENCE: Final = re.compile(r"^(\s*)(```+|~~~+)(.*)$")
#: room kept for a re-opened fence line and a closing fence in a cut code block
_FENCE_ROOM: Final = 24


def chunk_text(text: str, limit: int) -> list[str]:
    """``text`` in pieces of at most ``limit`` characters (no empty pieces; [] for blank text)."""
    if limit < 2 * _FENCE_ROOM:
        raise ValueError(f"limit too small: {limit}")
    text = text.strip("\n")
    if not text.strip():
        return []
    pieces: list[str] = []
    rest = text
    while len(rest) > limit:
        head, rest = _cut(rest, limit)
        if head.strip():
            pieces.append(head.rstrip())
        rest = rest.lstrip("\n")
    if rest.strip():
        pieces.append(rest.rstrip())
    return pieces


def _cut(text: str, limit: int) -> tuple[str, str]:
    """(the first piece, the rest), the piece at most ``limit`` characters."""
    window = text[:limit]
    open_fence = _fence_open_at(text, limit)
    if open_fence is None:
        at = _best_cut(window, _fence_starts(text, limit))
        return text[:at], text[at + 1 :] if text[at : at + 1] == " " else text[at:]
    # the cut would land in a code block: before the block if anything precedes it, else inside it
    start, fence_line = open_fence
    before = text[:start].rstrip()
    if len(before) >= limit // 4:
        at = _best_cut(text[:start], ())
        return text[:at], text[at:]
    room = limit - _FENCE_ROOM
    line_cut = text.rfind("\n", start + len(fence_line) + 1, room)
    at = line_cut if line_cut > start + len(fence_line) else room
    fence = fence_line.strip()
    marker = fence[: len(fence) - len(fence.lstrip("`~"))]
    return text[:at].rstrip("\n") + "\n" + marker, fence_line.strip() + "\n" + text[at:].lstrip("\n")


def _fence_starts(text: str, limit: int) -> tuple[int, ...]:
    out = []
    pos = 0
    for line in text[:limit].split("\n"):
        if _FENCE.match(line):
            out.append(pos)
        pos += len(line) + 1
    return tuple(out)


def _fence_open_at(text: str, limit: int) -> tuple[int, str] | None:
    """(start offset, opening line) of a code block still open at ``limit``, if any."""
    pos = 0
    opened: tuple[int, str, str] | None = None
    for line in text.split("\n"):
        if pos >= limit:
            break
        m = _FENCE.match(line)
        if m:
            marker = m.group(2)
            if opened is None:
                opened = (pos, line, marker)
            elif marker.startswith(opened[2][0]) and len(marker) >= len(opened[2]) and not m.group(3).strip():
                opened = None
        pos += len(line) + 1
    return (opened[0], opened[1]) if opened is not None else None


def _best_cut(window: str, fence_starts: tuple[int, ...]) -> int:
    """The offset to cut ``window`` at: the latest natural boundary in its second half."""
    floor = len(window) // 2
    for start in reversed(fence_starts):  # just before a code block that would not fit
        if floor <= start:
            return start
    for pattern in ("\n\n", "\n"):
        at = window.rfind(pattern, floor)
        if at > 0:
            return at
    for m in reversed(list(re.finditer(r"[.!?…](\s)", window))):
        if m.start(1) >= floor:
            return m.start(1)
    at = window.rfind(" ", floor)
    return at if at > 0 else len(window)
