"""Post-hello behaviour over a real socket: dispatch, scopes, bad frames, limits, events."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from websockets.exceptions import ConnectionClosed

from homarus.gateway.app import GatewayOptions
from tests.conftest import TEST_TOKEN, RunningGateway, run_gateway
from tests.wsclient import Client, open_client


async def _connected(gw: RunningGateway, scopes: list[str] | None = None, **overrides: object) -> Client:
    client = await open_client(gw.url)
    res = await client.handshake(gw.token, scopes, **overrides)
    assert res["ok"], res
    return client


async def test_read_scope_gets_status_but_not_admin_methods(gw: RunningGateway) -> None:
    client = await _connected(gw, ["operator.read"])
    assert (await client.request("status"))["ok"]
    res = await client.request("config.set", {"raw": "{}"})
    assert res["error"] == {
        "code": "INVALID_REQUEST",
        "message": "missing scope: operator.admin",
        "details": {"code": "MISSING_SCOPE", "missingScope": "operator.admin", "requiredScopes": ["operator.admin"]},
    }
    assert "gateway" not in (await client.request("status"))["payload"]  # admin-only section


async def test_no_scopes_only_health(gw: RunningGateway) -> None:
    client = await _connected(gw, [])
    assert (await client.request("health"))["ok"]
    res = await client.request("status")
    assert res["error"]["message"] == "missing scope: operator.read"


async def test_a_probe_without_a_device_gets_no_scopes_even_locally(gw: RunningGateway) -> None:
    """The original CLI's reachability probe (client.mode "probe") learns that the gateway
    answers, and nothing else: the original grants it no scopes either."""
    probe_client = {"id": "cli", "version": "2026.9.6", "platform": "linux", "mode": "probe"}
    client = await open_client(gw.url)
    hello = await client.handshake(gw.token, ["operator.read"], maxProtocol=4, client=probe_client)
    assert hello["ok"] and hello["payload"]["auth"]["scopes"] == []
    assert (await client.request("health"))["ok"]
    for method in ("system-presence", "status", "config.get"):
        res = await client.request(method)
        assert res["error"]["details"]["code"] == "MISSING_SCOPE", (method, res)
    cli = await _connected(gw, ["operator.read"], client={**probe_client, "mode": "cli"})
    assert (await cli.request("status"))["ok"]


async def test_write_scope_satisfies_read(gw: RunningGateway) -> None:
    client = await _connected(gw, ["operator.write"])
    assert (await client.request("system-presence"))["ok"]


async def test_unknown_method_admin_vs_non_admin(gw: RunningGateway) -> None:
    admin = await _connected(gw)
    assert (await admin.request("no.such"))["error"]["message"] == "unknown method: no.such"
    reader = await _connected(gw, ["operator.read"])
    assert (await reader.request("no.such"))["error"]["message"] == "missing scope: operator.admin"


async def test_unknown_scope_strings_are_not_granted(gw: RunningGateway) -> None:
    client = await _connected(gw, ["operator.superuser", "operator.read"])
    assert client.hello is not None
    assert (await client.request("config.set", {"raw": "{}"}))["error"]["message"] == "missing scope: operator.admin"


async def test_bad_frames_after_hello_keep_the_socket(gw: RunningGateway) -> None:
    client = await _connected(gw)
    await client.send("{not json")
    res = await client.recv_res()
    assert res["type"] == "res" and res["id"] == "invalid" and res["ok"] is False
    assert res["error"]["message"].startswith("invalid request frame")
    await client.send({"type": "req", "id": "a1", "method": "health", "extra": 1})
    res = await client.recv_res()
    assert res["id"] == "a1"
    assert res["error"]["message"] == "invalid request frame: at root: unexpected property 'extra'"
    await client.send({"type": "event", "event": "x"})
    assert (await client.recv_res())["error"]["code"] == "INVALID_REQUEST"
    assert (await client.request("health"))["ok"]  # still serving


async def test_params_are_validated_strictly(gw: RunningGateway) -> None:
    client = await _connected(gw)
    res = await client.request("health", {"probe": "yes"})
    assert res["error"]["message"] == "invalid health params: at /probe: must be boolean"
    res = await client.request("status", {"verbose": True})
    assert res["error"]["message"] == "invalid status params: at root: unexpected property 'verbose'"
    res = await client.request("status", [1, 2])
    assert res["error"]["message"].startswith("invalid status params:")


async def test_second_connect_is_refused(gw: RunningGateway) -> None:
    admin = await _connected(gw)
    res = await admin.request("connect", {"minProtocol": 3})
    assert res["error"]["message"] == "connect is only valid as the first request"
    reader = await _connected(gw, ["operator.read"])
    assert (await reader.request("connect", {}))["error"]["message"] == "missing scope: operator.admin"


async def test_post_hello_frames_may_exceed_preauth_limit(gw: RunningGateway) -> None:
    client = await _connected(gw)
    res = await client.request("health", {"probe": True, "pad": "x" * 200_000})
    assert res["error"]["message"] == "invalid health params: at root: unexpected property 'pad'"


async def test_post_hello_oversize_frame_closes_1009_others_unaffected(gw: RunningGateway) -> None:
    bystander = await _connected(gw)
    client = await _connected(gw)
    with contextlib.suppress(ConnectionClosed):
        await client.send("x" * (25 * 1024 * 1024 + 1))
    code, _ = await client.close_info(timeout=10)
    assert code == 1009
    assert (await bystander.request("health"))["ok"]


async def test_concurrent_requests_all_answered(gw: RunningGateway) -> None:
    client = await _connected(gw)
    ids = [f"c{i}" for i in range(50)]
    for rid in ids:
        await client.send({"type": "req", "id": rid, "method": "health"})
    seen = set()
    for _ in ids:
        seen.add((await client.recv_res())["id"])
    assert seen == set(ids)


async def test_tick_events_carry_increasing_seq(tmp_path: Path) -> None:
    with run_gateway(tmp_path, options=GatewayOptions(tick_interval_s=0.05)) as running:
        client = await open_client(running.url)
        await client.handshake(TEST_TOKEN)
        assert client.hello is not None and client.hello["policy"]["tickIntervalMs"] == 50
        first = await client.event("tick")
        second = await client.event("tick")
        assert second["seq"] > first["seq"]
        assert isinstance(first["payload"]["ts"], int)


async def test_presence_tracks_clients_but_not_cli(gw: RunningGateway) -> None:
    watcher = await _connected(gw)
    ui = await _connected(gw, client={"id": "webchat-ui", "version": "2", "platform": "linux", "mode": "webchat"})
    own = await watcher.event("presence")  # its own arrival comes first
    event = await watcher.event("presence")
    assert event["stateVersion"]["presence"] == own["stateVersion"]["presence"] + 1
    assert event["seq"] > own["seq"]
    assert sorted(e["mode"] for e in event["payload"]["presence"]) == ["test", "webchat"]
    cli = await _connected(gw, client={"id": "cli", "version": "2", "platform": "linux", "mode": "cli"})
    listed = (await watcher.request("system-presence"))["payload"]
    assert all(e["mode"] != "cli" for e in listed)
    assert len(listed) == 2  # watcher (test mode) + ui
    await ui.ws.close()
    await cli.ws.close()


async def test_slow_consumer_closed_1008_but_droppable_events_only_dropped(tmp_path: Path) -> None:
    opts = GatewayOptions(max_buffered_bytes=2 * 1024 * 1024)
    with run_gateway(tmp_path, options=opts) as running:
        slow = await open_client(running.url, max_queue=1)  # stops reading: TCP backpressure
        assert (await slow.handshake(TEST_TOKEN))["ok"]
        fast_ws = await open_client(running.url)
        assert (await fast_ws.handshake(TEST_TOKEN))["ok"]
        received = 0

        async def drain() -> None:
            nonlocal received
            async for _ in fast_ws.ws:
                received += 1

        reader = asyncio.create_task(drain())
        blob = "y" * 50_000

        async def flood(droppable: bool) -> None:
            for _ in range(500):  # 25 MB: past the slow client's 2 MiB budget plus kernel buffers
                running.gateway.bus.broadcast("test.blob", {"b": blob}, droppable=droppable)
                await asyncio.sleep(0.002)

        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(flood(True), running.loop))
        slow_conn = [c for c in running.gateway.connections.values() if c.outbox.dropped > 0]
        assert len(slow_conn) == 1  # only the stalled client lost (droppable) frames
        assert len(running.gateway.connections) == 2  # dropping deltas never closes anyone
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(flood(False), running.loop))
        code, reason = await slow.close_info(timeout=10)
        assert (code, reason) == (1008, "slow consumer")
        assert len(running.gateway.connections) == 1  # the reading client is still served
        assert received > 500
        reader.cancel()


async def test_v4_client_gets_auth_block_and_forbidden_code(gw: RunningGateway) -> None:
    client = await _connected(gw, ["operator.read"], minProtocol=4, maxProtocol=4)
    assert client.hello is not None
    assert client.hello["protocol"] == 4
    assert client.hello["auth"] == {"method": "token", "role": "operator", "scopes": ["operator.read"]}
    res = await client.request("config.set", {"raw": "{}"})
    assert res["error"]["code"] == "FORBIDDEN"
    assert res["error"]["message"] == "missing scope: operator.admin"


async def test_node_role_cannot_call_operator_methods(gw: RunningGateway) -> None:
    node = await _connected(
        gw, role="node", client={"id": "node-host", "version": "1", "platform": "linux", "mode": "node"}
    )
    assert (await node.request("health"))["ok"]
    assert (await node.request("status"))["error"]["message"] == "unauthorized role: node"
    assert (await node.request("no.such"))["error"]["message"] == "unauthorized role: node"
