"""Targeted event delivery: a client that connects with ``caps: ["targeted-events"]`` gets the
``agent``/``chat`` events of the runs it started and of the sessions it subscribed to, without the
global seq; a client without it gets every run's events as in the original; the work of one
event grows with its recipients, not with the number of connections."""

from __future__ import annotations

import asyncio
from pathlib import Path

from homarus.gateway.events import TARGETED_CAP, EventBus
from tests.conftest import TEST_TOKEN, run_gateway
from tests.wsclient import Client, open_client


class _Counter:
    def __init__(self, conn_id: str, caps: frozenset[str]) -> None:
        self.conn_id, self.caps = conn_id, caps
        self.role, self.scopes = "operator", frozenset({"operator.read"})
        self.pushed: list[str] = []

    def push(self, text: str, *, droppable: bool = False) -> bool:
        self.pushed.append(text)
        return True


def test_one_event_costs_its_recipients_not_the_connections() -> None:
    bus = EventBus()
    idle = [_Counter(f"t{i}", frozenset({TARGETED_CAP})) for i in range(2000)]
    for r in idle:
        bus.add(r)
    watcher, legacy = _Counter("watcher", frozenset({TARGETED_CAP})), _Counter("legacy", frozenset())
    bus.add(watcher)
    bus.add(legacy)
    bus.own_run("run-1", "t7")
    bus.watch_session("watcher", "agent:main:s1")
    bus.session_event("agent", {"runId": "run-1"}, session_key="agent:main:s1", run_id="run-1", guard="operator.read")
    assert sum(len(r.pushed) for r in idle) == 1 and idle[7].pushed  # only the run's owner among 2000
    assert len(watcher.pushed) == 1 and '"seq"' not in watcher.pushed[0]  # targeted: no global seq
    assert len(legacy.pushed) == 1 and '"seq"' in legacy.pushed[0]  # today's behaviour, seq and all
    bus.release_run("run-1")
    bus.unwatch_session("watcher", "agent:main:s1")
    assert bus._watchers == {} and bus._watching == {}
    bus.session_event("agent", {}, session_key="agent:main:s1", run_id="run-1")
    assert sum(len(r.pushed) for r in idle) == 1 and len(watcher.pushed) == 1 and len(legacy.pushed) == 2
    bus.broadcast("presence", {"presence": []}, untargeted_only=True)
    assert len(legacy.pushed) == 3 and len(watcher.pushed) == 1  # no presence for targeted clients
    bus.remove("watcher")
    bus.watch_session("watcher", "agent:main:s1")  # a closed connection is not indexed again
    assert "watcher" not in str(bus._watchers)


async def _client(url: str, *caps: str) -> Client:
    c = await open_client(url, max_queue=None)  # events left unread must not stall the close handshake
    assert (await c.handshake(TEST_TOKEN, caps=list(caps)))["ok"]
    return c


async def _turn(c: Client, session: str, run_id: str) -> None:
    await c.send({"type": "req", "id": run_id, "method": "agent",
                  "params": {"message": "hi", "sessionKey": session, "idempotencyKey": run_id}})  # fmt: skip
    await c.response(run_id, timeout=10)  # accepted
    assert (await c.response(run_id, timeout=30))["ok"]


def _runs(c: Client, event: str) -> set[str]:
    return {str(e["payload"].get("runId")) for e in c.events if e.get("event") == event}


async def test_targeted_clients_get_their_runs_and_their_sessions(tmp_path: Path) -> None:
    with run_gateway(tmp_path) as gw:
        a = await _client(gw.url, TARGETED_CAP)
        b = await _client(gw.url, TARGETED_CAP)
        everything = await _client(gw.url)
        await _turn(a, "agent:main:alpha", "run-a1")
        await _turn(b, "agent:main:beta", "run-b1")
        await asyncio.sleep(0.3)
        for c in (a, b, everything):  # collect what arrived after the final answers
            await c.request("health")
        assert _runs(a, "agent") == {"run-a1"} and _runs(a, "chat") == {"run-a1"}
        assert _runs(b, "agent") == {"run-b1"}
        assert {"run-a1", "run-b1"} <= _runs(everything, "agent") and {"run-a1", "run-b1"} <= _runs(everything, "chat")
        assert all("seq" not in e for e in a.events if e.get("event") in ("agent", "chat"))
        assert all("seq" in e for e in everything.events if e.get("event") in ("agent", "chat"))

        res = await a.request("sessions.messages.subscribe", {"key": "agent:main:beta"})
        assert res["ok"] and res["payload"]["key"] == "agent:main:beta"
        await _turn(b, "agent:main:beta", "run-b2")
        await asyncio.sleep(0.3)
        await a.request("health")
        assert "run-b2" in _runs(a, "agent") and "run-b2" in _runs(a, "chat")  # a watches beta now
        await a.request("sessions.messages.unsubscribe", {"key": "agent:main:beta"})
        await _turn(b, "agent:main:beta", "run-b3")
        await asyncio.sleep(0.3)
        await a.request("health")
        assert "run-b3" not in _runs(a, "agent")
        res = await b.request("sessions.messages.subscribe", {"key": "agent:main:alpha"})
        await b.ws.close()
        await _turn(a, "agent:main:alpha", "run-a2")  # b's subscription went with its socket
        await asyncio.sleep(0.3)
        assert (await a.request("health"))["ok"] and "run-a2" in _runs(a, "chat")
        assert gw.gateway.bus._watchers == {}  # a's unsubscription and b's closed socket left nothing behind
