"""Heartbeat turns, the ack contract, wake and system events — over a real gateway."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from homarus.providers.scripted import Reply, ScriptedProvider
from homarus.sessions.store import SessionStore
from homarus.usecases.heartbeat import ACK_WORD, heartbeat_file_empty, strip_token
from tests.conftest import TEST_TOKEN, RunningGateway, run_gateway
from tests.wsclient import Client, open_client

CONFIG: dict[str, Any] = {
    "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m"}]}}},
    "agents": {"defaults": {"model": {"primary": "test/m"}, "heartbeat": {"every": "0m"}}},
}
MAIN = "agent:main:main"


@pytest.mark.parametrize(
    ("text", "rest", "ack"),
    [
        ("HEARTBEAT_OK", "", True),
        ("  HEARTBEAT_OK.  ", "", True),
        ("HEARTBEAT_OK — all quiet", "all quiet", True),
        ("Nothing to do. HEARTBEAT_OK", "Nothing to do", True),
        ("The disk is 97% full. HEARTBEAT_OK", "The disk is 97% full", True),
        ("x" * 301 + " HEARTBEAT_OK", "x" * 301, False),  # more than ackMaxChars is an alert
        ("Check the HEARTBEAT_OK logs", "Check the HEARTBEAT_OK logs", False),  # not at an edge
        ("Backup failed!", "Backup failed!", False),
    ],
)
def test_strip_token(text: str, rest: str, ack: bool) -> None:
    assert strip_token(text, 300) == (rest, ack)
    assert ACK_WORD == "HEARTBEAT_OK"


def test_heartbeat_file_empty(tmp_path: Path) -> None:
    path = tmp_path / "HEARTBEAT.md"
    assert not heartbeat_file_empty(path)  # missing: not "empty", the prompt copes
    path.write_text("# HEARTBEAT.md\n\n## Tasks\n- \n")
    assert heartbeat_file_empty(path)
    path.write_text("# HEARTBEAT.md\n- check the backups\n")
    assert not heartbeat_file_empty(path)


async def _client(gw: RunningGateway) -> Client:
    c = await open_client(gw.url)
    assert (await c.handshake(TEST_TOKEN))["ok"]
    return c


def _updated_at(gw: RunningGateway) -> int:
    store = SessionStore(gw.paths.state_dir / "agents" / "main" / "sessions").read()
    return int(store[MAIN]["updatedAt"])


async def test_ack_is_dropped_and_does_not_touch_the_session(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        provider = ScriptedProvider([Reply("hello"), Reply("HEARTBEAT_OK")])
        gw.gateway.models.overrides["test"] = provider
        c = await _client(gw)
        res = await c.request("agent", {"message": "hi", "idempotencyKey": "k1", "sessionKey": MAIN}, timeout=10)
        assert res["ok"]
        assert (await c.request("agent.wait", {"runId": "k1", "timeoutMs": 10_000}, timeout=15))["ok"]
        before = _updated_at(gw)
        assert (await c.request("wake", {"text": "Build #42 failed", "mode": "now"}))["ok"]
        event = await c.event("heartbeat", timeout=15)
        assert event["payload"]["status"] == "ok-token", event
        assert _updated_at(gw) == before
        last = await c.request("last-heartbeat")
        assert last["payload"]["status"] == "ok-token" and last["payload"]["reason"] == "wake"
        # the wake text reached the heartbeat turn as a system event
        prompt = repr(provider.requests[-1])
        assert "Build #42 failed" in prompt and "HEARTBEAT.md" in prompt


async def test_alert_is_broadcast_and_disabled_heartbeats_skip(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        gw.gateway.models.overrides["test"] = ScriptedProvider([Reply("The backup job failed twice.")])
        c = await _client(gw)
        assert (await c.request("wake", {"text": "check", "mode": "now"}))["ok"]
        event = await c.event("heartbeat", timeout=15)
        assert event["payload"]["status"] == "sent"
        assert event["payload"]["text"] == "The backup job failed twice."
        assert (await c.request("set-heartbeats", {"enabled": False}))["payload"] == {"ok": True, "enabled": False}
        assert (await c.request("wake", {"text": "again"}))["ok"]
        skipped = await c.event("heartbeat", timeout=15)
        assert skipped["payload"] == {**skipped["payload"], "status": "skipped", "reason": "disabled"}


async def test_wake_validation_and_scopes(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config=CONFIG) as gw:
        c = await _client(gw)
        assert not (await c.request("wake", {"text": ""}))["ok"]
        assert not (await c.request("wake", {"text": "x", "mode": "later"}))["ok"]
        reader = await open_client(gw.url)
        assert (await reader.handshake(TEST_TOKEN, ["operator.read"]))["ok"]
        denied = await reader.request("wake", {"text": "x"})
        assert not denied["ok"] and "scope" in denied["error"]["message"]
        assert (await reader.request("last-heartbeat"))["payload"] is None


def test_system_events_are_bounded_and_drained_once() -> None:
    from homarus.usecases.heartbeat import SystemEvents

    events = SystemEvents(max_per_session=3, max_sessions=2)
    for i in range(5):
        events.add("agent:main:main", f"e{i}")
    assert events.pending("agent:main:main") == 3
    drained = events.drain("agent:main:main")
    assert [d["text"] for d in drained] == ["e2", "e3", "e4"] and drained[0]["placement"] == "prepend_context"
    assert events.drain("agent:main:main") == []
    events.add("a", "x")
    events.add("b", "y")
    events.add("c", "z")  # the oldest session's queue is dropped
    assert (events.pending("a"), events.pending("b"), events.pending("c")) == (0, 1, 1)
