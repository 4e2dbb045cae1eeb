"""Public webhooks, black-box over HTTP against a real gateway on loopback.

Every ``hooks`` row of the public red-team corpus runs as given (placeholders replaced), plus the
flows: an agent run with a transcript and a delivered reply, mappings with templates, presets and
transforms, idempotent replays, and a run accepted before a restart that still happens after it.
"""

from __future__ import annotations

import ast
import asyncio
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from homarus.gateway.http import common as http_common
from homarus.messages import Context
from homarus.providers.scripted import Reply, Responder, ScriptedProvider
from tests.conftest import TEST_TOKEN, RunningGateway, run_gateway

HOOK_TOKEN = "hook-secret-0123456789abcdef"
REDTEAM = Path(__file__).resolve().parents[3] / "shared/reference/redteam-public.jsonl"
AUTH = {"Authorization": f"Bearer {HOOK_TOKEN}"}


def _rows() -> list[dict[str, Any]]:
    if not REDTEAM.exists():
        return []
    rows = [json.loads(line) for line in REDTEAM.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if r.get("target") == "hooks"]


HOOK_ROWS = _rows()


def _config(**hooks: Any) -> dict[str, Any]:
    return {
        "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m"}]}}},
        "agents": {"defaults": {"model": {"primary": "test/m"}, "heartbeat": {"every": "0m"}}},
        "hooks": {"enabled": True, "token": HOOK_TOKEN, **hooks},
    }


@contextmanager
def _gateway(tmp_path: Path, replies: list[Reply] | None = None, **hooks: Any) -> Iterator[RunningGateway]:
    with run_gateway(tmp_path, config=_config(**hooks)) as gw:
        gw.gateway.models.overrides["test"] = ScriptedProvider(replies or [Reply("ok")] * 20)
        yield gw


