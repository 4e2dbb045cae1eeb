"""Device identity in `connect`: a valid ed25519 proof passes; each broken part is named."""

from __future__ import annotations

import base64
import hashlib
import time
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests.conftest import TEST_TOKEN, RunningGateway
from tests.wsclient import open_client

SCOPES = ["operator.read"]
CLIENT = {"id": "cli", "version": "1.0.0", "platform": "Linux", "mode": "cli", "deviceFamily": "Desktop"}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _device(
    key: Ed25519PrivateKey,
    nonce: str,
    *,
    signed_at: int | None = None,
    device_id: str | None = None,
    sign_nonce: str | None = None,
    token: str = TEST_TOKEN,
) -> dict[str, Any]:
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    did = device_id or hashlib.sha256(raw).hexdigest()
    ts = signed_at if signed_at is not None else int(time.time() * 1000)
    payload = "|".join(
        ["v3", did, "cli", "cli", "operator", ",".join(SCOPES), str(ts), token, sign_nonce or nonce, "linux", "desktop"]
    )
    return {
        "id": did,
        "publicKey": _b64(raw),
        "signature": _b64(key.sign(payload.encode())),
        "signedAt": ts,
        "nonce": nonce,
    }


async def _connect(gw: RunningGateway, make: Any) -> dict[str, Any]:
    client = await open_client(gw.url)
    challenge = await client.recv()
    nonce = challenge["payload"]["nonce"]
    params = {
        "minProtocol": 3,
        "maxProtocol": 3,
        "client": CLIENT,
        "role": "operator",
        "scopes": SCOPES,
        "auth": {"token": TEST_TOKEN},
        "device": make(nonce),
    }
    res = await client.request("connect", params)
    if not res["ok"]:
        code, reason = await client.close_info()
        assert code == 1008 and reason == res["error"]["message"]
    return res


async def test_valid_device_proof_connects(gw: RunningGateway) -> None:
    key = Ed25519PrivateKey.generate()
    assert (await _connect(gw, lambda n: _device(key, n)))["ok"]


async def test_device_failures_are_named(gw: RunningGateway) -> None:
    key = Ed25519PrivateKey.generate()
    cases = {
        "device identity mismatch": lambda n: _device(key, n, device_id="someone-elses-device-id"),
        "device signature expired": lambda n: _device(key, n, signed_at=int(time.time() * 1000) - 3_600_000),
        "device nonce mismatch": lambda n: {**_device(key, n, sign_nonce="other"), "nonce": "other"},
        "device signature invalid": lambda n: _device(key, n, sign_nonce="signed-something-else"),
        "device public key invalid": lambda n: {**_device(key, n), "publicKey": "bm90LWEta2V5"},
        "device nonce required": lambda n: {k: v for k, v in _device(key, n).items() if k != "nonce"},
    }
    for message, make in cases.items():
        res = await _connect(gw, make)
        assert res["ok"] is False and res["error"]["message"] == message, (message, res)
        assert res["error"]["details"]["code"].startswith("DEVICE_AUTH_")
