"""The connect handshake against a real uvicorn gateway, good and bad cases (§1.4 a-g, k)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus

from homarus.gateway.app import GatewayOptions
from tests.conftest import TEST_TOKEN, RunningGateway, run_gateway
from tests.wsclient import connect_params, open_client


async def test_challenge_then_hello_ok(gw: RunningGateway) -> None:
    client = await open_client(gw.url)
    challenge = await client.recv()
    assert challenge["type"] == "event" and challenge["event"] == "connect.challenge"
    assert "seq" not in challenge
    uuid.UUID(challenge["payload"]["nonce"])
    assert isinstance(challenge["payload"]["ts"], int)
    res = await client.request("connect", connect_params(TEST_TOKEN))
    assert res["ok"] is True
    hello = res["payload"]
    assert hello["type"] == "hello-ok"
    assert hello["protocol"] == 3
    assert set(hello["server"]) >= {"version", "connId"}
    assert {"health", "status", "system-presence", "config.get"} <= set(hello["features"]["methods"])
    assert "connect" not in hello["features"]["methods"]
    assert "tick" in hello["features"]["events"]
    assert hello["policy"] == {"maxPayload": 26_214_400, "maxBufferedBytes": 52_428_800, "tickIntervalMs": 30_000}
    snap = hello["snapshot"]
    assert snap["sessionDefaults"]["mainSessionKey"] == "agent:main:main"
    assert snap["stateVersion"]["presence"] >= 1
    health = await client.request("health")
    assert health["ok"] and health["payload"]["ok"] is True
    status = await client.request("status")
    assert status["ok"] and status["payload"]["runtimeVersion"]
    await client.ws.close()


async def test_wrong_token_is_refused_with_1008(gw: RunningGateway) -> None:
    client = await open_client(gw.url)
    res = await client.handshake("not-the-token-at-all")
    assert res["ok"] is False
    assert res["error"]["code"] == "INVALID_REQUEST"
    assert res["error"]["message"].startswith("unauthorized: gateway token mismatch")
    assert res["error"]["details"]["code"] == "AUTH_TOKEN_MISMATCH"
    assert TEST_TOKEN not in json.dumps(res)
    code, reason = await client.close_info()
    assert code == 1008
    assert reason.startswith("unauthorized")


async def test_missing_token(gw: RunningGateway) -> None:
    client = await open_client(gw.url)
    res = await client.handshake(None)
    assert res["error"]["details"]["code"] == "AUTH_TOKEN_MISSING"
    assert (await client.close_info())[0] == 1008


async def test_non_json_first_frame_closes_1000(gw: RunningGateway) -> None:
    client = await open_client(gw.url)
    await client.recv()
    await client.send("this is not json{")
    assert (await client.close_info())[0] == 1000


async def test_non_req_first_frame_closes_1008(gw: RunningGateway) -> None:
    client = await open_client(gw.url)
    await client.recv()
    await client.send({"type": "event", "event": "hello"})
    assert await client.close_info() == (1008, "invalid request frame")


async def test_first_request_must_be_connect(gw: RunningGateway) -> None:
    client = await open_client(gw.url)
    await client.recv()
    res = await client.request("health")
    assert res["ok"] is False
    assert res["error"]["message"] == "invalid handshake: first request must be connect"
    assert await client.close_info() == (1008, "invalid handshake: first request must be connect")


async def test_unknown_connect_field(gw: RunningGateway) -> None:
    client = await open_client(gw.url)
    res = await client.handshake(TEST_TOKEN, surprise=True)
    assert res["error"]["message"] == "invalid connect params: at root: unexpected property 'surprise'"
    code, reason = await client.close_info()
    assert code == 1008 and reason.startswith("invalid connect params")


async def test_protocol_mismatch_closes_1002(gw: RunningGateway) -> None:
    client = await open_client(gw.url)
    res = await client.handshake(TEST_TOKEN, minProtocol=1, maxProtocol=2)
    assert res["error"]["message"] == "protocol mismatch"
    assert res["error"]["details"] == {"expectedProtocol": 3}
    assert await client.close_info() == (1002, "protocol mismatch")


async def test_invalid_role(gw: RunningGateway) -> None:
    client = await open_client(gw.url)
    res = await client.handshake(TEST_TOKEN, role="root")
    assert res["error"]["message"] == "invalid role"
    assert (await client.close_info())[0] == 1008


async def test_preauth_oversize_frame_closes_1009(gw: RunningGateway) -> None:
    client = await open_client(gw.url)
    await client.recv()
    await client.send("x" * (64 * 1024 + 1))
    assert await client.close_info() == (1009, "preauth payload too large")


async def test_preauth_huge_frame_refused_by_transport(gw: RunningGateway) -> None:
    client = await open_client(gw.url)
    await client.recv()
    with contextlib.suppress(ConnectionClosed):  # the server may close while we still write
        await client.send("x" * (2 * 1024 * 1024))
    code, _ = await client.close_info()
    assert code == 1009


async def test_token_in_url_query_is_refused(gw: RunningGateway) -> None:
    with pytest.raises(InvalidStatus) as info:
        await open_client(f"{gw.url}/?token={TEST_TOKEN}")
    assert info.value.response.status_code == 400


async def test_handshake_timeout_closes_1000(tmp_path: Path) -> None:
    with run_gateway(tmp_path, options=GatewayOptions(handshake_timeout_s=0.3)) as running:
        client = await open_client(running.url)
        await client.recv()
        assert await client.close_info(timeout=3) == (1000, "handshake timeout")


async def test_bad_auth_flood_is_rate_limited_and_others_still_served(gw: RunningGateway) -> None:
    for _ in range(10):
        client = await open_client(gw.url)
        res = await client.handshake("wrong-token-guess-xx")
        assert res["error"]["details"]["code"] == "AUTH_TOKEN_MISMATCH"
        await client.close_info()
    # the 11th attempt from this address is refused at the upgrade, even with the right token
    with pytest.raises(InvalidStatus) as info:
        await open_client(gw.url)
    assert info.value.response.status_code == 429
    assert int(info.value.response.headers["retry-after"]) > 0
    # HTTP keeps serving while WS auth from this address is locked out
    import httpx

    async with httpx.AsyncClient() as http:
        assert (await http.get(f"{gw.http}/health")).status_code == 200


async def test_missing_token_does_not_burn_the_auth_budget(gw: RunningGateway) -> None:
    for _ in range(12):
        client = await open_client(gw.url)
        assert (await client.handshake(None))["error"]["details"]["code"] == "AUTH_TOKEN_MISSING"
        await client.close_info()
    client = await open_client(gw.url)
    assert (await client.handshake(TEST_TOKEN))["ok"]


async def test_many_preauth_sockets_per_ip_get_503(tmp_path: Path) -> None:
    with run_gateway(tmp_path, options=GatewayOptions(max_preauth_per_ip=3)) as running:
        held = [await open_client(running.url) for _ in range(3)]
        with pytest.raises(InvalidStatus) as info:
            await open_client(running.url)
        assert info.value.response.status_code == 503
        for c in held:
            await c.ws.close()
        await asyncio.sleep(0.1)
        ok = await open_client(running.url)
        assert (await ok.handshake(TEST_TOKEN))["ok"]
