"""Two gateways on one real PostgreSQL serve one assistant's sessions: a conversation started on
one continues on the other with its whole history, both list the same sessions, and a reset on
one is seen by the other. Nothing of it is written under either gateway's state directory."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from homarus.messages import Usage, UserMessage
from homarus.providers.scripted import Reply, ScriptedProvider
from tests.conftest import TEST_TOKEN, RunningGateway, run_gateway
from tests.wsclient import Client, open_client

MODEL: dict[str, Any] = {
    "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m", "contextWindow": 100000}]}}},
    "agents": {"defaults": {"model": {"primary": "test/m"}}},
}


def _config(url: str) -> dict[str, Any]:
    return {**MODEL, "storage": {"backend": "postgres", "postgres": {"url": url}}}


async def _client(gw: RunningGateway) -> Client:
    c = await open_client(gw.url)
    assert (await c.handshake(TEST_TOKEN))["ok"]
    return c


async def _turn(c: Client, key: str, text: str, run_id: str) -> dict[str, Any]:
    res = await c.request("chat.send", {"sessionKey": key, "message": text, "idempotencyKey": run_id})
    assert res["ok"], res
    while True:
        event = await c.event("chat", timeout=15)
        if event["payload"].get("runId") == run_id and event["payload"]["state"] in ("final", "error"):
            payload: dict[str, Any] = event["payload"]
            return payload


def _texts(history: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for m in history["messages"]:
        content = m["content"]
        text = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
        out.append((m["role"], text))
    return out


async def test_a_conversation_moves_between_two_gateways_with_its_history(tmp_path: Path, pg_url: str) -> None:
    with (
        run_gateway(tmp_path / "a", config=_config(pg_url)) as a,
        run_gateway(tmp_path / "b", config=_config(pg_url)) as b,
    ):
        model_a, model_b = ScriptedProvider([Reply("Hello from A.")]), ScriptedProvider([Reply("B remembers.")])
        a.gateway.models.overrides["test"] = model_a
        b.gateway.models.overrides["test"] = model_b
        ca, cb = await _client(a), await _client(b)

        first = await _turn(ca, "main", "my name is Ada", "run-a1")
        assert first["state"] == "final"
        second = await _turn(cb, "main", "what is my name?", "run-b1")
        assert second["state"] == "final"
        # b's model got the turn a ran, then the new message
        users = [m.content for m in model_b.requests[-1].messages if isinstance(m, UserMessage)]
        assert users[0] == "my name is Ada" and users[-1] == "what is my name?"
        expected = [
            ("user", "my name is Ada"),
            ("assistant", "Hello from A."),
            ("user", "what is my name?"),
            ("assistant", "B remembers."),
        ]
        for c in (ca, cb):
            history = (await c.request("chat.history", {"sessionKey": "main"}))["payload"]
            assert _texts(history) == expected
            listed = (await c.request("sessions.list", {}))["payload"]
            assert [s["key"] for s in listed["sessions"]] == ["agent:main:main"]
            assert listed["path"].startswith("postgresql://127.0.0.1:") and "#sessions/main" in listed["path"]

        async def counted() -> int:  # health is built on the loop: its figures are read in the background
            for _ in range(50):
                agents = (await ca.request("health", {"probe": True}))["payload"]["agents"]
                count: int = agents[0]["sessions"]["count"]
                if count:
                    return count
                await asyncio.sleep(0.1)
            return 0

        assert await counted() == 1
        reset = await cb.request("sessions.reset", {"key": "main"})
        assert reset["ok"], reset
        assert (await ca.request("chat.history", {"sessionKey": "main"}))["payload"]["messages"] == []

        for gw in (a, b):  # the sessions live in the database, not in either state directory
            sessions = gw.paths.state_dir / "agents" / "main" / "sessions"
            assert not sessions.exists() or not any(sessions.iterdir())


async def test_with_the_database_away_requests_fail_fast_and_work_again_when_it_is_back(tmp_path: Path) -> None:
    from tests.pg_cluster import pg_cluster

    with pg_cluster() as own:  # its own server: stopped in the middle
        config = {
            **MODEL,
            "storage": {"backend": "postgres", "postgres": {"url": own.url(), "connectTimeoutSeconds": 2}},
        }
        with run_gateway(tmp_path / "gw", config=config) as gw:
            gw.gateway.models.overrides["test"] = ScriptedProvider([Reply("before")], then="echo")
            c = await _client(gw)
            assert (await _turn(c, "main", "first", "run-1"))["state"] == "final"
            await asyncio.to_thread(own.stop, "immediate")
            loop = asyncio.get_running_loop()
            started = loop.time()
            refused = await c.request("chat.send", {"sessionKey": "main", "message": "x", "idempotencyKey": "run-2"})
            assert loop.time() - started < 6.0
            assert refused["ok"] is False and refused["error"]["code"] == "UNAVAILABLE"
            assert refused["error"]["retryable"] is True and own.password not in refused["error"]["message"]
            assert (await c.request("health"))["ok"]  # the gateway itself goes on answering
            await asyncio.to_thread(own.start)
            deadline = loop.time() + 20
            while True:  # retried as the error says, it goes through once the database is back
                again = await c.request(
                    "chat.send", {"sessionKey": "main", "message": "second", "idempotencyKey": "run-2"}
                )
                if again["ok"]:
                    break
                assert again["error"]["retryable"] is True and loop.time() < deadline
                await asyncio.sleep(0.5)
            while True:
                event = await c.event("chat", timeout=15)
                if event["payload"].get("runId") == "run-2" and event["payload"]["state"] == "final":
                    break
            history = (await c.request("chat.history", {"sessionKey": "main"}))["payload"]
            assert [m["role"] for m in history["messages"]] == ["user", "assistant", "user", "assistant"]


async def test_a_subscriber_on_one_gateway_hears_of_a_session_changed_on_another(tmp_path: Path, pg_url: str) -> None:
    with (
        run_gateway(tmp_path / "a", config=_config(pg_url)) as a,
        run_gateway(tmp_path / "b", config=_config(pg_url)) as b,
    ):
        ca, cb = await _client(a), await _client(b)
        assert (await cb.request("sessions.subscribe", {}))["ok"]
        await b.gateway.cluster.notices.listening.wait()  # type: ignore[union-attr]
        created = await ca.request("sessions.create", {"key": "agent:main:shared"})
        assert created["ok"], created
        patched = await ca.request("sessions.patch", {"key": "agent:main:shared", "label": "Both see it"})
        assert patched["ok"], patched
        changed = await cb.event("sessions.changed", timeout=10)
        assert changed["payload"]["sessionKey"] == "agent:main:shared"
        listed = (await cb.request("sessions.list", {}))["payload"]["sessions"]
        assert [s.get("label") for s in listed if s["key"] == "agent:main:shared"] == ["Both see it"]


async def test_the_usage_of_both_gateways_runs_is_one_ledger(tmp_path: Path, pg_url: str) -> None:
    with (
        run_gateway(tmp_path / "a", config=_config(pg_url)) as a,
        run_gateway(tmp_path / "b", config=_config(pg_url)) as b,
    ):
        for gw, tokens in ((a, 100), (b, 20)):
            usage = Usage(tokens, 1, 0, 0, tokens + 1)
            gw.gateway.models.overrides["test"] = ScriptedProvider([Reply("ok", usage=usage)])
        ca, cb = await _client(a), await _client(b)
        assert (await _turn(ca, "main", "one", "run-u1"))["state"] == "final"
        assert (await _turn(cb, "other", "two", "run-u2"))["state"] == "final"
        for c in (ca, cb):  # both answer with both runs
            for _ in range(50):  # a run's calls are added once its end is recorded
                totals = (await c.request("usage.cost", {"days": 1}))["payload"]["totals"]
                if totals["totalTokens"] == 122:
                    break
                await asyncio.sleep(0.05)
            assert totals["totalTokens"] == 122 and totals["input"] == 120
        for gw in (a, b):
            assert not (gw.paths.state_dir / "usage").exists()
