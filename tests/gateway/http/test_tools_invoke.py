"""`POST /tools/invoke`: auth, body, policy + HTTP deny list, hooks, and the public red-team rows."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from homarus.plugins import events as ev
from homarus.plugins.runner import HookRegistration
from tests.conftest import TEST_TOKEN, run_gateway

REDTEAM = Path(__file__).resolve().parents[3] / "shared" / "reference" / "redteam-public.jsonl"
AUTH = {"Authorization": f"Bearer {TEST_TOKEN}"}


def _rows() -> list[dict[str, Any]]:
    if not REDTEAM.exists():
        return []
    rows = [json.loads(line) for line in REDTEAM.read_text().splitlines() if line.strip()]
    return [r for r in rows if r["target"] == "tools_invoke"]


@pytest.mark.parametrize("row", _rows(), ids=lambda r: str(r["id"]))
async def test_redteam_row(tmp_path: Path, row: dict[str, Any]) -> None:
    spec = row["input"]
    expect = row["expect"]
    with run_gateway(tmp_path) as gw:
        headers = {
            k: v.replace("<GW_TOKEN>", TEST_TOKEN).replace("<HOOK_TOKEN>", "hook-token-not-the-gateway")
            for k, v in (spec.get("headers") or {}).items()
        }
        async with httpx.AsyncClient(base_url=gw.http) as http:
            kwargs: dict[str, Any] = {"headers": headers}
            if "raw_body" in spec:
                kwargs["content"] = spec["raw_body"]
            elif "body" in spec:
                kwargs["json"] = spec["body"]
            response = None
            for _ in range(int(spec.get("repeat", 1))):
                response = await http.request(spec.get("method", "POST"), spec["path"], **kwargs)
            if spec.get("repeat"):  # the next attempt, even with the right token, is locked out
                response = await http.post(spec["path"], headers=AUTH, json=spec.get("body"))
            assert response is not None
            assert response.status_code == expect["status"], response.text
            if expect["status"] == 429:
                assert "retry-after" in response.headers
            elif expect.get("error"):
                assert expect["error"].lower() in response.text.lower()


async def test_allowed_tool_runs_and_hooks_fire_once(tmp_path: Path) -> None:
    with run_gateway(tmp_path) as gw:
        counts: Counter[str] = Counter()
        for hook in ("before_tool_call", "after_tool_call"):
            gw.gateway.hooks.add(HookRegistration("counter", hook, lambda e, c, hook=hook: counts.update([hook])))
        async with httpx.AsyncClient(base_url=gw.http) as http:
            res = await http.post(
                "/tools/invoke", headers=AUTH, json={"tool": "current_time", "args": {"timezone": "UTC"}}
            )
            assert res.status_code == 200, res.text
            body = res.json()
            assert body["ok"] is True and "UTC" in body["result"]["content"][0]["text"]
            import asyncio

            await asyncio.sleep(0.1)  # after_tool_call runs in the background
            assert counts == {"before_tool_call": 1, "after_tool_call": 1}


async def test_bad_arguments_blocked_calls_and_dry_run(tmp_path: Path) -> None:
    with run_gateway(tmp_path) as gw:
        gw.gateway.hooks.add(
            HookRegistration(
                "guard",
                "before_tool_call",
                lambda e, c: (
                    ev.BeforeToolCallResult(block=True, block_reason="not today")
                    if e.tool_name == "session_status"
                    else None
                ),
            )
        )
        async with httpx.AsyncClient(base_url=gw.http) as http:
            bad = await http.post("/tools/invoke", headers=AUTH, json={"tool": "current_time", "args": {"tz": 1}})
            assert bad.status_code == 400 and bad.json()["error"]["type"] == "tool_error"
            blocked = await http.post("/tools/invoke", headers=AUTH, json={"tool": "session_status"})
            assert blocked.status_code == 403
            assert blocked.json()["error"] == {"type": "tool_call_blocked", "message": "not today"}
            dry = await http.post("/tools/invoke", headers=AUTH, json={"tool": "current_time", "dryRun": True})
            assert dry.json()["result"]["dryRun"] is True
            missing = await http.post("/tools/invoke", headers=AUTH, json={"args": {}})
            assert (
                missing.status_code == 400 and missing.json()["error"]["message"] == "tools.invoke requires body.tool"
            )
            get = await http.get("/tools/invoke")
            assert get.status_code == 405 and get.headers["allow"] == "POST"
            huge = await http.post("/tools/invoke", headers=AUTH, content=b"{" + b" " * (2 * 1024 * 1024 + 10))
            assert huge.status_code == 413
            listed = await http.post("/tools/invoke", headers=AUTH, json={"tool": "sessions_list"})
            assert listed.status_code == 200


async def test_gateway_tools_config_adjusts_the_http_deny_list(tmp_path: Path) -> None:
    config = {"gateway": {"tools": {"deny": ["current_time"], "allow": ["sessions_send"]}}}
    with run_gateway(tmp_path, config=config) as gw:
        async with httpx.AsyncClient(base_url=gw.http) as http:
            res = await http.post("/tools/invoke", headers=AUTH, json={"tool": "current_time"})
            assert res.status_code == 404 and res.json()["error"]["message"] == "Tool not available: current_time"


async def test_every_http_tool_call_is_in_the_audit_trail(tmp_path: Path) -> None:
    from homarus.audit.log import read_records

    with run_gateway(tmp_path) as gw:
        gw.gateway.hooks.add(
            HookRegistration(
                "guard",
                "before_tool_call",
                lambda e, c: (
                    ev.BeforeToolCallResult(block=True, block_reason="no") if e.tool_name == "session_status" else None
                ),
            )
        )
        async with httpx.AsyncClient(base_url=gw.http, headers={"user-agent": "audit-test/1"}) as http:
            ok = await http.post(
                "/tools/invoke", headers=AUTH, json={"tool": "current_time", "args": {"timezone": "UTC"}}
            )
            assert ok.status_code == 200
            await http.post("/tools/invoke", headers=AUTH, json={"tool": "current_time", "args": {"tz": 1}})
            await http.post("/tools/invoke", headers=AUTH, json={"tool": "session_status"})
            await http.post("/tools/invoke", headers=AUTH, json={"tool": "exec", "args": {"command": "id"}})
            secret = {"timezone": "UTC", "apiKey": "sk-abcdefghijklmnopqrstuvwxyz"}
            await http.post("/tools/invoke", headers=AUTH, json={"tool": "current_time", "args": secret})
            unauthenticated = await http.post("/tools/invoke", json={"tool": "current_time"})
            assert unauthenticated.status_code == 401
        records = read_records(gw.paths.state_dir / "logs", limit=100).records
    calls = [r for r in records if r["type"] == "tool.call"]
    starts = {r["runId"]: r for r in records if r["type"] == "run.start"}
    assert [(c["tool"], c["decision"], c["status"]) for c in calls] == [
        ("current_time", "allowed", "ok"),
        ("current_time", "allowed", "error"),
        ("session_status", "blocked:hook", "error"),
        ("exec", "blocked:policy", "error"),
        ("current_time", "allowed", "error"),  # apiKey is not an argument of current_time
    ]
    first = starts[calls[0]["runId"]]
    assert first["trigger"] == "http" and first["origin"]["ip"] == "127.0.0.1"
    assert first["origin"]["userAgent"] == "audit-test/1"
    assert calls[0]["args"] == {"timezone": "UTC"} and isinstance(calls[0]["durationMs"], int)
    assert calls[4]["args"]["apiKey"] == "[redacted]"
    assert "sk-abcdefghijklmnop" not in json.dumps(records)
    ends = [r for r in records if r["type"] == "run.end"]
    assert len(ends) == 5  # the unauthenticated call left no trace beyond its 401
