"""Bounded state: after many runs, each on a session of its own, every structure the gateway keeps
per run, per session and per connection holds no more than its bound (counts are deterministic,
so they are checked here; RSS is what ``bench/rss_bench.py`` measures)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from homarus.gateway.services.retained import retained
from homarus.sessions import manager as session_manager
from tests.conftest import TEST_TOKEN, RunningGateway, run_gateway
from tests.wsclient import Client, open_client

RUNS_KEPT = 20
WATCHED = 5
HANDLES = 40
CACHE_BYTES = 40_000
SESSIONS = 150
CONFIG: dict[str, Any] = {
    "gateway": {"memory": {"runsKept": RUNS_KEPT, "watchedSessionsPerConnection": WATCHED}},
    "agents": {"defaults": {"heartbeat": {"every": "0m"}}},
}


async def _turns(c: Client, prefix: str, n: int) -> None:
    """``n`` turns one after another, each on a new session; the final response of each."""
    for i in range(n):
        rid = f"{prefix}-{i}"
        params = {"message": f"turn {i}: " + "x" * 400, "sessionKey": rid, "idempotencyKey": rid}
        await c.send({"type": "req", "id": rid, "method": "agent", "params": params})
        res = await c.response(rid, timeout=30)
        if res["ok"] and res["payload"].get("status") == "accepted":
            res = await c.response(rid, timeout=30)
        assert res["ok"] and res["payload"]["status"] == "ok", res


async def _quiet(gw: RunningGateway) -> dict[str, int]:
    """The report once no run is open (a run's last bookkeeping may trail its final response)."""
    deadline = time.monotonic() + 10
    while True:
        held = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(_report(gw), gw.loop))
        if (held["activeRuns"], held["runOwners"], held["chatStreams"]) == (0, 0, 0):
            return held
        assert time.monotonic() < deadline, held
        await asyncio.sleep(0.05)


async def _report(gw: RunningGateway) -> dict[str, int]:
    return retained(gw.gateway)  # read on the gateway's own loop


async def test_state_per_run_session_and_connection_stays_within_its_bounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session_manager, "MAX_TRANSCRIPT_HANDLES", HANDLES)
    with run_gateway(tmp_path, config=CONFIG) as gw:
        gw.gateway.sessions.transcript_cache_bytes = CACHE_BYTES
        clients = [await open_client(gw.url) for _ in range(3)]
        for i, c in enumerate(clients):
            caps = ["targeted-events"] if i else []
            assert (await c.handshake(TEST_TOKEN, caps=caps))["ok"]
        await asyncio.gather(*(_turns(c, f"s{i}", SESSIONS // 3) for i, c in enumerate(clients)))
        follower = clients[1]
        for i in range(WATCHED * 3):  # a targeted client following ever more sessions
            res = await follower.request("sessions.messages.subscribe", {"key": f"s0-{i}"})
            assert res["ok"], res
        held = await _quiet(gw)

        assert held["lanes"] <= 4  # the configured ones (main, subagent, cron, nested); no session's
        assert held["idempotencyKeys"] <= RUNS_KEPT
        assert held["runSnapshots"] <= RUNS_KEPT and held["runsRecorded"] <= RUNS_KEPT
        assert held["runWaiters"] == 0
        assert held["watchedSessions"] == WATCHED  # the ones followed longest ago were let go
        assert held["transcriptHandles"] <= HANDLES
        # trimmed every 64 lookups: between two trims, at most what those lookups added
        files = list((gw.paths.state_dir / "agents" / "main" / "sessions").glob("*.jsonl"))
        assert len(files) == SESSIONS  # and the runs were real: every session's transcript is on disk
        largest = max(f.stat().st_size for f in files)
        assert held["transcriptCacheBytes"] <= CACHE_BYTES + 64 * (largest + largest // 4)
        assert held["transcriptCacheBytes"] < sum(f.stat().st_size for f in files) // 2  # well below all
        assert held["connections"] == 3

        for c in clients:
            await c.ws.close()
        deadline = time.monotonic() + 5
        while (held := await _quiet(gw))["connections"] or held["watchedSessions"]:
            assert time.monotonic() < deadline, held
            await asyncio.sleep(0.05)
