"""sessions.* over a real socket: shapes, scopes, bad input, change events, on-disk effects."""

from __future__ import annotations

import json
from pathlib import Path

from homarus.sessions.store import SessionStore
from homarus.sessions.transcript import Transcript
from tests.conftest import TEST_TOKEN, RunningGateway, run_gateway
from tests.wsclient import Client, open_client


async def _client(gw: RunningGateway, scopes: list[str] | None = None) -> Client:
    client = await open_client(gw.url)
    assert (await client.handshake(TEST_TOKEN, scopes))["ok"]
    return client


async def test_create_list_get_preview(gw: RunningGateway) -> None:
    c = await _client(gw)
    res = await c.request("sessions.create", {"key": "work", "label": "Work"})
    assert res["ok"], res
    p = res["payload"]
    assert p["key"] == "agent:main:work" and p["created"] is True and p["runStarted"] is False
    sid = p["sessionId"]
    store = gw.paths.state_dir / "agents" / "main" / "sessions"
    assert SessionStore(store).read()["agent:main:work"]["label"] == "Work"
    header = json.loads((store / f"{sid}.jsonl").read_text().splitlines()[0])
    assert header == {**header, "type": "session", "version": 3, "id": sid}
    assert (store / f"{sid}.jsonl").stat().st_mode & 0o777 == 0o600
    again = (await c.request("sessions.create", {"key": "agent:main:work"}))["payload"]
    assert again["created"] is False and again["sessionId"] == sid

    listed = (await c.request("sessions.list", {"includeLastMessage": True}))["payload"]
    assert listed["count"] == 1
    row = listed["sessions"][0]
    assert row["key"] == "agent:main:work" and row["kind"] == "direct" and row["label"] == "Work"
    assert row["lastMessagePreview"] == ""
    assert (await c.request("sessions.list", {"search": "nope"}))["payload"]["count"] == 0
    assert (await c.request("sessions.list", {"label": "Work"}))["payload"]["count"] == 1

    got = (await c.request("sessions.get", {"key": "work"}))["payload"]
    assert got["messages"] == [] and got["sessionId"] == sid
    prev = (await c.request("sessions.preview", {"keys": ["work", "agent:main:ghost", "agent:"]}))["payload"]
    assert [x["status"] for x in prev["previews"]] == ["empty", "missing", "error"]


async def test_patch_validates_fields_and_scope(gw: RunningGateway) -> None:
    c = await _client(gw)
    await c.request("sessions.create", {"key": "p1"})
    ok = await c.request("sessions.patch", {"key": "p1", "label": "L", "thinkingLevel": "high", "model": "x/y"})
    assert ok["ok"], ok
    entry = ok["payload"]["entry"]
    assert entry["label"] == "L" and entry["thinkingLevel"] == "high" and entry["modelOverride"] == "x/y"
    assert ok["payload"]["resolved"]["model"] == "x/y"
    cleared = (await c.request("sessions.patch", {"key": "p1", "label": None}))["payload"]["entry"]
    assert "label" not in cleared
    bad = await c.request("sessions.patch", {"key": "p1", "flavour": "red"})
    assert bad["error"]["message"] == "invalid sessions.patch params: at root: unexpected property 'flavour'"
    colored = (await c.request("sessions.patch", {"key": "p1", "color": "red", "unread": False}))["payload"]
    assert colored["entry"]["color"] == "red"  # the original's (v4) board fields are kept
    bad = await c.request("sessions.patch", {"key": "p1", "thinkingLevel": "ludicrous"})
    assert bad["error"]["message"].startswith("invalid sessions.patch params: at /thinkingLevel")
    missing = await c.request("sessions.patch", {"key": "nobody", "label": "x"})
    assert missing["error"]["message"] == "session not found: agent:main:nobody"
    malformed = await c.request("sessions.patch", {"key": "agent:bad id:x", "label": "x"})
    assert malformed["error"]["message"].startswith('malformed session key "agent:bad id:x"')
    writer = await _client(gw, ["operator.read", "operator.write"])
    # the original's v4 rule: a label or a model choice is a writer's; the rest an admin's
    assert (await writer.request("sessions.patch", {"key": "p1", "label": "x"}))["ok"]
    denied = await writer.request("sessions.patch", {"key": "p1", "sendPolicy": "deny"})
    assert denied["error"]["message"] == "missing scope: operator.admin"
    reader = await _client(gw, ["operator.read"])
    assert (await reader.request("sessions.patch", {"key": "p1", "label": "y"}))["error"]["message"] == (
        "missing scope: operator.write"
    )


async def test_reset_and_delete_archive_transcripts(gw: RunningGateway) -> None:
    c = await _client(gw)
    sid = (await c.request("sessions.create", {"key": "r1", "label": "keep"}))["payload"]["sessionId"]
    res = (await c.request("sessions.reset", {"key": "r1"}))["payload"]
    assert res["ok"] and res["entry"]["sessionId"] != sid and res["entry"]["label"] == "keep"
    assert Path(res["archived"]).name.startswith(f"{sid}.jsonl.reset.")
    deleted = (await c.request("sessions.delete", {"key": "r1"}))["payload"]
    assert deleted["deleted"] is True and ".deleted." in deleted["archived"][0]
    again = (await c.request("sessions.delete", {"key": "r1"}))["payload"]
    assert again == {"ok": True, "key": "agent:main:r1", "deleted": False, "archived": []}
    await c.request("sessions.create", {})
    main = await c.request("sessions.delete", {"key": "main"})
    assert main["error"]["message"] == "Cannot delete the main session (agent:main:main)."
    assert (await c.request("sessions.reset", {"key": "ghost"}))["error"]["message"] == (
        "session not found: agent:main:ghost"
    )


