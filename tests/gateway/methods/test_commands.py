"""commands.list (the owner's chat commands in the original's catalog shape) and users.list."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import TEST_TOKEN, RunningGateway, run_gateway
from tests.wsclient import open_client


async def test_commands_list_is_the_chat_command_table(gw: RunningGateway) -> None:
    c = await open_client(gw.url)
    assert (await c.handshake(TEST_TOKEN, ["operator.read"]))["ok"]
    commands = (await c.request("commands.list", {"includeArgs": True}))["payload"]["commands"]
    names = [x["name"] for x in commands]
    assert names[:3] == ["new", "reset", "status"] and {"model", "stop", "approve", "help"} <= set(names)
    model = next(x for x in commands if x["name"] == "model")
    assert model["textAliases"] == ["/model"] and model["acceptsArgs"] is True and model["scope"] == "text"
    assert model["args"][0]["type"] == "string" and model["source"] == "native"
    assert all(len(x["description"]) <= 200 for x in commands)
    assert (await c.request("commands.list", {"scope": "native"}))["payload"] == {"commands": []}
    bad = await c.request("commands.list", {"scope": "menu"})
    assert bad["ok"] is False and "scope" in bad["error"]["message"]
    assert (await c.request("users.list"))["payload"] == {"profiles": []}


async def test_hooks_status_lists_the_loaded_hooks_and_the_refused_ones(tmp_path: Path) -> None:
    from tests.plugins.test_hookmd import make_hook

    state = tmp_path / "state"
    make_hook(state, "greeter", events="[command:new, gateway:startup, custom:thing]")
    broken = state / "hooks" / "broken"
    broken.mkdir(parents=True)
    (broken / "HOOK.md").write_text("---\nname: broken\nevents: [command:new]\n---\n", encoding="utf-8")
    with run_gateway(tmp_path) as gw:
        c = await open_client(gw.url)
        assert (await c.handshake(TEST_TOKEN, ["operator.read"]))["ok"]
        status = (await c.request("hooks.status"))["payload"]
        assert status["managedHooksDir"] == str(state / "hooks")
        [hook] = status["hooks"]
        assert hook["name"] == "greeter" and hook["loadable"] is True and hook["source"] == "homarus-managed"
        assert hook["events"] == ["command:new", "gateway:startup", "custom:thing"]
        assert hook["unknownEvents"] == ["custom:thing"]
        assert any("missing handler.py" in d["message"] for d in status["diagnostics"])


async def test_audit_activity_lists_a_runs_start_tool_call_and_end(tmp_path: Path) -> None:
    from homarus.providers.scripted import Reply, ScriptedProvider

    config = {
        "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m", "contextWindow": 100000}]}}},
        "agents": {"defaults": {"model": {"primary": "test/m"}, "heartbeat": {"every": "0m"}}},
    }
    with run_gateway(tmp_path, config=config) as gw:
        gw.gateway.models.overrides["test"] = ScriptedProvider(
            [Reply(tool_calls=[("current_time", {"timezone": "UTC"})]), Reply("done")]
        )
        c = await open_client(gw.url)
        assert (await c.handshake(TEST_TOKEN))["ok"]
        assert (await c.request("agent", {"message": "time?", "idempotencyKey": "a-1"}))["ok"]
        assert (await c.request("agent.wait", {"runId": "a-1", "timeoutMs": 10000}, timeout=15))["payload"]["status"]
        listed = (await c.request("audit.activity.list", {"runId": "a-1"}))["payload"]["events"]
        assert [(e["action"], e["status"]) for e in listed] == [
            ("agent.run.finished", "succeeded"),
            ("tool.action.finished", "succeeded"),
            ("agent.run.started", "started"),
        ]
        assert listed[1]["toolName"] == "current_time" and listed[0]["sessionKey"] == "agent:main:main"
        bad = await c.request("audit.activity.list", {"kind": "tool_action", "channel": "telegram"})
        assert bad["error"]["message"] == "invalid audit.activity.list filters: channel only applies to kind message"
        assert (await c.request("audit.activity.list", {"kind": "message"}))["payload"] == {"events": []}
        bad = await c.request("audit.activity.list", {"cursor": "abc"})
        assert bad["error"]["message"] == "invalid audit.activity.list range or cursor"
