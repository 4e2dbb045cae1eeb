"""Red team: devices and the shared secret. A connection from elsewhere that leaves its device out
gets no scopes (before: every scope it asked for); an approver cannot grant scopes it does not
hold (before: whatever the request named, admin included); a paired device that reconnects asking
for less keeps its pairing (before: the pairing was rewritten to the smaller set)."""

from __future__ import annotations

from tests.conftest import TEST_TOKEN, RunningGateway
from tests.gateway.ws.test_device_pairing import REMOTE, SCOPES, Phone
from tests.wsclient import Client, open_client


async def connect(gw: RunningGateway, scopes: list[str], headers: dict[str, str] | None = None) -> Client:
    client = await open_client(gw.url, additional_headers=headers or {})
    res = await client.handshake(TEST_TOKEN, scopes=scopes)
    assert res["ok"], res
    return client


async def test_a_remote_connection_without_a_device_gets_no_scopes(gw: RunningGateway) -> None:
    remote = await connect(gw, ["operator.admin", "operator.approvals"], REMOTE)
    assert (await remote.request("health"))["ok"]  # health needs no scope
    for method in ("exec.approvals.get", "status", "config.get", "sessions.list"):
        denied = await remote.request(method, {})
        assert denied["ok"] is False, method
    local = await connect(gw, ["operator.admin"])  # the local CLI is unchanged
    assert (await local.request("exec.approvals.get", {}))["ok"]


async def test_an_approver_cannot_grant_scopes_it_does_not_hold(gw: RunningGateway) -> None:
    phone = Phone()
    _, waiting = await phone.connect(gw, token=TEST_TOKEN, scopes=["operator.admin"], headers=REMOTE)
    request_id = waiting["error"]["details"]["requestId"]
    pairer = await connect(gw, ["operator.pairing"])
    refused = await pairer.request("device.pair.approve", {"requestId": request_id})
    assert refused["ok"] is False and refused["error"]["details"]["missingScopes"] == ["operator.admin"]
    # the request is still there for someone who may grant it, and nothing was paired
    admin = await connect(gw, ["operator.admin"])
    listed = (await admin.request("device.pair.list"))["payload"]
    assert [r["requestId"] for r in listed["pending"]] == [request_id] and listed["paired"] == []
    assert (await admin.request("device.pair.approve", {"requestId": request_id}))["ok"]
    # a pairer may approve what it holds itself
    other = Phone()
    _, second = await other.connect(gw, token=TEST_TOKEN, scopes=["operator.pairing"], headers=REMOTE)
    approved = await pairer.request("device.pair.approve", {"requestId": second["error"]["details"]["requestId"]})
    assert approved["ok"], approved


async def test_a_paired_device_asking_for_less_keeps_its_pairing(gw: RunningGateway) -> None:
    phone = Phone()
    _, first = await phone.connect(gw, token=TEST_TOKEN)
    assert first["ok"] and first["payload"]["auth"]["scopes"] == SCOPES
    _, narrow = await phone.connect(gw, token=TEST_TOKEN, scopes=["operator.read"])
    assert narrow["ok"] and narrow["payload"]["auth"]["scopes"] == ["operator.read"]
    admin = await connect(gw, ["operator.admin"])
    (device,) = (await admin.request("device.pair.list"))["payload"]["paired"]
    assert device["scopes"] == SCOPES  # only an approval changes what it was approved for
    # and asking for more again from elsewhere is an upgrade that waits for approval
    _, upgrade = await phone.connect(gw, token=TEST_TOKEN, scopes=[*SCOPES, "operator.admin"], headers=REMOTE)
    assert upgrade["ok"] is False and upgrade["error"]["details"]["reason"] == "scope-upgrade"
