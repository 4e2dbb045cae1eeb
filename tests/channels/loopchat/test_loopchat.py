"""A channel is a plugin all the way: ``loopchat`` (this folder: its manifest, its plugin, its
platform on loopback) brings its own config model, ``channels add`` flow, list and status fields,
alias and onboarding question, and runs through the same pipeline as Telegram (access and pairing,
routing, the run, the outbox) with no line about it in a shared module."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from homarus.cli import onboard_cmd
from homarus.cli.onboard_cmd import Stop
from homarus.config import channel_registry
from homarus.providers.scripted import ScriptedProvider
from tests.channels.loopchat.cloud import Loopchat, run_loopchat
from tests.conftest import TEST_TOKEN, make_paths, run_gateway
from tests.gateway_process import json_out, run_cli, scrubbed_env, write_config
from tests.waiting import wait_for
from tests.wsclient import open_client

HERE = Path(__file__).resolve().parent
SRC = Path(__file__).resolve().parents[3] / "src" / "homarus"


@pytest.fixture(autouse=True)
def _schemas_of_this_test(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The plugin registers its config model for the process: not for the tests after this one."""
    monkeypatch.setattr(channel_registry, "_REGISTERED", dict(channel_registry.registered()))
    yield


def config(cloud: Loopchat, **loopchat: Any) -> dict[str, Any]:
    return {
        "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m", "contextWindow": 100000}]}}},
        "agents": {"defaults": {"model": {"primary": "test/m"}, "heartbeat": {"every": "0m"}}},
        "plugins": {"load": {"paths": [str(HERE)]}},
        "channels": {"loopchat": {"token": cloud.token, "apiRoot": cloud.api_root, **loopchat}},
        "messages": {"inbound": {"debounceMs": 0}},
        "commands": {"ownerAllowFrom": ["loopchat:ada"]},
    }


async def test_a_channel_in_one_folder_answers_pairs_and_reports_its_own_fields(tmp_path: Path) -> None:
    with run_loopchat() as cloud, run_gateway(tmp_path, config=config(cloud, allowFrom=["ada"])) as gw:
        gw.gateway.models.overrides["test"] = ScriptedProvider(then="echo")
        cloud.user_says("ada", "hello there", name="Ada")
        await wait_for(lambda: cloud.texts_to("ada"), timeout=20, what="the answer to the owner")
        assert "hello there" in cloud.texts_to("ada")[0]  # the echo model: the run saw the message
        cloud.user_says("eve", "let me in")
        await wait_for(lambda: cloud.texts_to("eve"), timeout=20, what="the stranger's pairing code")
        assert "Pairing code: " in cloud.texts_to("eve")[0] and "loopchat" in cloud.texts_to("eve")[0]

        client = await open_client(gw.url)
        assert (await client.handshake(TEST_TOKEN, scopes=["operator.admin"]))["ok"]
        status = (await client.request("channels.status"))["payload"]
        row = status["channelAccounts"]["loopchat"][0]
        assert row["running"] and row["tokenSource"] == "config" and row["identity"] == "@loopbot"
        assert cloud.token not in json.dumps(status)
        sent = await client.request("send", {"to": "lc:ada", "message": "by alias", "idempotencyKey": "k1"})
        assert sent["ok"], sent
        assert "by alias" in cloud.texts_to("ada")

        # its config model checks its own fields, once the plugin has registered it
        current = (await client.request("config.get"))["payload"]
        bad = {"channels": {"loopchat": {"apiRoot": "http://example.com"}}}
        refused = await client.request("config.patch", {"raw": json.dumps(bad), "baseHash": current["hash"]})
        assert not refused["ok"] and "apiRoot" in refused["error"]["message"]
        after = (await client.request("config.get"))["payload"]
        assert after["hash"] == current["hash"]  # nothing was written


def test_channels_add_list_and_onboard_use_the_plugins_setup(tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_config(state, json.dumps({"plugins": {"load": {"paths": [str(HERE)]}}}))
    env = scrubbed_env(state)
    with run_loopchat() as cloud:
        available = json_out(run_cli(env, "channels", "list", "--available", "--json"))["available"]
        assert {"channel": "loopchat", "label": "Loopchat", "setup": True} in available
        wrong = run_cli(env, "channels", "add", "loopchat", "--token", "nope", "--api-root", cloud.api_root)
        assert wrong.returncode == 2 and "Loopchat refused the token (401)" in wrong.stderr
        assert "channels" not in json.loads((state / "homarus.json").read_text())
        added = run_cli(env, "channels", "add", "loopchat", "--token", cloud.token, "--api-root", cloud.api_root)
        assert added.returncode == 0, added.stderr
        assert "loopchat added (@loopbot)" in added.stdout and "a stranger gets a pairing code" in added.stdout
        written = json.loads((state / "homarus.json").read_text())["channels"]["loopchat"]
        assert written["token"] == cloud.token and written["apiRoot"] == cloud.api_root
        listed = json_out(run_cli(env, "channels", "list", "--json"))["channels"]
        assert [(r["channel"], r["mode"], r["token"]) for r in listed] == [("loopchat", "poll", "config")]


def test_onboarding_offers_the_channel_with_its_own_question(tmp_path: Path) -> None:
    paths = make_paths(tmp_path, {"plugins": {"load": {"paths": [str(HERE)]}}})
    asked: list[str] = []
    wanted: list[str] = []

    class Person:
        def yes(self, question: str, default: bool = False) -> bool:
            asked.append(question)
            return question in wanted

        def secret(self, question: str) -> str:
            asked.append(question)
            return "some-token"

    args = argparse.Namespace(no_channel=False, channel=None, channel_token=None)
    assert onboard_cmd._channel(args, paths, Person(), interactive=True) is None  # type: ignore[arg-type]
    assert asked == [
        "Add a Discord bot now (a token from the Developer Portal)?",
        "Add a Loopchat account now?",
        "Add a Slack app now (a bot token and an app-level token)?",
        "Add a Telegram bot now (a token from @BotFather)?",
        "Add a WhatsApp Business number now (Cloud API: a token, the number's id, the app secret)?",
    ]
    asked.clear()
    wanted.append("Add a Loopchat account now?")
    with pytest.raises(Stop, match=r"^Loopchat: could not reach Loopchat"):  # no API root to check it at
        onboard_cmd._channel(args, paths, Person(), interactive=True)  # type: ignore[arg-type]
    assert asked == [
        "Add a Discord bot now (a token from the Developer Portal)?",
        "Add a Loopchat account now?",
        "Loopchat token",
    ]
    args = argparse.Namespace(no_channel=False, channel="nochannel", channel_token="x")
    with pytest.raises(Stop, match=r"onboarding sets up .*loopchat"):
        onboard_cmd._channel(args, paths, Person(), interactive=False)  # type: ignore[arg-type]


def test_no_shared_module_names_the_channel() -> None:
    """The registration (``plugins.load.paths``) is the only line it needs outside this folder."""
    named = [p for p in SRC.rglob("*.py") if "loopchat" in p.read_text(encoding="utf-8")]
    assert named == []
