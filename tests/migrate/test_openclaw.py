"""`homarus migrate openclaw` against a real OpenClaw state (tests/fixtures/openclaw-state, see its
PROVENANCE.md): the plan, the written state, a gateway continuing the migrated session, re-runs,
and a damaged source that still migrates what it can."""

from __future__ import annotations

import itertools
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from homarus.sessions.store import SessionStore
from tests.conftest import TEST_TOKEN, run_gateway
from tests.gateway_process import json_out, run_cli, scrubbed_env
from tests.wsclient import open_client

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "openclaw-state"


def source(tmp_path: Path) -> Path:
    """A copy of the fixture whose workspace setting names the copy's workspace (the original
    machine's absolute path exists only there)."""
    root = tmp_path / "openclaw"
    shutil.copytree(FIXTURE, root)
    cfg_path = root / "state" / "openclaw.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["agents"]["defaults"]["workspace"] = str(root / "workspace")
    cfg_path.write_text(json.dumps(cfg))
    return root / "state"


def migrate(tmp_path: Path, src: Path, *extra: str) -> dict[str, Any]:
    """Into ``tmp_path/gw/state`` (where ``run_gateway(tmp_path / "gw")`` looks)."""
    env = scrubbed_env(tmp_path / "gw" / "state")
    result = run_cli(env, "migrate", "openclaw", "--from", str(src), "--json", *extra)
    assert result.returncode == 0, result.stderr
    out: dict[str, Any] = json_out(result)
    return out


def actions(plan: dict[str, Any], kind: str) -> dict[str, str]:
    return {i["what"]: i["action"] for i in plan["items"] if i["kind"] == kind}


def test_dry_run_lists_everything_and_writes_nothing(tmp_path: Path) -> None:
    src = source(tmp_path)
    before = {p: p.read_bytes() for p in src.rglob("*") if p.is_file()}
    plan = migrate(tmp_path, src, "--dry-run")
    assert plan["dryRun"] is True and not (tmp_path / "gw" / "state").exists()
    config = actions(plan, "config")
    assert config["gateway.auth.token"] == "carry" and config["models.providers.fake.baseUrl"] == "carry"
    assert config["agents.defaults.workspace"] == "rename"
    assert config["gateway.tailscale"] == "skip" and config["update"] == "skip"
    assert actions(plan, "file")["memory/2026-11-26.md"] == "carry"
    assert set(actions(plan, "session")) == {
        "agent:main:main (800ef2e0-d852-4ac2-93ca-1e9c33d99af7)",
        "agent:main:work (864c4bad-4c27-4ca9-8598-7aa958d5e43c)",
    }
    cron = actions(plan, "cron")
    assert cron["morning digest"] == "carry" and cron["stretch"] == "carry" and cron["heartbeat-main"] == "skip"
    assert {p: p.read_bytes() for p in src.rglob("*") if p.is_file()} == before  # the source untouched


async def test_migrated_state_runs_and_the_session_continues(tmp_path: Path) -> None:
    src = source(tmp_path)
    migrate(tmp_path, src)
    home = tmp_path / "gw" / "state"
    cfg = json.loads((home / "homarus.json").read_text())
    assert cfg["gateway"]["auth"]["token"] == "peer-gateway-token-0123456789abcdef"
    assert (home / "workspace" / "MEMORY.md").read_text().startswith("# Memory")
    approvals = json.loads((home / "exec-approvals.json").read_text())
    assert [e["pattern"] for e in approvals["allowlist"]] == ["/usr/bin/git"]
    jobs = json.loads((home / "cron" / "jobs.json").read_text())["jobs"]
    assert sorted(j["name"] for j in jobs) == ["morning digest", "stretch"]

    cfg["models"]["providers"] = {"test": {"api": "scripted", "models": [{"id": "m"}]}}
    cfg["agents"]["defaults"]["model"] = {"primary": "test/m"}
    cfg.pop("gateway")
    with run_gateway(tmp_path / "gw", config=cfg) as gw:
        client = await open_client(gw.url)
        assert (await client.handshake(TEST_TOKEN))["ok"]
        listed = (await client.request("sessions.list"))["payload"]["sessions"]
        assert {"agent:main:main", "agent:main:work"} <= {s["key"] for s in listed}
        history = (await client.request("chat.history", {"sessionKey": "main"}))["payload"]["messages"]
        texts = [m["content"] if isinstance(m["content"], str) else m["content"][0]["text"] for m in history]
        assert texts[:2] == ["hello from the migration fixture", "Hello from the fake model. This is a canned reply."]
        sent = await client.request(
            "chat.send", {"sessionKey": "main", "message": "still there?", "idempotencyKey": "m1"}
        )
        assert sent["ok"]
        waited = await client.request("agent.wait", {"runId": "m1", "timeoutMs": 10_000}, timeout=15)
        assert waited["payload"]["status"] == "ok"
        history = (await client.request("chat.history", {"sessionKey": "main"}))["payload"]["messages"]
        assert len(history) == 6  # two migrated turns, then the new one in the same session
        cron = (await client.request("cron.list"))["payload"]["jobs"]
        assert sorted(j["name"] for j in cron) == ["morning digest", "stretch"]


