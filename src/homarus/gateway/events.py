"""The event bus: one global ``seq`` for broadcasts, scope guards per recipient.

Broadcast frames are encoded once and handed to every eligible connection's outbox.
Targeted events (to given connections) carry no ``seq``, as in the original.

A run's ``agent`` and ``chat`` events (:meth:`EventBus.session_event`) go, as in the original, to
every operator connection — unless the connection said at ``connect`` that it wants only its own
(``caps: ["targeted-events"]``): it then gets the events of the runs it started and of the
sessions it subscribed to (``sessions.messages.subscribe``), without the global ``seq``. Such
connections are indexed by run and by session, so the work of one event is O(its recipients),
not O(connections): one gateway serving many conversations does not send every client every
other client's replies. They get no ``presence`` broadcasts either (each carries the whole list,
on every connect: O(connections²) frames for a thousand clients); ``system-presence`` answers.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import orjson

from homarus.protocol.frames import event_frame
from homarus.security.scopes import scope_allows

__all__ = ["TARGETED_CAP", "EventBus", "Recipient"]

#: the ``connect`` capability of a client that wants only its own runs' and its sessions' events
TARGETED_CAP = "targeted-events"
#: run ids remembered with the connection that started them (a bound: runs that never end)
MAX_OWNED_RUNS = 20_000


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
    def __init__(self, *, max_watched: int = 1024) -> None:
        #: sessions one connection may follow; past it, the one it followed longest ago is let go
        self.max_watched = max_watched
        self._recipients: dict[str, Recipient] = {}
        #: the connections that get every run's events (all but the targeted ones)
        self._everything: dict[str, Recipient] = {}
        #: session key -> targeted connections subscribed to it, and the reverse
        self._watchers: dict[str, set[str]] = {}
        self._watching: dict[str, dict[str, None]] = {}  # an ordered set: followed longest ago first
        #: run id -> the targeted connection that started it
        self._owners: dict[str, str] = {}
        self._seq = itertools.count(1)
        self.last_seq = 0
        #: a cluster's gateway hands its run events to the others here (``storage/relay.py``)
        self.relay: Callable[[dict[str, Any], bool], None] | None = None

    def add(self, recipient: Recipient) -> None:
        self._recipients[recipient.conn_id] = recipient
        if TARGETED_CAP not in recipient.caps:
            self._everything[recipient.conn_id] = recipient

    def remove(self, conn_id: str) -> None:
        self._recipients.pop(conn_id, None)
        self._everything.pop(conn_id, None)
        for key in self._watching.pop(conn_id, {}):
            _discard(self._watchers, key, conn_id)

    # -- who wants which run's events ------------------------------------------------------------
    def watch_session(self, conn_id: str, session_key: str) -> None:
        if conn_id not in self._recipients:
            return
        self._watchers.setdefault(session_key, set()).add(conn_id)
        watching = self._watching.setdefault(conn_id, {})
        watching.pop(session_key, None)
        watching[session_key] = None  # most recent last
        while len(watching) > self.max_watched:
            self.unwatch_session(conn_id, next(iter(watching)))

    def unwatch_session(self, conn_id: str, session_key: str) -> None:
        _discard(self._watchers, session_key, conn_id)
        watching = self._watching.get(conn_id)
        if watching is not None:
            watching.pop(session_key, None)
            if not watching:
                del self._watching[conn_id]

    def own_run(self, run_id: str, conn_id: str) -> None:
        """``conn_id`` started ``run_id``: a targeted connection gets its events."""
        recipient = self._recipients.get(conn_id)
        if recipient is None or TARGETED_CAP not in recipient.caps:
            return
        self._owners[run_id] = conn_id
        if len(self._owners) > MAX_OWNED_RUNS:
            for old in list(self._owners)[: MAX_OWNED_RUNS // 4]:
                del self._owners[old]

    def release_run(self, run_id: str) -> None:
        self._owners.pop(run_id, None)

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
        relayed: bool = False,
    ) -> int:
        """A run's event: to every non-targeted connection (with seq, as a broadcast) and to the
        targeted ones that started the run or watch its session (without); only to connections
        with ``cap`` when given; returns the seq. Unless it came from another gateway of the
        cluster (``relayed``), it is also handed to :attr:`relay` for them."""
        seq = self.last_seq = next(self._seq)
        only = (lambda r: cap in r.caps) if cap is not None else None
        if self._everything:  # serialized only when someone takes the broadcast form
            text = orjson.dumps(event_frame(event, payload, seq=seq)).decode()
            for r in list(self._everything.values()):
                if _eligible(r, guard, only):
                    r.push(text, droppable=droppable)
        targets = set(self._watchers.get(session_key, ()))
        if (owner := self._owners.get(run_id)) is not None:
            targets.add(owner)
        if targets:
            plain = orjson.dumps(event_frame(event, payload)).decode()
            for cid in targets:
                target = self._recipients.get(cid)
                if target is not None and _eligible(target, guard, only):
                    target.push(plain, droppable=droppable)
        if self.relay is not None and not relayed:
            relayed_event = {"event": event, "payload": payload, "sessionKey": session_key, "runId": run_id}
            self.relay({**relayed_event, "guard": guard, "droppable": droppable, "cap": cap}, droppable)
        return seq

    def relayed(self, event: dict[str, Any]) -> None:
        """An event :attr:`relay` of another gateway of the cluster sent: a broadcast, or a run's
        event (``session_event``'s fields)."""
        try:
            if event.get("kind") == "broadcast":
                self.broadcast(
                    str(event["event"]),
                    event["payload"],
                    guard=event.get("guard"),
                    droppable=bool(event.get("droppable")),
                )
                return
            self.session_event(
                str(event["event"]),
                event["payload"],
                session_key=str(event["sessionKey"]),
                run_id=str(event["runId"]),
                guard=event.get("guard"),
                droppable=bool(event.get("droppable")),
                cap=event.get("cap"),
                relayed=True,
            )
        except KeyError:
            return  # not an event of ours: nothing to show

    def __len__(self) -> int:
        return len(self._recipients)

    def retained(self) -> dict[str, int]:
        """Entries held per run and per followed session (what a bounds test or report reads)."""
        return {
            "runOwners": len(self._owners),
            "watchedSessions": sum(len(keys) for keys in self._watching.values()),
        }

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
        untargeted_only: bool = False,
        cluster: bool = False,
    ) -> int:
        """Send to every connection allowed to see it (and accepted by ``only``; with
        ``untargeted_only``, not to the targeted-events ones); returns the seq. ``cluster``: the
        other gateways of a cluster broadcast it to theirs too (through :attr:`relay`)."""
        seq = self.last_seq = next(self._seq)
        if cluster and self.relay is not None:
            event_of = {"kind": "broadcast", "event": event, "payload": payload}
            self.relay({**event_of, "guard": guard, "droppable": droppable}, droppable)
        audience = self._everything if untargeted_only else self._recipients
        if not audience:
            return seq  # nobody to tell: nothing to serialize
        text = orjson.dumps(event_frame(event, payload, seq=seq, state_version=state_version)).decode()
        for r in list(audience.values()):
            if _eligible(r, guard, only):
                r.push(text, droppable=droppable)
        return seq

    @property
    def untargeted(self) -> int:
        """Connections that take every broadcast (not ``targeted-events``)."""
        return len(self._everything)

    def send_to(
        self,
        conn_ids: Iterable[str],
        event: str,
        payload: Any = None,
        *,
        droppable: bool = False,
        cluster: bool = False,
    ) -> int:
        """Targeted event without seq; returns how many connections got it. ``cluster``: handed to
        :attr:`relay` too, for the other gateways' subscribers of ``event`` (``kind: subscribers``)."""
        if cluster and self.relay is not None:
            self.relay({"kind": "subscribers", "event": event, "payload": payload, "droppable": droppable}, droppable)
        ids = list(conn_ids)
        if not ids:
            return 0  # nobody here: nothing to serialize
        text = orjson.dumps(event_frame(event, payload)).decode()
        sent = 0
        for cid in ids:
            r = self._recipients.get(cid)
            if r is not None and r.push(text, droppable=droppable):
                sent += 1
        return sent


def _eligible(r: Recipient, guard: str | None, only: Callable[[Recipient], bool] | None) -> bool:
    if guard is not None and (r.role != "operator" or not scope_allows(r.scopes, guard)):
        return False
    return only is None or only(r)


def _discard(index: dict[str, set[str]], key: str, member: str) -> None:
    """Take ``member`` out of ``index[key]``, and the key with its last member (no empty sets kept)."""
    members = index.get(key)
    if members is not None:
        members.discard(member)
        if not members:
            del index[key]
