"""`connect` request parameters and the `hello-ok` payload."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from homarus.protocol.compat import compat_params

__all__ = ["CLIENT_IDS", "CLIENT_MODES", "ConnectAuth", "ConnectClient", "ConnectDevice", "ConnectParams"]

ClientId = Literal[
    "webchat-ui",
    "openclaw-control-ui",
    "openclaw-browser-copilot",
    "openclaw-tui",
    "webchat",
    "cli",
    "gateway-client",
    "openclaw-macos",
    "openclaw-linux",
    "openclaw-ios",
    "openclaw-watchos",
    "openclaw-android",
    "node-host",
    "openclaw-worker",
    "test",
    "fingerprint",
    "openclaw-probe",
    "homarus-control-ui",
    "homarus-cli",
]
ClientMode = Literal["webchat", "cli", "ui", "backend", "node", "worker", "probe", "test"]
#: the same, as tuples (written once: the literal types above)
CLIENT_IDS: tuple[str, ...] = get_args(ClientId)
CLIENT_MODES: tuple[str, ...] = get_args(ClientMode)

_Short = Field(default=None, max_length=256)


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ConnectClient(_Closed):
    id: ClientId
    version: str = Field(min_length=1, max_length=128)
    platform: str = Field(min_length=1, max_length=128)
    mode: ClientMode
    display_name: str | None = Field(default=None, alias="displayName", max_length=256)
    device_family: str | None = Field(default=None, alias="deviceFamily", max_length=128)
    model_identifier: str | None = Field(default=None, alias="modelIdentifier", max_length=128)
    instance_id: str | None = Field(default=None, alias="instanceId", max_length=128)
    build_id: str | None = Field(default=None, alias="buildId", max_length=256)
    time_zone: str | None = Field(default=None, alias="timeZone", max_length=128)


class ConnectDevice(_Closed):
    id: str = Field(min_length=1, max_length=256)
    public_key: str = Field(alias="publicKey", min_length=1, max_length=4096)
    signature: str = Field(min_length=1, max_length=4096)
    signed_at: int = Field(alias="signedAt", ge=0)
    nonce: str | None = Field(default=None, max_length=256)


class ConnectAuth(_Closed):
    token: str | None = Field(default=None, max_length=4096)
    bootstrap_token: str | None = Field(default=None, alias="bootstrapToken", max_length=4096)
    device_token: str | None = Field(default=None, alias="deviceToken", max_length=4096)
    password: str | None = Field(default=None, max_length=4096)


@compat_params(
    inert={
        "computerUse": "a client's desktop-control offer: Homarus has no computer-use tools",
        "modelCatalog": "a client's own model catalogue: Homarus uses the models in its config",
        "workerRuns": "worker runs on client devices are not a Homarus feature",
    }
)
class ConnectParams(_Closed):
    min_protocol: int = Field(alias="minProtocol", ge=1)
    max_protocol: int = Field(alias="maxProtocol", ge=1)
    client: ConnectClient
    caps: list[str] | None = Field(default=None, max_length=64)
    commands: list[str] | None = Field(default=None, max_length=1024)
    permissions: dict[str, Any] | None = None
    path_env: str | None = Field(default=None, alias="pathEnv", max_length=65536)
    role: str | None = Field(default=None, max_length=64)
    scopes: list[str] | None = Field(default=None, max_length=64)
    device: ConnectDevice | None = None
    auth: ConnectAuth | None = None
    locale: str | None = Field(default=None, max_length=64)
    user_agent: str | None = Field(default=None, alias="userAgent", max_length=1024)