def _row_config(text: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in (text or "").split():
        key, _, value = part.partition("=")
        out[key] = ast.literal_eval(value.replace("true", "True").replace("false", "False"))
    return out


async def _raw(port: int, head: str, body: bytes = b"", *, trickle: float = 0.0) -> tuple[int, str]:
    """One HTTP/1.1 request written by hand (declared lengths that lie, slow bodies)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head.encode())
    for byte in body:
        writer.write(bytes([byte]))
        await writer.drain()
        if trickle:
            await asyncio.sleep(trickle)
    await writer.drain()
    head_bytes = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20)
    status_line, _, header_text = head_bytes.decode(errors="replace").partition("\r\n")
    length = 0
    for line in header_text.split("\r\n"):
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    body_bytes = await asyncio.wait_for(reader.readexactly(length), 20)
    writer.close()
    return int(status_line.split()[1]), body_bytes.decode(errors="replace")


@pytest.mark.skipif(not HOOK_ROWS, reason="red-team corpus absent")
@pytest.mark.parametrize("row", HOOK_ROWS, ids=[r["id"] for r in HOOK_ROWS])
async def test_redteam_hooks_rows(row: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec, expect = row["input"], row["expect"]
    headers = {k: v.replace("<HOOK_TOKEN>", HOOK_TOKEN) for k, v in spec.get("headers", {}).items()}
    path = spec["path"].replace("<HOOK_TOKEN>", HOOK_TOKEN)
    with _gateway(tmp_path, **_row_config(spec.get("config"))) as gw:
        if "slow_body" in spec:
            monkeypatch.setattr(http_common, "BODY_TIMEOUT_S", 0.5)
            head = (
                f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {HOOK_TOKEN}\r\nContent-Length: 64\r\n\r\n"
            )
            status, text = await _raw(gw.port, head, b'{"message": "hi"' + b" " * 47, trickle=0.05)
        elif headers.get("Content-Length", "").isdigit() and "body" not in spec:
            head = f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {HOOK_TOKEN}\r\n"
            head += f"Content-Length: {headers['Content-Length']}\r\n\r\n"
            status, text = await _raw(gw.port, head)
        else:
            content = spec["raw_body"].encode() if "raw_body" in spec else None
            body = spec.get("body") if content is None else None
            async with httpx.AsyncClient(base_url=gw.http) as http:
                for _ in range(spec.get("repeat", 1)):
                    res = await http.request(spec["method"], path, headers=headers, json=body, content=content)
            status, text = res.status_code, res.text
    if "status" in expect:
        assert status == expect["status"], (status, text)
    else:  # "block" without a status: never a success, never a gateway API reached with the hook token
        assert status >= 400, (status, text)
    if "error" in expect:
        assert expect["error"] in text, text
    if expect.get("result") == "sanitize":
        assert status == 202


async def test_agent_hook_runs_with_transcript_and_delivery(tmp_path: Path) -> None:
    replies = [Reply("Deploy looks healthy."), Reply("noted")]
    with _gateway(tmp_path, replies) as gw:
        async with httpx.AsyncClient(base_url=gw.http) as http:
            res = await http.post("/hooks/agent", headers=AUTH, json={"message": "check deploy", "name": "CI"})
            assert res.status_code == 202 and res.json()["ok"] is True
            run_id = res.json()["runId"]
            replay = await http.post("/hooks/agent", headers=AUTH, json={"message": "x"})
            assert replay.json()["runId"] != run_id  # no idempotency key: a new run
        record = await _wait_for_run(gw, run_id)
        assert record.status == "ok" and record.session_key.startswith("agent:main:hook:")
        sessions = gw.paths.state_dir / "agents" / "main" / "sessions"
        transcript = "".join(p.read_text() for p in sessions.glob("*.jsonl"))
        assert "EXTERNAL_UNTRUSTED_CONTENT" in transcript and "check deploy" in transcript
        assert "Deploy looks healthy." in transcript
        provider = gw.gateway.models.overrides["test"]
        assert isinstance(provider, ScriptedProvider)

        def delivered() -> bool:  # the reply reached a main-session turn as a system event
            return any("Deploy looks healthy." in repr(r) and "Hook CI" in repr(r) for r in provider.requests)

        deadline = time.monotonic() + 15
        while not delivered() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert delivered()


async def test_wait_for_completion_answers_200_with_the_runs_completion(tmp_path: Path) -> None:
    def respond(context: Context) -> Reply:
        # by content, not by order: the delivery of one run wakes a main-session turn meanwhile
        last = str(context.messages[-1].content) if context.messages else ""
        return Reply("" if "stay quiet" in last else "All green.")

    with _gateway(tmp_path) as gw:
        gw.gateway.models.overrides["test"] = ScriptedProvider([Responder(respond)], then="repeat")
        async with httpx.AsyncClient(base_url=gw.http, timeout=30) as http:
            body = {"message": "check", "name": "CI", "waitForCompletion": True}
            done = await http.post("/hooks/agent", headers=AUTH, json=body)
            assert done.status_code == 200, done.text
            answer = done.json()
            assert answer["ok"] is True and answer["completion"]["status"] == "ok"
            assert answer["completion"]["replyDisposition"] == "visible"
            assert answer["completion"]["delivered"] is True and answer["completion"]["deliveryAttempted"] is True
            record = gw.gateway.journal.get(answer["runId"])
            assert record is not None and record.status == "ok"  # it had ended when the answer came
            quiet = await http.post(
                "/hooks/agent", headers=AUTH, json={**body, "message": "stay quiet", "deliver": False}
            )
            assert quiet.json()["completion"] == {"status": "ok", "replyDisposition": "empty"}
            # a retry of an accepted run waits for that run, and starts nothing new
            keyed = {**AUTH, "Idempotency-Key": "wait-1"}
            first = await http.post("/hooks/agent", headers=keyed, json={"message": "again", "deliver": False})
            assert first.status_code == 202
            retried = await http.post(
                "/hooks/agent", headers=keyed, json={**body, "message": "again", "deliver": False}
            )
            assert retried.status_code == 200 and retried.json()["runId"] == first.json()["runId"]
            assert retried.json()["completion"]["status"] == "ok"
            bad = await http.post("/hooks/agent", headers=AUTH, json={"message": "x", "waitForCompletion": "yes"})
            assert bad.status_code == 400 and bad.json() == {"ok": False, "error": "waitForCompletion must be boolean"}


async def _wait_for_run(gw: RunningGateway, run_id: str, seconds: float = 15.0) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        record = gw.gateway.journal.get(run_id)
        if record is not None and record.terminal:
            return record
        await asyncio.sleep(0.05)
    raise AssertionError(f"run {run_id} did not finish")


async def test_idempotency_and_wake(tmp_path: Path) -> None:
    with _gateway(tmp_path) as gw:
        async with httpx.AsyncClient(base_url=gw.http) as http:
            headers = {**AUTH, "Idempotency-Key": "delivery-1"}
            first = await http.post("/hooks/agent", headers=headers, json={"message": "a"})
            again = await http.post("/hooks/agent", headers=headers, json={"message": "a"})
            assert first.json()["runId"] == again.json()["runId"]
            by_body = await http.post(
                "/hooks/agent", headers=AUTH, json={"message": "a", "idempotencyKey": "delivery-1"}
            )
            assert by_body.json()["runId"] == first.json()["runId"]
            wake = await http.post("/hooks/wake", headers={"X-Homarus-Token": HOOK_TOKEN}, json={"text": "ping"})
            assert wake.status_code == 200 and wake.json() == {"ok": True, "mode": "now"}
            assert (await http.post("/hooks/wake", headers=AUTH, json={})).json() == {
                "ok": False,
                "error": "text required",
            }
            gateway_token = await http.post(
                "/hooks/wake", headers={"Authorization": f"Bearer {TEST_TOKEN}"}, json={"text": "x"}
            )
            assert gateway_token.status_code == 401  # the gateway token does not open hooks
            tools = await http.post("/tools/invoke", headers=AUTH, json={"tool": "current_time"})
            assert tools.status_code == 401  # and the hook token opens nothing else


async def test_mappings_templates_presets_transforms(tmp_path: Path) -> None:
    transforms = tmp_path / "transforms"
    transforms.mkdir()
    (transforms / "mail.py").write_text(
        "def transform(ctx):\n"
        "    if ctx['payload'].get('spam'):\n"
        "        return None\n"
        "    return {'message': 'Mail from ' + ctx['payload']['from'] + ': ' + ctx['headers'].get('x-subject', '')}\n"
    )
    (transforms / "boom.py").write_text("def transform(ctx):\n    raise RuntimeError('nope')\n")
    mappings = [
        {"match": {"path": "github"}, "preset": "github", "name": "GitHub"},
        {
            "match": {"path": "note"},
            "action": "wake",
            "textTemplate": "{{payload.title}} / {{items[1].v}} / {{__proto__}}",
        },
        {"match": {"path": "mail"}, "transform": {"module": "mail.py"}},
        {"match": {"path": "boom"}, "transform": {"module": "boom.py"}},
        {"match": {"path": "escape"}, "transform": {"module": "../outside.py"}},
        {"match": {"source": "monitor"}, "action": "ignore"},
        {"match": {"path": "empty"}, "messageTemplate": "{{missing.field}}"},
    ]
    (tmp_path / "outside.py").write_text("def transform(ctx):\n    return {'message': 'escaped'}\n")
    with _gateway(tmp_path / "gw", mappings=mappings, transformsDir=str(transforms)) as gw:
        async with httpx.AsyncClient(base_url=gw.http) as http:
            gh = await http.post(
                "/hooks/github",
                headers={**AUTH, "X-GitHub-Event": "pull_request"},
                json={
                    "action": "opened",
                    "repository": {"full_name": "acme/app"},
                    "sender": {"login": "dev"},
                    "pull_request": {"title": "Fix login", "html_url": "https://example.test/pr/1"},
                },
            )
            assert gh.status_code == 202, gh.text
            record = await _wait_for_run(gw, gh.json()["runId"])
            assert "GitHub pull_request (opened) in acme/app by dev" in record.params["message"]
            note = await http.post("/hooks/note", headers=AUTH, json={"title": "T", "items": [{}, {"v": 2}]})
            assert note.json() == {"ok": True, "mode": "now"}
            mail = await http.post("/hooks/mail", headers={**AUTH, "X-Subject": "Hi"}, json={"from": "ann"})
            record = await _wait_for_run(gw, mail.json()["runId"])
            assert "Mail from ann: Hi" in record.params["message"]
            assert (await http.post("/hooks/mail", headers=AUTH, json={"spam": True, "from": "x"})).status_code == 204
            boom = await http.post("/hooks/boom", headers=AUTH, json={})
            assert boom.status_code == 500 and boom.json() == {"ok": False, "error": "hook mapping failed"}
            assert (await http.post("/hooks/escape", headers=AUTH, json={})).status_code == 500
            assert (await http.post("/hooks/other", headers=AUTH, json={"source": "monitor"})).status_code == 204
            empty = await http.post("/hooks/empty", headers=AUTH, json={})
            assert empty.status_code == 400 and empty.json()["error"] == "hook mapping requires message"
            assert (await http.post("/hooks/unknown", headers=AUTH, json={})).status_code == 404
            assert (await http.post("/hooks/agent", headers=AUTH, content=b"\xff\xfe")).status_code == 400


async def test_accepted_run_happens_after_a_restart(tmp_path: Path) -> None:
    with _gateway(tmp_path) as gw:  # a 202 was answered, then the gateway stopped before the run started
        params = {"message": "survive", "sessionKey": "agent:main:hook:restart", "deliver": False, "path": "agent"}
        gw.gateway.journal.accept(
            "r-restart", "hook", params, session_key="agent:main:hook:restart", agent_id="main", lane="cron"
        )
    with _gateway(tmp_path) as gw:
        record = await _wait_for_run(gw, "r-restart")
        assert record.status == "ok"
        transcript = "".join(p.read_text() for p in (gw.paths.state_dir / "agents/main/sessions").glob("*.jsonl"))
        assert "survive" in transcript


def test_config_rules() -> None:
    from homarus.config.schema import HomarusConfig

    with pytest.raises(ValueError, match=r"needs hooks\.token"):
        HomarusConfig.model_validate({"hooks": {"enabled": True}})
    with pytest.raises(ValueError, match="at least 16"):
        HomarusConfig.model_validate({"hooks": {"token": "short"}})
    with pytest.raises(ValueError, match="must differ"):
        HomarusConfig.model_validate({"hooks": {"token": HOOK_TOKEN}, "gateway": {"auth": {"token": HOOK_TOKEN}}})
    with pytest.raises(ValueError, match="must be a path"):
        HomarusConfig.model_validate({"hooks": {"path": "/"}})
    with pytest.raises(ValueError, match="must include 'hook:'"):
        HomarusConfig.model_validate({"hooks": {"allowedSessionKeyPrefixes": ["cron:"]}})
