"""`config.get` (read, redacted) and `config.set` / `config.patch` / `config.apply` (admin).

Writes are validated whole before the file is atomically replaced, guarded by the base-hash
rule (no lost updates between two editors) and a budget of 3 writes per 60 s per client.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import Any

import json5
from pydantic import Field

from homarus import __version__
from homarus.config.loader import load_config
from homarus.config.redact import redact, redact_text
from homarus.config.store import ConfigStore, WriteResult
from homarus.errors import ConfigError, InvalidRequest, RateLimited, Unavailable
from homarus.gateway.router import AnyParams, EmptyParams, MethodCall, Params
from homarus.protocol.compat import Unsupported, compat_params
from homarus.security.ratelimit import ceil_seconds
from homarus.security.scopes import ADMIN

log = logging.getLogger("homarus.config")

__all__: list[str] = []


class ConfigWriteParams(Params):
    raw: str = Field(max_length=1_048_576)
    base_hash: str | None = Field(default=None, alias="baseHash", max_length=128)
    note: str | None = Field(default=None, max_length=1000)
    session_key: str | None = Field(default=None, alias="sessionKey", max_length=512)
    restart_delay_ms: int | None = Field(default=None, alias="restartDelayMs", ge=0)


@compat_params(inert={"deliveryContext": "a config change is announced to operators as an event, not to a chat"})
class ConfigApplyParams(ConfigWriteParams):
    pass


@compat_params(
    unsupported={"replacePaths": Unsupported("config.patch merges the patch into the file (JSON merge patch)", [])}
)
class ConfigPatchParams(ConfigApplyParams):
    pass


def _effective(store: ConfigStore) -> dict[str, Any]:
    dumped = store.current.config.model_dump(mode="json", by_alias=True, exclude_none=True)
    # model_dump masks SecretStr as "**********"; show the one sentinel clients know instead.
    effective: dict[str, Any] = redact(
        _unmask(dumped, store.current.config.model_dump(by_alias=True, exclude_none=True))
    )
    return effective


def _unmask(dumped: Any, raw: Any) -> Any:
    if isinstance(dumped, dict) and isinstance(raw, dict):
        return {k: _unmask(v, raw.get(k)) for k, v in dumped.items()}
    if hasattr(raw, "get_secret_value"):
        return raw.get_secret_value()
    return dumped


async def config_get(call: MethodCall, params: EmptyParams) -> dict[str, Any]:
    store = call.gateway.config_store
    path = str(store.paths.config_path)
    try:
        disk = load_config(store.paths)
    except ConfigError as exc:
        raw = _read_raw(store)
        return {
            "path": path,
            "exists": raw is not None,
            "raw": None,
            "parsed": None,
            "config": {},
            "valid": False,
            "hash": ConfigStore.text_hash(raw) if raw is not None else None,
            "issues": [exc.message],
            "warnings": [],
        }
    return {
        "path": path,
        "exists": disk.exists,
        "raw": redact_text(disk.raw, disk.parsed) if disk.raw is not None else None,
        "parsed": redact(disk.parsed) if disk.parsed is not None else None,
        "config": _effective(store),
        "valid": True,
        "hash": disk.hash,
        "issues": [],
        "warnings": [f"{name} overrides the file" for name in disk.env_overrides],
    }


def _read_raw(store: ConfigStore) -> str | None:
    try:
        return store.paths.config_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _spend_budget(call: MethodCall) -> None:
    key = f"{call.client.instance_id or ''}|{call.client.ip}"
    wait = call.gateway.config_budget.try_acquire(key)
    if wait is not None:
        limit, window = call.gateway.config_budget.limit, call.gateway.config_budget.window_s
        raise RateLimited(
            f"rate limit exceeded for {call.method}; retry after {ceil_seconds(wait)}s",
            retry_after_ms=int(wait * 1000),
            details={"method": call.method, "limit": f"{limit} per {int(window)}s"},
        )


def _parse_patch(raw: str) -> Any:
    try:
        return json5.loads(raw)
    except ValueError as exc:
        raise InvalidRequest(f"config.patch raw is not valid JSON5: {exc}") from None


def _answer(call: MethodCall, result: WriteResult) -> dict[str, Any]:
    gw = call.gateway
    out: dict[str, Any] = {
        "ok": True,
        "path": str(result.loaded.path),
        "config": _effective(gw.config_store),
        "hash": result.loaded.hash,
    }
    if result.noop:
        out["noop"] = True
        return out
    gw.on_config_replaced()
    gw.bus.broadcast(
        "config.changed", {"hash": result.loaded.hash, "restartRequired": list(result.restart_required)}, guard=ADMIN
    )
    if result.restart_required:
        out["restart"] = {"required": True, "keys": list(result.restart_required)}
    return out


def _write(call: MethodCall, params: ConfigWriteParams, op: str) -> dict[str, Any]:
    from homarus.config.ui import only_ui_prefs

    store = call.gateway.config_store
    patch = _parse_patch(params.raw) if op == "patch" else None
    if params.base_hash is not None or not only_ui_prefs(patch):  # ui.prefs: last writer wins
        store.check_base_hash(params.base_hash)
    _spend_budget(call)
    try:
        result = store.patch(patch) if op == "patch" else store.replace_text(params.raw)
    except ConfigError as exc:
        raise InvalidRequest(f"invalid config: {exc.message}", details={"issues": [exc.message]}) from None
    return _answer(call, result)


async def config_set(call: MethodCall, params: ConfigWriteParams) -> dict[str, Any]:
    return _write(call, params, "set")


async def config_apply(call: MethodCall, params: ConfigWriteParams) -> dict[str, Any]:
    return _write(call, params, "set")


async def config_patch(call: MethodCall, params: ConfigWriteParams) -> dict[str, Any]:
    return _write(call, params, "patch")


async def second_connect(call: MethodCall, params: AnyParams) -> None:
    raise InvalidRequest("connect is only valid as the first request")


class SchemaLookupParams(Params):
    path: str = Field(max_length=512)


async def config_schema(call: MethodCall, p: EmptyParams) -> dict[str, Any]:
    """The config file's JSON Schema (built on the first ask, in a worker thread: ~0.3 s)."""
    from homarus.config.json_schema import config_json_schema

    schema = await asyncio.to_thread(config_json_schema)
    now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return {"schema": schema, "uiHints": {}, "version": __version__, "generatedAt": now}


async def config_schema_lookup(call: MethodCall, p: SchemaLookupParams) -> dict[str, Any]:
    from homarus.config.json_schema import lookup

    found = await asyncio.to_thread(lookup, p.path.strip())
    if found is None:
        raise InvalidRequest("config schema path not found", details={"path": p.path})
    return found


async def secrets_reload(call: MethodCall, p: EmptyParams) -> dict[str, Any]:
    """Read the config file and the secrets it refers to (the state dir's secrets file, the
    environment) again: a rotated key takes effect without a restart. A file that no longer
    validates leaves the running config as it was."""
    store = call.gateway.config_store
    try:
        await asyncio.to_thread(store.reload)
    except ConfigError as exc:
        log.warning("secrets.reload failed: %s", exc.message)
        raise Unavailable("secrets.reload failed") from None
    call.gateway.on_config_replaced()
    return {"ok": True, "warningCount": 0}
