"""Device pairing and device tokens (openclaw-protocol.md §1.6): a local device pairs silently, a
remote one waits for an operator; the device token then admits it without the shared secret;
revoke, rotate and remove take effect at once, open sockets included; a flood is refused."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests.conftest import TEST_TOKEN, RunningGateway
from tests.waiting import wait_for
from tests.wsclient import Client, open_client

CLIENT = {"id": "openclaw-ios", "version": "2026.9.6", "platform": "iOS", "mode": "ui", "displayName": "Ada's phone"}
SCOPES = ["operator.read", "operator.write"]
REMOTE = {"X-Forwarded-For": "203.0.113.7"}  # what a reverse proxy adds: not a direct local socket


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Phone:
    def __init__(self) -> None:
        self.key = Ed25519PrivateKey.generate()
        raw = self.key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        self.public_key = _b64(raw)
        self.id = hashlib.sha256(raw).hexdigest()

    def proof(self, nonce: str, token: str, scopes: list[str]) -> dict[str, Any]:
        ts = int(time.time() * 1000)
        fields = ["v3", self.id, CLIENT["id"], CLIENT["mode"], "operator", ",".join(scopes), str(ts), token, nonce]
        payload = "|".join([*fields, "ios", ""])
        sig = _b64(self.key.sign(payload.encode()))
        return {"id": self.id, "publicKey": self.public_key, "signature": sig, "signedAt": ts, "nonce": nonce}

    async def connect(
        self,
        gw: RunningGateway,
        *,
        token: str | None = None,
        device_token: str | None = None,
        scopes: list[str] = SCOPES,
        headers: dict[str, str] | None = None,
    ) -> tuple[Client, dict[str, Any]]:
        client = await open_client(gw.url, additional_headers=headers or {})
        nonce = (await client.recv())["payload"]["nonce"]
        auth = {k: v for k, v in (("token", token), ("deviceToken", device_token)) if v}
        params = {
            "minProtocol": 3,
            "maxProtocol": 3,
            "client": CLIENT,
            "role": "operator",
            "scopes": scopes,
            "auth": auth,
            "device": self.proof(nonce, token or device_token or "", scopes),
        }
        return client, await client.request("connect", params)


async def operator(gw: RunningGateway) -> Client:
    client = await open_client(gw.url)
    assert (await client.handshake(TEST_TOKEN))["ok"]
    return client


async def test_a_local_device_pairs_silently_and_then_connects_with_its_token(gw: RunningGateway) -> None:
    phone = Phone()
    _, first = await phone.connect(gw, token=TEST_TOKEN)
    assert first["ok"], first
    auth = first["payload"]["auth"]
    assert auth["role"] == "operator" and auth["scopes"] == SCOPES and len(auth["deviceToken"]) >= 40
    again, res = await phone.connect(gw, device_token=auth["deviceToken"], scopes=["operator.read"])
    assert res["ok"] and res["payload"]["auth"]["scopes"] == ["operator.read"]
    assert "deviceToken" not in res["payload"]["auth"]  # it has one; it is never shown again
    assert (await again.request("status"))["ok"]
    _, refused = await phone.connect(gw, device_token=auth["deviceToken"], scopes=["operator.admin"])
    assert refused["ok"] and refused["payload"]["auth"]["scopes"] == []  # never more than approved
    stranger = Phone()
    _, nope = await stranger.connect(gw, device_token=auth["deviceToken"])  # someone else's token
    assert nope["ok"] is False and nope["error"]["code"] == "INVALID_REQUEST"


async def test_a_remote_device_waits_for_approval_then_pairs(gw: RunningGateway) -> None:
    admin = await operator(gw)
    phone = Phone()
    _, waiting = await phone.connect(gw, token=TEST_TOKEN, headers=REMOTE)
    assert waiting["ok"] is False and waiting["error"]["code"] == "NOT_PAIRED"
    details = waiting["error"]["details"]
    assert details["code"] == "PAIRING_REQUIRED" and details["reason"] == "not-paired"
    event = await admin.event("device.pair.requested")
    assert event["payload"]["requestId"] == details["requestId"] and event["payload"]["displayName"] == "Ada's phone"
    listed = (await admin.request("device.pair.list"))["payload"]
    assert [r["deviceId"] for r in listed["pending"]] == [phone.id] and listed["paired"] == []
    assert (await admin.request("device.pair.approve", {"requestId": details["requestId"]}))["ok"]
    assert (await admin.event("device.pair.resolved"))["payload"]["decision"] == "approved"
    socket, paired = await phone.connect(gw, token=TEST_TOKEN, headers=REMOTE)
    assert paired["ok"] and paired["payload"]["auth"]["deviceToken"]
    # each paired device says whether a socket of it is open now (the Devices page's online dot)
    listed = (await admin.request("device.pair.list"))["payload"]
    assert [(d["deviceId"], d["connected"]) for d in listed["paired"]] == [(phone.id, True)]
    await socket.ws.close()
    sockets = gw.gateway.connections.values
    await wait_for(lambda: all(c.info.device_id != phone.id for c in sockets()), what="the phone's socket gone")
    listed = (await admin.request("device.pair.list"))["payload"]
    assert [d["connected"] for d in listed["paired"]] == [False]
    renamed = await admin.request("device.pair.rename", {"deviceId": phone.id, "label": " Ada's work phone "})
    assert renamed["payload"] == {"deviceId": phone.id, "label": "Ada's work phone"}
    listed = (await admin.request("device.pair.list"))["payload"]
    assert listed["paired"][0]["displayName"] == "Ada's work phone"
    for params, message in (
        ({"deviceId": phone.id, "label": "  "}, "label required"),
        ({"deviceId": "nope", "label": "x"}, "unknown deviceId"),
        ({"deviceId": phone.id, "displayName": "x"}, "label"),
    ):
        refused = await admin.request("device.pair.rename", params)
        assert refused["ok"] is False and message in refused["error"]["message"], refused
    bogus = await admin.request("device.pair.approve", {"requestId": "0000000000000000"})
    assert bogus["ok"] is False and "unknown or expired pairing request" in bogus["error"]["message"]


async def test_revoke_rotate_and_remove_take_effect_at_once(gw: RunningGateway) -> None:
    admin = await operator(gw)
    phone = Phone()
    _, first = await phone.connect(gw, token=TEST_TOKEN)
    token = first["payload"]["auth"]["deviceToken"]
    open_socket, res = await phone.connect(gw, device_token=token)
    assert res["ok"]
    # both of its sockets (the one that paired, the one on its token) are closed
    rotated = (await admin.request("device.token.rotate", {"deviceId": phone.id}))["payload"]
    assert rotated["closedConnections"] == 2 and (await open_socket.close_info())[0] == 4001
    _, old = await phone.connect(gw, device_token=token)
    assert old["ok"] is False
    live, new = await phone.connect(gw, device_token=rotated["token"])
    assert new["ok"]
    revoked = (await admin.request("device.token.revoke", {"deviceId": phone.id}))["payload"]
    assert revoked["revoked"] is True and (await live.close_info())[0] == 4001
    _, after = await phone.connect(gw, device_token=rotated["token"])
    assert after["ok"] is False
    _, again = await phone.connect(gw, token=TEST_TOKEN)  # the shared secret re-issues a token
    assert (await admin.request("device.pair.remove", {"deviceId": phone.id}))["payload"]["removed"] is True
    _, gone = await phone.connect(gw, device_token=again["payload"]["auth"]["deviceToken"])
    assert gone["ok"] is False
    missing = await admin.request("device.pair.remove", {"deviceId": phone.id})
    assert missing["ok"] is False and "unknown device" in missing["error"]["message"]


async def test_a_flood_of_new_devices_from_one_address_is_refused(gw: RunningGateway) -> None:
    codes = []
    for _ in range(7):
        _, res = await Phone().connect(gw, token=TEST_TOKEN, headers=REMOTE)
        codes.append(res["error"]["code"])
    assert codes[:5] == ["NOT_PAIRED"] * 5 and codes[5:] == ["UNAVAILABLE", "UNAVAILABLE"]


async def test_the_cli_lists_approves_and_revokes_devices(tmp_path: Path) -> None:
    import asyncio

    from tests.gateway_process import json_out, run_cli, scrubbed_env, start_gateway, write_config

    state = tmp_path / "state"
    write_config(state, json.dumps({"gateway": {"auth": {"token": TEST_TOKEN}}}))
    env = scrubbed_env(state)
    with start_gateway(env) as proc:
        proc.wait_listening()
        url = ("--url", proc.url)

        class Live:
            url = proc.url

        phone = Phone()
        _, waiting = await phone.connect(Live, token=TEST_TOKEN, headers=REMOTE)  # type: ignore[arg-type]
        request_id = waiting["error"]["details"]["requestId"]
        listed = await asyncio.to_thread(run_cli, env, "devices", "list", *url)
        assert f"pending  {request_id}  Ada's phone" in listed.stdout
        approved = await asyncio.to_thread(run_cli, env, "devices", "approve", request_id, *url)
        assert approved.returncode == 0 and "approved" in approved.stdout
        paired = json_out(await asyncio.to_thread(run_cli, env, "devices", "list", "--json", *url))["paired"]
        assert [d["deviceId"] for d in paired] == [phone.id]
        _, ok = await phone.connect(Live, token=TEST_TOKEN, headers=REMOTE)  # type: ignore[arg-type]
        token = ok["payload"]["auth"]["deviceToken"]
        revoked = await asyncio.to_thread(run_cli, env, "devices", "revoke", phone.id, *url)
        assert revoked.returncode == 0 and "revoked" in revoked.stdout
        _, refused = await phone.connect(Live, device_token=token)  # type: ignore[arg-type]
        assert refused["ok"] is False
        bad = await asyncio.to_thread(run_cli, env, "devices", "approve", "nope", *url)
        assert bad.returncode == 1 and "unknown or expired" in bad.stderr
