"""A finished process as the exec backends report it, and the bounded capture of its output
(head and tail, and how much was dropped)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BoundedOutput", "ExecResult"]


@dataclass(frozen=True, slots=True)
class ExecResult:
    #: None when there is no exit status (the command could not start); negative: killed by that signal
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    #: stdout or stderr was longer than the bound (the middle was dropped, with a note)
    truncated: bool = False
    aborted: bool = False
    duration_ms: int = 0
    #: why the command did not start (not found, permission, bad cwd)
    error: str | None = None


class BoundedOutput:
    """At most ``cap`` bytes of a stream: its head and its tail, with the total length."""

    __slots__ = ("cap", "head", "tail", "total")

    def __init__(self, cap: int) -> None:
        self.cap = max(cap, 2)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.cap // 2 - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            keep = self.cap - self.cap // 2
            if len(self.tail) > 2 * keep + 65_536:  # trim in batches: amortized O(1) per byte
                del self.tail[: len(self.tail) - keep]

    @property
    def truncated(self) -> bool:
        return self.total > self.cap

    def text(self) -> str:
        if not self.truncated:
            return (bytes(self.head) + bytes(self.tail)).decode("utf-8", "replace")
        tail = bytes(self.tail[-(self.cap - self.cap // 2) :])
        omitted = self.total - len(self.head) - len(tail)
        note = f"\n[... {omitted:,} bytes omitted: the output was {self.total:,} bytes, over {self.cap:,} ...]\n"
        return bytes(self.head).decode("utf-8", "replace") + note + tail.decode("utf-8", "replace")
