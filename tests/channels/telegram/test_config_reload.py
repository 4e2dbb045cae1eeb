"""Channels follow the config while the gateway runs: adding Telegram through ``config.patch``
starts it, a changed setting restarts the account with it, removing it stops it; an account the
operator stopped stays stopped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from homarus.providers.scripted import ScriptedProvider
from tests.channels.operator import operator
from tests.channels.telegram.test_gateway_telegram import OWNER, config
from tests.conftest import run_gateway
from tests.fakes.telegram_server import FakeTelegram, run_fake_telegram
from tests.waiting import wait_for
from tests.wsclient import Client


async def patch(client: Client, change: dict[str, Any]) -> dict[str, Any]:
    current = (await client.request("config.get"))["payload"]
    answer = await client.request("config.patch", {"raw": json.dumps(change), "baseHash": current["hash"]})
    assert answer["ok"], answer
    payload: dict[str, Any] = answer["payload"]
    return payload


def polling(fake: FakeTelegram) -> int:
    return len(fake.method_calls("getMe"))


async def test_telegram_added_changed_and_removed_through_config_patch(tmp_path: Path) -> None:
    with run_fake_telegram() as fake:
        cfg = config(fake)
        telegram = cfg.pop("channels")
        with run_gateway(tmp_path, config=cfg) as gw:
            gw.gateway.models.overrides["test"] = ScriptedProvider(then="echo")
            assert not gw.gateway.built("channels")  # nothing configured, nothing built
            admin = await operator(gw)
            await patch(admin, {"channels": {"telegram": {**telegram["telegram"], "dmPolicy": "disabled"}}})
            await wait_for(lambda: polling(fake) == 1, what="the bot to start")
            fake.user_message(OWNER, "anyone there?")
            await wait_for(lambda: fake.pending_updates == 0, what="the update to be taken")

            await patch(admin, {"channels": {"telegram": {"dmPolicy": "allowlist", "allowFrom": [OWNER]}}})
            await wait_for(lambda: polling(fake) == 2, what="the account to restart with its new settings")
            fake.user_message(OWNER, "and now?")
            await wait_for(lambda: fake.texts_to(OWNER), what="an answer under the new policy")
            assert fake.texts_to(OWNER) == ["and now?"]  # the disabled-time message stayed unanswered

            await patch(admin, {"agents": {"defaults": {"retry": {"maxRetries": 2}}}})
            status = (await admin.request("channels.status"))["payload"]
            assert status["channelAccounts"]["telegram"][0]["running"] is True
            assert polling(fake) == 2  # an unrelated change leaves the account alone


async def test_an_account_the_operator_stopped_stays_stopped_and_a_removed_channel_stops(tmp_path: Path) -> None:
    with run_fake_telegram() as fake, run_gateway(tmp_path, config=config(fake)) as gw:
        admin = await operator(gw)
        await wait_for(lambda: polling(fake) == 1, what="the bot to start")
        assert (await admin.request("channels.stop", {"channel": "telegram"}))["ok"]
        await patch(admin, {"agents": {"defaults": {"retry": {"maxRetries": 1}}}})
        status = (await admin.request("channels.status"))["payload"]
        assert status["channelAccounts"]["telegram"][0]["running"] is False  # held by the operator
        assert polling(fake) == 1

        assert (await admin.request("channels.start", {"channel": "telegram"}))["ok"]
        assert polling(fake) == 2
        await patch(admin, {"channels": None})
        await wait_for(lambda: not gw.gateway.channels.manager.accounts, what="the removed channel's account to stop")
