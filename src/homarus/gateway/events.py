"""The event bus: one global ``seq`` for broadcasts, scope guards per recipient.

Broadcast frames are encoded once and handed to every eligible connection's outbox.
Targeted events (to given connections) carry no ``seq``, as in the original.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import orjson

from homarus.protocol.frames import event_frame
from homarus.security.scopes import scope_allows

__all__ = ["EventBus", "Recipient"]


class Recipient(Protocol):
    @property
    def conn_id(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def scopes(self) -> frozenset[str]: ...
    @property
    def caps(self) -> frozenset[str]: ...
    def push(self, text: str, *, droppable: bool = False) -> bool: ...


class EventBus:
    def __init__(self) -> None:
        self._recipients: dict[str, Recipient] = {}
        self._seq = itertools.count(1)
        self.last_seq = 0

    def add(self, recipient: Recipient) -> None:
        self._recipients[recipient.conn_id] = recipient

    def remove(self, conn_id: str) -> None:
        self._recipients.pop(conn_id, None)

    def __len__(self) -> int:
        return len(self._recipients)

    def recipients(self) -> list[Recipient]:
        return list(self._recipients.values())

    def broadcast(
        self,
        event: str,
        payload: Any = None,
        *,
        guard: str | None = None,
        droppable: bool = False,
        state_version: dict[str, int] | None = None,
        only: Callable[[Recipient], bool] | None = None,
    ) -> int:
        """Send to every connection allowed to see it (and accepted by ``only``); returns the seq."""
        seq = self.last_seq = next(self._seq)
        text = orjson.dumps(event_frame(event, payload, seq=seq, state_version=state_version)).decode()
        for r in list(self._recipients.values()):
            if guard is not None and (r.role != "operator" or not scope_allows(r.scopes, guard)):
                continue
            if only is not None and not only(r):
                continue
            r.push(text, droppable=droppable)
        return seq

    def send_to(self, conn_ids: Iterable[str], event: str, payload: Any = None, *, droppable: bool = False) -> int:
        """Targeted event without seq; returns how many connections got it."""
        text = orjson.dumps(event_frame(event, payload)).decode()
        sent = 0
        for cid in conn_ids:
            r = self._recipients.get(cid)
            if r is not None and r.push(text, droppable=droppable):
                sent += 1
        return sent
