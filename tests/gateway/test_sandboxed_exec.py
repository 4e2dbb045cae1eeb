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


async def _run(tmp_path: Path, config: dict[str, Any], command: str) -> dict[str, Any]:
    with run_gateway(tmp_path, config=config) as gw:
        gw.gateway.models.overrides["test"] = ScriptedProvider(
            [Reply("", tool_calls=[("exec", {"command": command})]), Reply("done")]
        )
        c = await open_client(gw.url)
        assert (await c.handshake(TEST_TOKEN, caps=["tool-events"]))["ok"]
        await c.send({"type": "req", "id": "a", "method": "agent", "params": {"message": "go", "idempotencyKey": "k"}})
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


def _config(mode: str) -> dict[str, Any]:
    return {
        "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m"}]}}},
        "agents": {"defaults": {"model": {"primary": "test/m"}, "sandbox": {"mode": mode}}},
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