def test_rerun_is_idempotent_and_backs_up_a_changed_config(tmp_path: Path) -> None:
    src = source(tmp_path)
    migrate(tmp_path, src)
    home = tmp_path / "gw" / "state"
    sessions_before = SessionStore(home / "agents" / "main" / "sessions").read()
    (home / "workspace" / "USER.md").write_text("edited in Homarus\n")
    cfg = json.loads((home / "homarus.json").read_text())
    cfg["gateway"]["port"] = 18888
    (home / "homarus.json").write_text(json.dumps(cfg))
    again = migrate(tmp_path, src)
    assert set(actions(again, "session").values()) == {"skip"}
    assert actions(again, "cron")["stretch"] == "skip"
    assert actions(again, "file")["USER.md"] == "keep" and actions(again, "file")["AGENTS.md"] == "skip"
    assert (home / "workspace" / "USER.md").read_text() == "edited in Homarus\n"
    assert SessionStore(home / "agents" / "main" / "sessions").read() == sessions_before
    assert len(again["backups"]) == 1 and json.loads(Path(again["backups"][0]).read_text())["gateway"]["port"] == 18888


def test_a_damaged_source_is_reported_line_by_line_and_the_rest_migrates(tmp_path: Path) -> None:
    src = source(tmp_path)
    db = sqlite3.connect(src / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    db.execute(
        "UPDATE transcript_events SET event_json='{not json' WHERE session_id='800ef2e0-d852-4ac2-93ca-1e9c33d99af7'"
        " AND seq=7"
    )
    db.commit()
    db.close()
    cfg = json.loads((src / "openclaw.json").read_text())
    cfg["$include"] = "missing-part.json5"
    cfg["agents"]["defaults"]["workspace"] = "/nowhere/at/all"
    (src / "openclaw.json").write_text(json.dumps(cfg))
    plan = migrate(tmp_path, src)
    errors = [i for i in plan["items"] if i["action"] == "error"]
    assert any("missing-part.json5" in e["what"] for e in errors)
    assert any("#7" in e["what"] for e in errors)
    assert any(i["what"] == "agents.defaults.workspace" and "not found" in i["detail"] for i in errors)
    main = next(i for i in plan["items"] if i["what"].startswith("agent:main:main"))
    assert main["action"] == "carry" and "1 unreadable or invalid left out" in main["detail"]
    home = tmp_path / "gw" / "state"
    lines = (
        (home / "agents" / "main" / "sessions" / "800ef2e0-d852-4ac2-93ca-1e9c33d99af7.jsonl").read_text().splitlines()
    )
    entries = [json.loads(x) for x in lines[1:]]
    assert all(e["parentId"] == p["id"] for p, e in itertools.pairwise(entries))  # relinked

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "openclaw.json").write_text("{ this is not json5")
    env = scrubbed_env(tmp_path / "other")
    out = run_cli(env, "migrate", "openclaw", "--from", str(broken), "--dry-run")
    assert out.returncode == 0 and "cannot read" in out.stdout
    missing = run_cli(env, "migrate", "openclaw", "--from", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "no OpenClaw state" in missing.stderr


def test_the_older_file_layout_migrates_too(tmp_path: Path) -> None:
    """Versions before the SQLite stores kept sessions as sessions.json + JSONL transcripts (v3,
    8-hex ids), cron jobs in cron/jobs.json and approvals in exec-approvals.json."""
    src = tmp_path / "legacy"
    sessions = src / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (src / "workspace").mkdir()
    (src / "workspace" / "AGENTS.md").write_text("# Agents\n")
    (src / "openclaw.json").write_text('{ // JSON5\n agents: { defaults: { model: { primary: "x/y" } } },\n}\n')
    sid = "11111111-2222-3333-4444-555555555555"
    (sessions / "sessions.json").write_text(json.dumps({"agent:main:main": {"sessionId": sid, "updatedAt": 1}}))
    lines = [
        {"type": "session", "version": 3, "id": sid, "timestamp": "2026-01-01T00:00:00Z", "cwd": "/old"},
        {
            "type": "message",
            "id": "a1b2c3d4",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:01Z",
            "message": {"role": "user", "content": "from the old days", "timestamp": 1},
        },
    ]
    (sessions / f"{sid}.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\nnot json at all\n")
    (src / "cron").mkdir()
    job = {
        "id": "job-1",
        "name": "old job",
        "enabled": True,
        "createdAtMs": 1,
        "schedule": {"kind": "every", "everyMs": 60000},
        "sessionTarget": "main",
        "wakeMode": "now",
        "payload": {"kind": "systemEvent", "text": "tick"},
        "state": {},
    }
    (src / "cron" / "jobs.json").write_text(json.dumps({"version": 1, "jobs": [job]}))
    (src / "exec-approvals.json").write_text(
        json.dumps({"version": 1, "agents": {"main": {"allowlist": [{"pattern": "ls"}]}}})
    )
    plan = migrate(tmp_path, src)
    home = tmp_path / "gw" / "state"
    main = next(i for i in plan["items"] if i["kind"] == "session")
    assert main["action"] == "carry" and main["detail"] == "1 transcript entries, 1 unreadable or invalid left out"
    transcript = (home / "agents" / "main" / "sessions" / f"{sid}.jsonl").read_text()
    assert "from the old days" in transcript
    assert json.loads((home / "cron" / "jobs.json").read_text())["jobs"][0]["name"] == "old job"
    assert [e["pattern"] for e in json.loads((home / "exec-approvals.json").read_text())["allowlist"]] == ["ls"]
    assert (home / "workspace" / "AGENTS.md").read_text() == "# Agents\n"


def test_the_originals_whatsapp_session_directory_is_not_carried() -> None:
    """Homarus's engine would write its session into the original's Baileys directory (the source
    is never written), and could not use what is there: the number is linked again."""
    from homarus.migrate.config_map import WHATSAPP_SESSION, map_config

    source = {
        "channels": {
            "whatsapp": {
                "dmPolicy": "pairing",
                "authDir": "~/.openclaw/credentials/whatsapp",
                "accounts": {
                    "work": {"authDir": "~/.openclaw/credentials/whatsapp/work", "allowFrom": ["+15551230001"]}
                },
            }
        }
    }
    out, items = map_config(source, workspace_note=None)
    whatsapp = out["channels"]["whatsapp"]
    assert "authDir" not in whatsapp and "authDir" not in whatsapp["accounts"]["work"]
    assert whatsapp["dmPolicy"] == "pairing" and whatsapp["accounts"]["work"]["allowFrom"] == ["+15551230001"]
    skipped = {i.what: i.detail for i in items if i.action == "skip"}
    assert skipped == {
        "channels.whatsapp.authDir": WHATSAPP_SESSION,
        "channels.whatsapp.accounts.work.authDir": WHATSAPP_SESSION,
    }


async def test_with_postgres_the_sessions_go_into_the_database(tmp_path: Path, pg_url: str) -> None:
    src = source(tmp_path)
    home = tmp_path / "gw" / "state"
    home.mkdir(parents=True, mode=0o700)
    storage = {"backend": "postgres", "postgres": {"url": pg_url}}
    (home / "homarus.json").write_text(json.dumps({"storage": storage}))
    migrate(tmp_path, src)
    assert not (home / "agents" / "main" / "sessions").exists()  # nothing written beside the database
    again = migrate(tmp_path, src)
    assert set(actions(again, "session").values()) == {"skip"}  # found in the database
    with run_gateway(tmp_path / "fresh", config={"storage": storage}) as gw:
        client = await open_client(gw.url)
        assert (await client.handshake(TEST_TOKEN))["ok"]
        listed = (await client.request("sessions.list"))["payload"]["sessions"]
        assert {"agent:main:main", "agent:main:work"} <= {s["key"] for s in listed}
        history = (await client.request("chat.history", {"sessionKey": "main"}))["payload"]["messages"]
        assert history[0]["content"] == "hello from the migration fixture"
