"""commands.list (the owner's chat commands in the original's catalog shape) and users.list."""

from __future__ import annotations

from tests.conftest import TEST_TOKEN, RunningGateway
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