async def test_changed_events_go_to_subscribers_only(gw: RunningGateway) -> None:
    watcher = await _client(gw)
    other = await _client(gw)
    assert (await watcher.request("sessions.subscribe"))["payload"] == {"subscribed": True}
    actor = await _client(gw)
    await actor.request("sessions.create", {"key": "ev"})
    event = await watcher.event("sessions.changed")
    assert event["payload"]["sessionKey"] == "agent:main:ev" and event["payload"]["reason"] == "create"
    assert "seq" not in event  # targeted events carry no seq
    await actor.request("sessions.patch", {"key": "ev", "label": "x"})
    assert (await watcher.event("sessions.changed"))["payload"]["reason"] == "patch"
    assert all(e["event"] != "sessions.changed" for e in other.events)
    await watcher.request("sessions.unsubscribe")
    await actor.request("sessions.patch", {"key": "ev", "label": "y"})
    assert (await actor.request("health"))["ok"]
    assert all(e["event"] != "sessions.changed" for e in watcher.events)


async def test_unknown_agents_and_resolve(tmp_path: Path) -> None:
    config = {"agents": {"list": [{"id": "main", "default": True}, {"id": "ops"}]}}
    with run_gateway(tmp_path, config=config) as running:
        c = await _client(running)
        res = await c.request("sessions.resolve", {"key": "chat", "agentId": "ops"})
        assert res["payload"] == {"ok": True, "key": "agent:ops:chat"}
        res = await c.request("sessions.resolve", {"key": "agent:zzz:chat"})
        assert res["error"]["message"] == 'unknown agent id "zzz"'
        res = await c.request("sessions.create", {"key": "agent:main:x", "agentId": "ops"})
        assert res["error"]["message"] == 'session key "agent:main:x" belongs to agent "main", not "ops"'
        made = await c.request("sessions.create", {"agentId": "ops", "label": "dash"})
        assert made["payload"]["key"].startswith("agent:ops:dashboard:")
        assert (await c.request("sessions.resolve", {"label": "dash"}))["payload"]["key"] == made["payload"]["key"]
        assert (await c.request("sessions.list", {"agentId": "ops"}))["payload"]["count"] == 1
        assert (await c.request("sessions.list", {"agentId": "zzz"}))["error"]["message"] == 'unknown agent id "zzz"'


async def test_a_state_dir_with_an_older_sessions_json_is_served_after_its_import(tmp_path: Path) -> None:
    """An older Homarus kept the index in sessions.json: the gateway imports it on first use and
    every session, with its history, is there; the file is kept aside, renamed."""
    sessions = tmp_path / "state" / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True, mode=0o700)
    legacy = {}
    for n, key in enumerate(["agent:main:main", "agent:main:telegram:direct:42"]):
        sid = f"0000000{n}-aaaa-bbbb-cccc-dddddddddddd"
        legacy[key] = {"sessionId": sid, "updatedAt": 1_700_000_000_000 + n, "label": f"old {n}"}
        transcript = Transcript(sessions / f"{sid}.jsonl")
        transcript.create(sid)
        transcript.append({"type": "message", "message": {"role": "user", "content": f"hello {n}"}})
    (sessions / "sessions.json").write_text(json.dumps(legacy))
    with run_gateway(tmp_path) as gw:
        c = await _client(gw)
        listed = (await c.request("sessions.list", {}))["payload"]
        assert {row["key"]: row["label"] for row in listed["sessions"]} == {
            "agent:main:main": "old 0",
            "agent:main:telegram:direct:42": "old 1",
        }
        history = (await c.request("chat.history", {"sessionKey": "agent:main:telegram:direct:42"}))["payload"]
        assert [m["content"] for m in history["messages"]] == ["hello 1"]
        assert (await c.request("sessions.patch", {"key": "main", "label": "renamed"}))["ok"]
    assert not (sessions / "sessions.json").exists()
    assert len(list(sessions.glob("sessions.json.imported.*"))) == 1
    stored = SessionStore(sessions).read()
    assert stored["agent:main:main"]["label"] == "renamed"
    assert stored["agent:main:telegram:direct:42"] == legacy["agent:main:telegram:direct:42"]


async def test_health_and_status_count_the_stored_sessions(gw: RunningGateway) -> None:
    """Not a hard-coded 0: the count and the five newest, as sessions.list sees them."""
    c = await _client(gw)
    for i in range(7):
        assert (await c.request("sessions.create", {"key": f"counted-{i}"}))["ok"]
    listed = (await c.request("sessions.list", {}))["payload"]["sessions"]
    health = (await c.request("health", {"probe": True}))["payload"]
    main = health["agents"][0]["sessions"]
    assert main["count"] == len(listed) == 7 and health["sessions"]["count"] == 7
    assert [r["key"] for r in main["recent"]] == [s["key"] for s in listed[:5]]
    assert all(r["age"] >= 0 and r["updatedAt"] > 0 for r in main["recent"])
    status = (await c.request("status", {"includeChannelSummary": False, "includeCliProjection": True}))["payload"]
    assert status["sessions"]["count"] == 7 and status["sessions"]["byAgent"][0]["count"] == 7
    assert len(status["sessions"]["recent"]) == 5
    assert status["cliProjection"]["agents"] == {
        "defaultId": "main",
        "ownership": "sole",
        "selectionRequired": False,
        "rows": [{"id": "main"}],
    }
    assert status["processMemory"]["rssBytes"] > 10 * 1024 * 1024
    bad = await c.request("status", {"includeEverything": True})
    assert "unexpected property 'includeEverything'" in bad["error"]["message"]
