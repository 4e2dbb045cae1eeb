"""Device identity proofs in `connect`: an ed25519 signature over the challenge nonce.

Checks, first failure wins: the public key decodes to 32 raw bytes; the device id is the hex
SHA-256 of that key; ``signedAt`` is within two minutes of now; the nonce is present and is this
connection's challenge nonce; the signature verifies over the v3 payload (or the older v2 one).
``cryptography`` is imported only when a client actually presents a device.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass

__all__ = ["DEVICE_SKEW_MS", "DeviceFailure", "DeviceProof", "signing_payloads", "verify_device"]

DEVICE_SKEW_MS = 120_000


@dataclass(frozen=True, slots=True)
class DeviceProof:
    id: str
    public_key: str
    signature: str
    signed_at: int
    nonce: str | None


@dataclass(frozen=True, slots=True)
class DeviceFailure:
    message: str
    code: str
    reason: str


def _b64url(data: str) -> bytes:
    text = data.strip()
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _raw_public_key(public_key: str) -> bytes | None:
    text = public_key.strip()
    try:
        if text.startswith("-----BEGIN"):
            from cryptography.hazmat.primitives import serialization
            from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

            key = serialization.load_pem_public_key(text.encode())
            if not isinstance(key, Ed25519PublicKey):
                return None
            return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        raw = _b64url(text)
    except (ValueError, binascii.Error):
        return None
    return raw if len(raw) == 32 else None


def signing_payloads(
    proof: DeviceProof,
    *,
    client_id: str,
    client_mode: str,
    role: str,
    scopes: list[str],
    token: str,
    platform: str | None,
    device_family: str | None,
) -> list[str]:
    """The v3 payload, then the v2 one (older clients)."""
    base = [proof.id, client_id, client_mode, role, ",".join(scopes), str(proof.signed_at), token, proof.nonce or ""]
    v3 = "|".join(["v3", *base, (platform or "").strip().lower(), (device_family or "").strip().lower()])
    return [v3, "|".join(["v2", *base])]


def verify_device(
    proof: DeviceProof,
    *,
    challenge_nonce: str,
    now_ms: int,
    client_id: str,
    client_mode: str,
    role: str,
    scopes: list[str],
    token: str,
    platform: str | None,
    device_family: str | None,
) -> DeviceFailure | None:
    raw = _raw_public_key(proof.public_key)
    if raw is None:
        return DeviceFailure("device public key invalid", "DEVICE_AUTH_PUBLIC_KEY_INVALID", "device-public-key")
    if proof.id.strip().lower() != hashlib.sha256(raw).hexdigest():
        return DeviceFailure("device identity mismatch", "DEVICE_AUTH_DEVICE_ID_MISMATCH", "device-id-mismatch")
    if abs(now_ms - proof.signed_at) > DEVICE_SKEW_MS:
        return DeviceFailure("device signature expired", "DEVICE_AUTH_SIGNATURE_EXPIRED", "device-signature-stale")
    if not proof.nonce:
        return DeviceFailure("device nonce required", "DEVICE_AUTH_NONCE_REQUIRED", "device-nonce-missing")
    if proof.nonce != challenge_nonce:
        return DeviceFailure("device nonce mismatch", "DEVICE_AUTH_NONCE_MISMATCH", "device-nonce-mismatch")
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    key = Ed25519PublicKey.from_public_bytes(raw)
    try:
        signature = _b64url(proof.signature)
    except (ValueError, binascii.Error):
        return DeviceFailure("device signature invalid", "DEVICE_AUTH_SIGNATURE_INVALID", "device-signature")
    payloads = signing_payloads(
        proof,
        client_id=client_id,
        client_mode=client_mode,
        role=role,
        scopes=scopes,
        token=token,
        platform=platform,
        device_family=device_family,
    )
    for payload in payloads:
        try:
            key.verify(signature, payload.encode("utf-8"))
            return None
        except InvalidSignature:
            continue
    return DeviceFailure("device signature invalid", "DEVICE_AUTH_SIGNATURE_INVALID", "device-signature")
