"""The provider contract: stream a model response as events; never raise for remote failures."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from homarus.messages import Context, ModelInfo, StreamEvent, StreamOptions

__all__ = ["Provider"]


class Provider(Protocol):
    """One wire API (``openai-completions``, ``anthropic-messages``, ``scripted``).

    ``stream`` yields deltas and ends with exactly one ``Done`` or ``StreamError``. HTTP errors,
    timeouts, garbage bodies and aborts all become a ``StreamError`` whose message carries
    ``stop_reason`` ``error``/``aborted`` and an ``error_message``; it never raises for them.
    """

    api: str

    def stream(self, model: ModelInfo, context: Context, options: StreamOptions) -> AsyncIterator[StreamEvent]: ...
