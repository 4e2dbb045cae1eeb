"""Tool policy from the config file reaches the run: what the model is offered per session."""

from __future__ import annotations

from pathlib import Path

from homarus.providers.scripted import Reply, ScriptedProvider
from tests.conftest import TEST_TOKEN, run_gateway
from tests.wsclient import open_client


async def test_config_policy_shapes_the_model_tool_list(tmp_path: Path) -> None:
    config = {
        "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m"}]}}},
        "agents": {
            "defaults": {"model": {"primary": "test/m"}},
            "list": [{"id": "main", "default": True, "tools": {"byProvider": {"test": {"deny": ["current_time"]}}}}],
        },
        "tools": {"profile": "coding", "deny": ["exec"], "alsoAllow": ["web_fetch"]},
    }
    with run_gateway(tmp_path, config=config) as gw:
        provider = ScriptedProvider([Reply("ok")])
        gw.gateway.models.overrides["test"] = provider
        c = await open_client(gw.url)
        assert (await c.handshake(TEST_TOKEN))["ok"]
        await c.send({"type": "req", "id": "a", "method": "agent", "params": {"message": "hi", "idempotencyKey": "k"}})
        await c.response("a")
        assert (await c.response("a", timeout=15))["ok"]
        offered = {t.name for t in provider.requests[0].tools}
        assert {"read", "write", "apply_patch", "web_fetch", "sessions_list"} <= offered
        assert not ({"exec", "current_time", "web_search", "cron"} & offered)
        effective = (await c.request("tools.effective", {"sessionKey": "main"}))["payload"]
        reasons = {m["id"]: m["reason"] for m in effective["missing"]}
        assert reasons["exec"] == "tools denies it" and effective["profile"] == "coding"
