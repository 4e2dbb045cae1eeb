"""``homarus storage migrate --from embedded --to postgres`` on a real PostgreSQL: an embedded
installation's sessions (live, reset and deleted transcripts, a torn last line) arrive whole, a
second run changes nothing, a gateway on the database continues the conversation, and
``homarus sessions`` reads the database once the backend is postgres. Bad cases: no URL, a server
that is not there (its password never printed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from homarus.channels.db import ChannelDb
from homarus.channels.inbox import Inbox
from homarus.channels.model import InboundMessage
from homarus.channels.pairing import PairingStore
from homarus.memory.store import MemoryStore, encode_vector
from homarus.messages import Usage
from homarus.queue.journal import RunJournal
from homarus.security.devices import DeviceStore
from homarus.security.exec_approvals_file import ExecApprovalsFile, ExecPolicySettings, approvals_path, save
from homarus.sessions.manager import SessionManager
from homarus.usage.ledger import ModelTally, RunUsage, UsageLedger, ledger_path
from tests.conftest import TEST_TOKEN, run_gateway
from tests.gateway_process import free_port, run_cli, scrubbed_env, write_config
from tests.wsclient import open_client


def _message(role: str, text: str) -> dict[str, Any]:
    if role == "user":
        return {"type": "message", "message": {"role": "user", "content": text, "timestamp": 1}}
    content = [{"type": "text", "text": text}]
    return {"type": "message", "message": {"role": "assistant", "content": content, "timestamp": 2}}


def _embedded_state(state: Path) -> dict[str, str]:
    """Sessions as an embedded gateway leaves them: main (after a reset), a chat, a deleted one."""
    mgr = SessionManager(state, agent_ids=("main",))
    try:
        main = mgr.resolve_key("main")
        old = mgr.ensure(main)
        mgr.transcript_for(old).append(_message("user", "before the reset"))
        mgr.reset(main)
        ref = mgr.require(main)
        mgr.transcript_for(ref).append_many([_message("user", "my name is Ada"), _message("assistant", "Hi Ada.")])
        chat = mgr.resolve_key("agent:main:chat-2")
        chat_ref = mgr.ensure(chat, label="Second chat")
        mgr.transcript_for(chat_ref).append(_message("user", "second chat"))
        gone = mgr.resolve_key("agent:main:gone")
        mgr.ensure(gone)
        mgr.delete(gone)
        journal = RunJournal(state / "runs.sqlite")  # one run that answered, one still queued
        try:
            journal.accept("done-1", "agent", {"message": "hi"}, session_key=main.canonical)
            journal.finish("done-1", "ok", result={"runId": "done-1", "status": "ok", "result": {}})
            journal.accept("queued-1", "agent", {"message": "later"}, session_key=main.canonical)
        finally:
            journal.close()
        _cron_job(state)
        _channel_store(state)
        _memory_index(state)
        approvals = ExecApprovalsFile(ExecPolicySettings("allowlist", "on-miss", "deny"), ("/usr/bin/ls",), {})
        save(approvals_path(state), approvals)
        devices = DeviceStore(state / "devices.sqlite")
        devices.pair("phone-1", "key-1", "operator", ["operator.read"], {"displayName": "Ada's phone"}, "local")
        devices.request("tablet-1", "key-2", "operator", [], {}, "203.0.113.7")
        devices.close()
        ledger = UsageLedger(ledger_path(state))
        ledger.record(
            RunUsage(
                1_795_000_000_000,
                "main",
                "agent:main:main",
                "",
                {("openai", "gpt"): ModelTally(1, Usage(1, 1, 0, 0, 2))},
            )
        )
        ledger.close()
        torn = mgr.sessions_dir("main") / f"{chat_ref.entry.session_id}.jsonl"
        with open(torn, "ab") as f:
            f.write(b'{"type":"message","mess')  # a crash in the middle of a line
        return {"main": ref.entry.session_id, "chat": chat_ref.entry.session_id}
    finally:
        mgr.close()


def _cron_job(state: Path) -> None:
    """One cron job in the embedded jobs file, with two runs in its log."""
    job = {
        "id": "nightly",
        "name": "nightly",
        "createdAtMs": 1,
        "updatedAtMs": 1,
        "schedule": {"kind": "every", "everyMs": 60000, "anchorMs": 0},
        "sessionTarget": "main",
        "payload": {"kind": "systemEvent", "text": "tick"},
        "state": {"nextRunAtMs": 120000, "lastRunStatus": "ok"},
    }
    (state / "cron" / "runs").mkdir(parents=True)
    (state / "cron" / "jobs.json").write_text(json.dumps({"version": 1, "jobs": [job]}))
    runs = [{"ts": t, "jobId": "nightly", "status": "ok", "runAtMs": t} for t in (60000, 120000)]
    (state / "cron" / "runs" / "nightly.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))


def _memory_index(state: Path) -> None:
    """The default agent's SQLite memory index with three vectors in its embedding cache."""
    store = MemoryStore.open(state / "memory" / "main.sqlite", use_vec=False)
    try:
        key = ("openai", "text-embedding-3-small", "k")
        store.cache_put(key, [(f"h{i}", encode_vector([0.1 * i, 0.2]), 2) for i in range(3)])
    finally:
        store.close()


