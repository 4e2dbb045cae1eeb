"""A chat channel across two real gateway processes on one real PostgreSQL: a burst of 50 Telegram
messages from 10 chats, the gateway running the channels killed with SIGKILL twice in the middle
of it (each time the other takes the channels over once the dead one's ttl has passed, and the dead
one comes back as a standby), and every message answered exactly once, in order per chat: the
shared inbox, cursor and outbox let the new holder go on where the dead one stopped, and the runs
it left are taken over by the survivors and answered through the same outbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from tests.channels.crash_burst import burst_killed_twice, echo_slowly
from tests.channels.telegram.test_crash import CHATS, telegram_config
from tests.fakes import run_fake_llm
from tests.fakes.telegram_server import run_fake_telegram
from tests.gateway.crash_harness import Crashable, crashable
from tests.storage.test_failover import TTL_S
from tests.waiting import wait_for


def _holder_pid(url: str, role: str) -> int | None:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT member_id FROM cluster_roles WHERE role = %s AND expires_at > now()", (role,)
        ).fetchone()
    return int(row[0].rsplit("-", 2)[1]) if row else None


class HolderKiller:
    """What the burst kills and starts again: whichever gateway runs the channels now."""

    def __init__(self, url: str, gateways: list[Crashable]) -> None:
        self.url = url
        self.gateways = gateways
        self.killed: list[Crashable] = []

    def kill9(self) -> None:
        pid = _holder_pid(self.url, "channels")
        victim = next(gw for gw in self.gateways if gw.gw is not None and gw.proc.proc.pid == pid)
        victim.kill9()
        self.killed.append(victim)

    def start(self) -> Any:
        return self.killed[-1].start()  # back as a standby: the other holds the channels now


async def test_a_burst_across_a_cluster_killed_twice_gets_exactly_one_answer_each(tmp_path: Path, pg_url: str) -> None:
    with run_fake_llm() as llm, run_fake_telegram() as fake:
        echo_slowly(llm)
        cfg = telegram_config(llm.base_url, fake)
        cfg["storage"] = {"backend": "postgres", "postgres": {"url": pg_url, "memberTtlSeconds": TTL_S}}
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        with crashable(tmp_path / "a", cfg) as a, crashable(tmp_path / "b", cfg) as b:
            a.start()
            b.start()
            await wait_for(lambda: _holder_pid(pg_url, "channels") is not None, what="a channels holder", timeout=20)
            killer = HolderKiller(pg_url, [a, b])
            await burst_killed_twice(
                killer,  # type: ignore[arg-type]
                [str(chat) for chat in CHATS],
                lambda chat, text: fake.user_message(int(chat), text),
                lambda: [(m.chat_id, m.text) for m in list(fake.sent)],
            )
            assert fake.pending_updates == 0  # every update was acknowledged
            assert len(killer.killed) == 2  # the holder at each kill (the one restarted may win the role again)
            with psycopg.connect(pg_url) as conn:
                runs = conn.execute("SELECT status, count(*) FROM runs WHERE kind = 'channel' GROUP BY status")
                assert dict(runs.fetchall()) == {"ok": 50}
                inbound = conn.execute("SELECT status, count(*) FROM inbound GROUP BY status").fetchall()
                assert dict(inbound) == {"dispatched": 50}
            for gw in (a, b):  # the embedded channel store was never written: it is all shared
                assert not (gw.state / "channels.sqlite").exists()
