"""config.get / config.set / config.patch / config.apply over a real socket."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import TEST_TOKEN, RunningGateway, run_gateway
from tests.wsclient import Client, open_client

SECRET = "config-file-token-abcdef123456"


async def _admin(running: RunningGateway, token: str | None = TEST_TOKEN) -> Client:
    client = await open_client(running.url)
    assert (await client.handshake(token))["ok"]
    return client


async def test_get_redacts_secrets_everywhere(tmp_path: Path) -> None:
    config = {"gateway": {"auth": {"token": SECRET}}}
    with run_gateway(tmp_path, config=config, token=None) as running:
        client = await _admin(running, SECRET)
        res = await client.request("config.get")
        payload = res["payload"]
        assert SECRET not in json.dumps(payload)
        assert payload["valid"] is True and payload["exists"] is True
        assert payload["parsed"]["gateway"]["auth"]["token"] == "__HOMARUS_REDACTED__"
        assert payload["config"]["gateway"]["auth"]["token"] == "__HOMARUS_REDACTED__"
        assert "__HOMARUS_REDACTED__" in payload["raw"]
        assert len(payload["hash"]) == 64


async def test_set_requires_base_hash_when_file_exists(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config={"gateway": {"port": 18789}}) as running:
        client = await _admin(running)
        res = await client.request("config.set", {"raw": '{"gateway": {"port": 18790}}'})
        assert res["error"]["message"] == "config base hash required; re-run config.get and retry"
        res = await client.request("config.set", {"raw": "{}", "baseHash": "0" * 64})
        assert res["error"]["message"] == "config changed since last load; re-run config.get and retry"


async def test_ui_prefs_are_patched_without_a_base_hash_and_nothing_else_is(tmp_path: Path) -> None:
    """The Control UI syncs its theme with a hashless patch of ``ui.prefs`` (last writer wins);
    a hashless patch reaching past that subtree, or a bad value, is refused and the file kept."""
    with run_gateway(tmp_path, config={"gateway": {"port": 18789}}) as running:
        client = await _admin(running)
        prefs = {"raw": json.dumps({"ui": {"prefs": {"themeMode": "dark", "accent": "#aa3322"}}}), "note": "sync"}
        assert (await client.request("config.patch", prefs))["ok"]
        on_disk = json.loads(running.paths.config_path.read_text())
        assert on_disk == {"gateway": {"port": 18789}, "ui": {"prefs": {"themeMode": "dark", "accent": "#aa3322"}}}
        before = running.paths.config_path.read_bytes()
        for raw in (
            {"ui": {"prefs": {"themeMode": "light"}, "seamColor": "#000000"}},
            {"ui": {"prefs": {}}, "gateway": {"port": 1}},
            {"gateway": {"port": 18790}},
        ):
            res = await client.request("config.patch", {"raw": json.dumps(raw)})
            assert res["error"]["message"] == "config base hash required; re-run config.get and retry", raw
        bad = await client.request("config.patch", {"raw": json.dumps({"ui": {"prefs": {"themeMode": "neon"}}})})
        assert bad["ok"] is False and "ui.prefs.themeMode" in bad["error"]["message"]
        assert running.paths.config_path.read_bytes() == before


async def test_set_round_trip_and_restart_hint(gw: RunningGateway) -> None:
    client = await _admin(gw)
    res = await client.request("config.set", {"raw": "{gateway: {port: 18800}, // json5\n}"})
    assert res["ok"], res
    assert res["payload"]["restart"] == {"required": True, "keys": ["gateway.port"]}
    on_disk = gw.paths.config_path
    assert json.loads(on_disk.read_text()) == {"gateway": {"port": 18800}}
    assert on_disk.stat().st_mode & 0o777 == 0o600
    got = (await client.request("config.get"))["payload"]
    assert got["config"]["gateway"]["port"] == 18800
    same = await client.request("config.set", {"raw": '{"gateway": {"port": 18800}}', "baseHash": got["hash"]})
    assert same["payload"]["noop"] is True


async def test_invalid_config_is_refused_and_file_untouched(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config={"gateway": {"port": 18789}}) as running:
        client = await _admin(running)
        before = running.paths.config_path.read_bytes()
        h = (await client.request("config.get"))["payload"]["hash"]
        res = await client.request("config.set", {"raw": '{"gateway": {"port": "high"}}', "baseHash": h})
        assert res["error"]["code"] == "INVALID_REQUEST"
        assert "gateway.port" in res["error"]["message"]
        assert res["error"]["details"]["issues"]
        res = await client.request("config.set", {"raw": '{"gatewya": {}}', "baseHash": h})
        assert "gatewya" in res["error"]["message"] and "unknown key" in res["error"]["message"]
        res = await client.request("config.set", {"raw": "{broken", "baseHash": h})
        assert res["error"]["message"].startswith("invalid config:")
        assert running.paths.config_path.read_bytes() == before


async def test_patch_merges_and_keeps_redacted_secret(tmp_path: Path) -> None:
    config = {"gateway": {"port": 18789, "auth": {"token": SECRET}}}
    with run_gateway(tmp_path, config=config, token=None) as running:
        client = await _admin(running, SECRET)
        got = (await client.request("config.get"))["payload"]
        patch = {"gateway": {"auth": {"token": "__HOMARUS_REDACTED__"}}, "session": {"mainKey": "home"}}
        res = await client.request("config.patch", {"raw": json.dumps(patch), "baseHash": got["hash"]})
        assert res["ok"], res
        stored = json.loads(running.paths.config_path.read_text())
        assert stored["gateway"]["auth"]["token"] == SECRET  # sentinel restored, not written
        assert stored["session"] == {"mainKey": "home"}
        assert stored["gateway"]["port"] == 18789
        h = (await client.request("config.get"))["payload"]["hash"]
        res = await client.request("config.patch", {"raw": "[1]", "baseHash": h})
        assert res["error"]["message"] == "config.patch raw must be an object"
        res = await client.request("config.patch", {"raw": '{"session": null}', "baseHash": h})
        assert "session" not in json.loads(running.paths.config_path.read_text())


async def test_write_budget_three_per_minute(gw: RunningGateway) -> None:
    client = await _admin(gw)
    for port in (18801, 18802, 18803):
        h = (await client.request("config.get"))["payload"]["hash"]
        assert (await client.request("config.set", {"raw": json.dumps({"gateway": {"port": port}}), "baseHash": h}))[
            "ok"
        ]
    h = (await client.request("config.get"))["payload"]["hash"]
    res = await client.request("config.patch", {"raw": "{}", "baseHash": h})
    err = res["error"]
    assert err["code"] == "UNAVAILABLE"
    assert err["retryable"] is True and 0 < err["retryAfterMs"] <= 60_000
    assert err["details"] == {"method": "config.patch", "limit": "3 per 60s"}
    assert err["message"].startswith("rate limit exceeded for config.patch; retry after ")


async def test_changing_the_token_closes_existing_sessions_4001(gw: RunningGateway) -> None:
    client = await _admin(gw)
    bystander = await _admin(gw)
    res = await client.request(
        "config.set", {"raw": json.dumps({"gateway": {"auth": {"token": "brand-new-token-123"}}})}
    )
    # the running gateway was started with an explicit --token, which wins over the file
    assert res["ok"]
    assert (await bystander.request("health"))["ok"]


async def test_token_rotation_via_config(tmp_path: Path) -> None:
    with run_gateway(tmp_path, config={"gateway": {"auth": {"token": SECRET}}}, token=None) as running:
        client = await _admin(running, SECRET)
        bystander = await _admin(running, SECRET)
        h = (await client.request("config.get"))["payload"]["hash"]
        new = {"gateway": {"auth": {"token": "rotated-token-0987654321"}}}
        await client.send(
            {"type": "req", "id": "rot", "method": "config.set", "params": {"raw": json.dumps(new), "baseHash": h}}
        )
        assert await bystander.close_info() == (4001, "gateway auth changed")
        fresh = await open_client(running.url)
        assert (await fresh.handshake("rotated-token-0987654321"))["ok"]
        old = await open_client(running.url)
        assert (await old.handshake(SECRET))["error"]["details"]["code"] == "AUTH_TOKEN_MISMATCH"
