"""PostgreSQL going away under a running gateway that holds the chat channels and the cron timer,
then coming back: messages sent meanwhile are answered exactly once when it returns (the platform
kept them: nothing was acknowledged that was not committed), and the gateway recovers by itself."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from tests.channels.crash_burst import echo_slowly
from tests.channels.telegram.test_crash import telegram_config
from tests.conftest import run_gateway
from tests.fakes import run_fake_llm
from tests.fakes.telegram_server import run_fake_telegram
from tests.pg_cluster import pg_cluster
from tests.waiting import wait_for


async def test_messages_sent_while_the_database_is_away_are_answered_once_when_it_returns(tmp_path: Path) -> None:
    with pg_cluster() as own, run_fake_llm() as llm, run_fake_telegram() as fake:  # own server: stopped here
        echo_slowly(llm)
        cfg = telegram_config(llm.base_url, fake)
        cfg["storage"] = {"backend": "postgres", "postgres": {"url": own.url(), "connectTimeoutSeconds": 1}}
        with run_gateway(tmp_path / "gw", config=cfg) as gw:

            def answered() -> Counter[str]:
                return Counter(m.text for m in list(fake.sent) if m.text.startswith("msg-"))

            await wait_for(lambda: gw.gateway.built("channels") and gw.gateway.channels.started, what="channels")
            fake.user_message(1000, "msg-before")
            await wait_for(lambda: answered()["msg-before"] == 1, what="the first answer", timeout=20)
            own.stop("immediate")
            for i in range(4):
                fake.user_message(1001 + i, f"msg-away-{i}")
            await asyncio.sleep(2.0)
            assert answered() == Counter({"msg-before": 1})  # nothing committed: nothing answered yet
            own.start()
            expected = {"msg-before", *(f"msg-away-{i}" for i in range(4))}
            await wait_for(lambda: set(answered()) == expected, what="the answers after the return", timeout=40)
            await asyncio.sleep(1.0)
            assert all(n == 1 for n in answered().values()), answered()
            assert fake.pending_updates == 0
