"""Paired devices shared by two gateways on one real PostgreSQL: a device paired through one
gateway connects to the other with its token, a pairing request made on one is approved on the
other, and a device removed on one loses its sockets on both. Nothing in either state directory."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from homarus.security.devices import CLUSTER_LOCK, MAX_PENDING_PER_IP, DeviceStore
from homarus.storage.blocking import BlockingDatabase
from homarus.storage.migrations import migrate_at
from homarus.storage.statements import PgStatements
from tests.conftest import TEST_TOKEN, run_gateway
from tests.gateway.ws.test_device_pairing import REMOTE, SCOPES, Phone, operator


def _config(url: str) -> dict[str, Any]:
    return {"storage": {"backend": "postgres", "postgres": {"url": url}}}


async def test_a_device_paired_on_one_gateway_is_known_to_the_other(tmp_path: Path, pg_url: str) -> None:
    with (
        run_gateway(tmp_path / "a", config=_config(pg_url)) as a,
        run_gateway(tmp_path / "b", config=_config(pg_url)) as b,
    ):
        for gw in (a, b):
            await gw.gateway.cluster.notices.listening.wait()  # type: ignore[union-attr]
        phone = Phone()
        _, first = await phone.connect(a, token=TEST_TOKEN)  # paired silently on a (local)
        token = first["payload"]["auth"]["deviceToken"]
        on_b, res = await phone.connect(b, device_token=token)
        assert res["ok"], res
        assert res["payload"]["auth"]["scopes"] == SCOPES

        # a remote tablet asks on b; an operator on a approves it; it then connects to b
        tablet, admin_a = Phone(), await operator(a)
        _, waiting = await tablet.connect(b, token=TEST_TOKEN, headers=REMOTE)
        request_id = waiting["error"]["details"]["requestId"]
        listed = (await admin_a.request("device.pair.list"))["payload"]
        assert [r["requestId"] for r in listed["pending"]] == [request_id]
        assert (await admin_a.request("device.pair.approve", {"requestId": request_id}))["ok"]
        _, paired = await tablet.connect(b, token=TEST_TOKEN, headers=REMOTE)
        assert paired["ok"], paired
        again = await (await operator(b)).request("device.pair.approve", {"requestId": request_id})
        assert again["ok"] is False  # taken once, whichever gateway is asked

        # removed on a: its socket on b is closed too (4001), and its token admits nowhere
        removed = (await admin_a.request("device.pair.remove", {"deviceId": phone.id}))["payload"]
        assert removed["removed"] is True
        assert (await asyncio.wait_for(on_b.close_info(), 10))[0] == 4001
        for gw in (a, b):
            _, refused = await phone.connect(gw, device_token=token)
            assert refused["ok"] is False
            assert not (gw.paths.state_dir / "devices.sqlite").exists()


async def test_the_pending_limit_holds_across_gateways(pg_url: str) -> None:
    await migrate_at(pg_url)
    pools = [BlockingDatabase(pg_url, max_size=4) for _ in range(2)]
    try:
        stores = [DeviceStore(store=PgStatements(db, serialize=CLUSTER_LOCK)) for db in pools]

        def ask(i: int) -> bool:
            try:
                stores[i % 2].request(f"dev-{i}", "key", "operator", [], {}, "203.0.113.9")
            except Exception:
                return False
            return True

        granted = await asyncio.gather(*(asyncio.to_thread(ask, i) for i in range(12)))
        assert sum(granted) == MAX_PENDING_PER_IP  # never more, though two gateways asked at once
    finally:
        for db in pools:
            db.close()
