"""The services a use case may ask of whoever runs it, as small protocols.

The gateway's context satisfies each of them structurally: it passes itself, and a use case sees
only the members its protocol names (a test may pass anything else that has them). The event
bus belongs to the edge (it knows connections and frames); a use case only asks to publish.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, Literal, Protocol

__all__ = ["Listener", "Publisher", "Spawner", "WakeMode"]

#: ``now``: a heartbeat runs at once; ``next-heartbeat``: the text waits for the next one
WakeMode = Literal["now", "next-heartbeat"]


class Listener(Protocol):
    """A connection, as far as a use case choosing who gets an event may look at it."""

    @property
    def caps(self) -> frozenset[str]: ...


class Publisher(Protocol):
    """Events out to the connected clients (the gateway's ``EventBus``)."""

    def broadcast(
        self,
        event: str,
        payload: Any = None,
        *,
        guard: str | None = None,
        droppable: bool = False,
        state_version: dict[str, int] | None = None,
        only: Callable[[Listener], bool] | None = None,
        untargeted_only: bool = False,
        cluster: bool = False,
    ) -> int: ...

    def session_event(
        self,
        event: str,
        payload: Any,
        *,
        session_key: str,
        run_id: str,
        guard: str | None = None,
        droppable: bool = False,
        cap: str | None = None,
    ) -> int: ...

    def send_to(
        self,
        conn_ids: Iterable[str],
        event: str,
        payload: Any = None,
        *,
        droppable: bool = False,
        cluster: bool = False,
    ) -> int:
        """To these connections; ``cluster``: the other gateways of a cluster send it to their
        subscribers of the same event (``sessions.changed``)."""
        ...


class Spawner(Protocol):
    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``coro`` in the background; the host keeps a reference and reaps it."""
        ...
