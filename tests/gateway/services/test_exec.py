"""With `agents.defaults.sandbox.mode: all`, a model's `exec` runs confined in bubblewrap."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from homarus.providers.scripted import Reply, ScriptedProvider
from tests.conftest import TEST_TOKEN, run_gateway
from tests.wsclient import open_client

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


async def _run(
    tmp_path: Path,
    config: dict[str, Any],
    command: str,
    session_key: str | None = None,
    tool: tuple[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    with run_gateway(tmp_path, config=config) as gw:
        gw.gateway.models.overrides["test"] = ScriptedProvider(
            [Reply("", tool_calls=[tool or ("exec", {"command": command})]), Reply("done")]
        )
        c = await open_client(gw.url)
        assert (await c.handshake(TEST_TOKEN, caps=["tool-events"]))["ok"]
        params = {"message": "go", "idempotencyKey": "k", **({"sessionKey": session_key} if session_key else {})}
        await c.send({"type": "req", "id": "a", "method": "agent", "params": params})
        await c.response("a")
        assert (await c.response("a", timeout=30))["ok"]
        results = [
            e["payload"]["data"]
            for e in c.events
            if e["event"] == "agent" and e["payload"]["stream"] == "tool" and e["payload"]["data"]["phase"] == "result"
        ]
        assert (await c.request("health"))["ok"]
        first: dict[str, Any] = results[0]
        return first


def _config(mode: str, **sandbox: Any) -> dict[str, Any]:
    return {
        "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m"}]}}},
        "agents": {"defaults": {"model": {"primary": "test/m"}, "sandbox": {"mode": mode, **sandbox}}},
    }


async def test_exec_runs_confined_when_sandboxing_is_on(tmp_path: Path) -> None:
    secret = tmp_path / "state" / "secret.txt"
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text("top secret")
    command = (
        f"id -u; cat /etc/shadow 2>&1 | head -1; cat {secret} 2>&1 | head -1; "
        "echo ok > /workspace/out.txt && echo wrote"
    )
    result = await _run(tmp_path, _config("all"), command)
    text = result["result"]
    assert "65534" in text
    assert "top secret" not in text and "root:" not in text
    assert "wrote" in text
    assert json.dumps(result).count("top secret") == 0


async def test_exec_stays_off_without_sandbox_by_default(tmp_path: Path) -> None:
    result = await _run(tmp_path, _config("off"), "id -u")
    assert result["isError"] is True and "exec is disabled" in result["result"]


async def test_non_main_confines_other_sessions_only(tmp_path: Path) -> None:
    main = await _run(tmp_path / "a", _config("non-main"), "id -u")
    assert main["isError"] is True and "exec is disabled" in main["result"]  # host policy: deny
    group = await _run(tmp_path / "b", _config("non-main"), "id -u; pwd", session_key="agent:main:group:g1")
    assert group["isError"] is False and "65534" in group["result"] and "/workspace" in group["result"]


async def test_read_only_access_refuses_file_writes(tmp_path: Path) -> None:
    write = ("write", {"path": "/workspace/x.txt", "content": "x"})
    result = await _run(tmp_path, _config("all", workspaceAccess="ro"), "", tool=write)
    assert result["isError"] is True and "workspaceAccess is ro" in result["result"]
    assert not list(tmp_path.rglob("x.txt"))
