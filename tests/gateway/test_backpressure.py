"""Backpressure: while ``gateway.maxPendingRuns`` runs are accepted and not finished, a client's
new run is refused with a retryable error and nothing of it is written; accepted runs say how many
they wait for (``queuePosition``: their session's, and their lane's beyond its free slots) and
all of them finish."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from homarus.providers.scripted import Gate, Reply, ScriptedProvider
from tests.conftest import TEST_TOKEN, run_gateway
from tests.wsclient import open_client

CONFIG: dict[str, Any] = {
    "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m"}]}}},
    "agents": {"defaults": {"model": {"primary": "test/m"}}},
    "gateway": {"maxPendingRuns": 3},
}


def _agent(rid: str, session: str) -> dict[str, Any]:
    params = {"message": "hi", "sessionKey": session, "idempotencyKey": rid}
    return {"type": "req", "id": rid, "method": "agent", "params": params}


async def test_runs_beyond_the_limit_are_refused_not_lost(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        release = asyncio.Event()
        gw.gateway.models.overrides["test"] = ScriptedProvider(
            [Gate(release, Reply("first")), Gate(release, Reply("other")), Reply("second")], then="repeat"
        )
        c = await open_client(gw.url, max_queue=None)
        assert (await c.handshake(TEST_TOKEN))["ok"]
        await c.send(_agent("run-1", "agent:main:one"))
        first = await c.response("run-1")
        assert first["payload"]["status"] == "accepted" and "queuePosition" not in first["payload"]
        await c.send(_agent("run-o", "agent:main:other"))  # another session, a free slot: not held up
        other = await c.response("run-o")
        assert other["payload"]["status"] == "accepted" and "queuePosition" not in other["payload"]
        for _ in range(50):  # both are running (each at its gate)
            if gw.gateway.lanes.ahead("session:agent:main:one", "main") == 1:
                break
            await asyncio.sleep(0.02)
        await c.send(_agent("run-2", "agent:main:one"))  # the same session: it waits for run-1
        second = await c.response("run-2")
        assert second["payload"]["status"] == "accepted" and second["payload"]["queuePosition"] == 1

        refused = await c.request("agent", _agent("run-3", "agent:main:three")["params"])
        err = refused["error"]
        assert not refused["ok"] and err["code"] == "UNAVAILABLE" and err["retryable"] is True
        assert err["retryAfterMs"] == 2000 and "maxPendingRuns" in err["message"]
        assert gw.gateway.journal.get("run-3") is None  # nothing of it was written
        chat_params = {"sessionKey": "agent:main:four", "message": "hi", "idempotencyKey": "c-4"}
        chat = await c.request("chat.send", chat_params)
        assert not chat["ok"] and chat["error"]["retryable"] is True

        gw.call_soon(release.set)
        assert (await c.response("run-1", timeout=10))["ok"] and (await c.response("run-2", timeout=10))["ok"]
        assert (await c.response("run-o", timeout=10))["ok"]
        for _ in range(50):
            if gw.gateway.open_runs == 0:
                break
            await asyncio.sleep(0.05)
        again = await c.request("agent", _agent("run-3", "agent:main:three")["params"], timeout=10)
        assert again["ok"] and again["payload"]["status"] == "accepted"  # the same key, now admitted
        assert (await c.response(again["id"], timeout=10))["ok"]
        assert gw.gateway.journal.get("run-3") is not None