def _channel_store(state: Path) -> None:
    """A channel store: one message in with its cursor, one sender paired, one waiting."""
    db = ChannelDb(state / "channels.sqlite")
    try:
        message = InboundMessage("telegram", "default", "direct", "42", "m-1", "42", text="hi")
        Inbox(db).commit([message], cursor=("telegram", "default", "offset", "7"))
        pairing = PairingStore(db)
        paired, _ = pairing.request("telegram", "default", "42", {"name": "Ada"})
        assert paired is not None
        pairing.approve("telegram", paired.code)
        waiting, _ = pairing.request("telegram", "default", "43", {"name": "Bob"})
        assert waiting is not None
    finally:
        db.close()


def _config(state: Path, url: str, backend: str = "embedded") -> None:
    config = {
        "gateway": {"auth": {"token": TEST_TOKEN}},
        "storage": {"backend": backend, "postgres": {"url": url, "connectTimeoutSeconds": 2}},
    }
    write_config(state, json.dumps(config))


def test_an_embedded_installation_moves_into_postgres(tmp_path: Path, pg_url: str) -> None:
    state = tmp_path / "state"
    ids = _embedded_state(state)
    _config(state, pg_url)
    env = scrubbed_env(state)

    dry = run_cli(env, "storage", "migrate", "--from", "embedded", "--to", "postgres", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    [agent] = json.loads(dry.stdout)["agents"]
    assert agent["sessions"] == 2 and agent["transcripts"] == 4 and agent["archived"] == 2
    assert agent["sessionsAdded"] == 0 and agent["transcriptsAdded"] == 0
    assert agent["skippedLines"] == {f"{ids['chat']}.jsonl": 1}
    assert json.loads(dry.stdout)["runs"] == {"found": 2, "unfinished": 1, "added": 0}
    assert json.loads(dry.stdout)["cron"] == {"jobs": 1, "added": 1, "history": 2}  # would add
    assert {t: c["found"] for t, c in json.loads(dry.stdout)["channels"].items()} == {
        "inbound": 1,
        "cursors": 1,
        "outbox": 0,
        "pairing_requests": 1,
        "pairing_allow": 1,
    }
    assert json.loads(dry.stdout)["memory"] == {"main": {"vectors": 3, "added": 0}}
    assert json.loads(dry.stdout)["execApprovals"] == {"patterns": 1, "added": False}
    assert {t: c["found"] for t, c in json.loads(dry.stdout)["devices"].items()} == {
        "paired": 1,
        "pending": 1,
        "tokens": 1,
    }
    assert json.loads(dry.stdout)["usage"] == {"found": 1, "added": 0}

    done = run_cli(env, "storage", "migrate", "--from", "embedded", "--to", "postgres")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (
        "agent main: 2 session(s), 4 transcript(s) (2 set aside), 4 entries; copied 2 session(s) and 4 transcript(s)"
    )
    assert lines[1] == f"  {ids['chat']}.jsonl: 1 line(s) that do not parse, left out"
    assert lines[2] == (
        "run journal: 2 run(s), 1 unfinished; copied 2 (the first gateway to start takes the unfinished ones up)"
    )
    assert lines[3] == "cron: 1 job(s); copied 1 with 2 run-log entries"
    assert lines[4] == (
        "channel store: inbound 1, cursors 1, outbox 0, pairing_requests 1, pairing_allow 1; copied 4 row(s)"
    )
    assert lines[5].startswith("memory of agent main: 3 cached vector(s); copied 3 (the first sync builds")
    assert lines[6] == "exec approvals: 1 allow-always pattern(s); copied"
    assert lines[7] == "paired devices: paired 1, pending 1, tokens 1; copied 3 row(s)"
    assert lines[8] == "usage ledger: 1 hourly row(s); copied 1"
    assert "the embedded files are left as they were" in lines[9]
    assert (state / "agents" / "main" / "sessions" / f"{ids['main']}.jsonl").exists()

    again = run_cli(env, "storage", "migrate", "--from", "embedded", "--to", "postgres", "--json")
    [agent] = json.loads(again.stdout)["agents"]
    assert agent["sessionsAdded"] == 0 and agent["transcriptsAdded"] == 0  # all there already: kept
    assert json.loads(again.stdout)["runs"]["added"] == 0
    assert json.loads(again.stdout)["cron"] == {"jobs": 1, "added": 0, "history": 0}
    assert {c["added"] for c in json.loads(again.stdout)["channels"].values()} == {0}
    assert json.loads(again.stdout)["memory"] == {"main": {"vectors": 3, "added": 0}}
    assert json.loads(again.stdout)["execApprovals"] == {"patterns": 1, "added": False}
    assert {c["added"] for c in json.loads(again.stdout)["devices"].values()} == {0}
    assert json.loads(again.stdout)["usage"] == {"found": 1, "added": 0}

    _config(state, pg_url, backend="postgres")
    (state / "agents").rename(tmp_path / "moved-away")  # what follows can only come from the database
    listed = run_cli(env, "sessions", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert sorted(r["key"] for r in json.loads(listed.stdout)) == ["agent:main:chat-2", "agent:main:main"]
    shown = run_cli(env, "sessions", "show", "main", "--json")
    assert [m["role"] for m in json.loads(shown.stdout)["messages"]] == ["user", "assistant"]
    (state / "channels.sqlite").rename(tmp_path / "channels-moved-away.sqlite")
    pending = run_cli(env, "pairing", "list", "--json")  # no gateway: read from the database
    assert pending.returncode == 0, pending.stderr
    assert [r["senderId"] for r in json.loads(pending.stdout)["requests"]] == ["43"]


async def test_a_gateway_on_the_database_continues_a_migrated_conversation(tmp_path: Path, pg_url: str) -> None:
    state = tmp_path / "state"
    _embedded_state(state)
    _config(state, pg_url)
    assert run_cli(scrubbed_env(state), "storage", "migrate", "--from", "embedded", "--to", "postgres").returncode == 0
    config = {"storage": {"backend": "postgres", "postgres": {"url": pg_url}}}
    with run_gateway(tmp_path / "fresh", config=config) as gw:
        c = await open_client(gw.url)
        assert (await c.handshake(TEST_TOKEN))["ok"]
        history = (await c.request("chat.history", {"sessionKey": "main"}))["payload"]
        assert [m["role"] for m in history["messages"]] == ["user", "assistant"]
        assert history["messages"][0]["content"] == "my name is Ada"
        chat = (await c.request("chat.history", {"sessionKey": "agent:main:chat-2"}))["payload"]
        assert chat["messages"][0]["content"] == "second chat"
        done = (await c.request("agent.wait", {"runId": "done-1", "timeoutMs": 1000}))["payload"]
        assert done["status"] == "ok"  # its idempotency key answers from the copied journal
        queued = (await c.request("agent.wait", {"runId": "queued-1", "timeoutMs": 10_000}, timeout=15))["payload"]
        assert queued["status"] in ("ok", "error")  # taken up by the restart's rules: it ended
        jobs = (await c.request("cron.list", {}))["payload"]["jobs"]
        assert [j["id"] for j in jobs] == ["nightly"]
        runs = (await c.request("cron.runs", {"id": "nightly", "limit": 10}))["payload"]
        copied = [e["runAtMs"] for e in runs["entries"] if e["runAtMs"] <= 120000]  # (it caught up since)
        assert copied == [120000, 60000], runs


def test_migrate_refuses_without_a_url_or_a_server(tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_config(state, json.dumps({"gateway": {"auth": {"token": TEST_TOKEN}}}))
    no_url = run_cli(scrubbed_env(state), "storage", "migrate", "--from", "embedded", "--to", "postgres")
    assert no_url.returncode == 1
    assert "cannot migrate: storage.postgres.url is not set" in no_url.stderr
    secret = "never-print-this-4471"
    _config(state, f"postgresql://homarus:{secret}@127.0.0.1:{free_port()}/assistant")
    away = run_cli(scrubbed_env(state), "storage", "migrate", "--from", "embedded", "--to", "postgres")
    assert away.returncode == 1
    assert "cannot migrate: PostgreSQL at 127.0.0.1:" in away.stderr and "/assistant is unavailable" in away.stderr
    assert secret not in away.stderr + away.stdout
    bad = run_cli(scrubbed_env(state), "storage", "migrate", "--from", "files", "--to", "postgres")
    assert bad.returncode == 2 and "invalid choice: 'files'" in bad.stderr


def test_doctor_checks_the_database(tmp_path: Path, pg_url: str) -> None:
    state = tmp_path / "state"
    _config(state, pg_url, backend="postgres")
    ok = run_cli(scrubbed_env(state), "doctor")
    assert "[ok  ] storage: PostgreSQL at 127.0.0.1:" in ok.stdout
    assert "schema up to date; sessions: main 0" in ok.stdout
    secret = "doctor-must-not-print-5512"
    _config(state, f"postgresql://homarus:{secret}@127.0.0.1:{free_port()}/assistant", backend="postgres")
    away = run_cli(scrubbed_env(state), "doctor")
    assert away.returncode == 1
    assert "[fail] storage: PostgreSQL at 127.0.0.1:" in away.stdout and "/assistant is unavailable" in away.stdout
    assert secret not in away.stdout + away.stderr
