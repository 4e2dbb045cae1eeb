"""Gateways sharing one real PostgreSQL: each joins at start and shows the others in ``status``;
one stopped leaves, one killed stops counting after its ttl; a database that cannot be had stops
the start with its reason, and the URL (a secret) shows nowhere."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from homarus.config.storage import StorageConfig
from tests.conftest import TEST_TOKEN, run_gateway
from tests.gateway_process import free_port, run_cli, scrubbed_env, start_gateway, stop_gracefully, write_config
from tests.pg_cluster import pg_cluster
from tests.wsclient import open_client


def _config(url: str, **postgres: Any) -> dict[str, Any]:
    return {"storage": {"backend": "postgres", "postgres": {"url": url, "memberTtlSeconds": 1.5, **postgres}}}


async def _status(c: Any) -> dict[str, Any]:
    answer: dict[str, Any] = (await c.request("status"))["payload"]
    return answer


async def _wait_for(check: Any, what: str, timeout: float = 15.0) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await check()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


def test_the_storage_section_is_checked() -> None:
    assert StorageConfig().backend == "embedded"
    for bad, message in (
        ({"backend": "postgres"}, "needs storage.postgres.url"),
        ({"postgres": {"url": "mysql://x"}}, "postgresql:// URL"),
        ({"postgres": {"poolMin": 5, "poolMax": 2}}, "poolMin must not exceed poolMax"),
        ({"backend": "sqlite"}, "backend"),
    ):
        with pytest.raises(ValidationError, match=message):
            StorageConfig.model_validate(bad)


async def test_two_gateways_on_one_database_see_each_other_and_one_leaves(tmp_path: Path, pg_url: str) -> None:
    with run_gateway(tmp_path / "a", config=_config(pg_url)) as a:
        ca = await _client(a.url)
        with run_gateway(tmp_path / "b", config=_config(pg_url)) as b:

            async def both() -> dict[str, Any] | None:
                s = (await _status(ca))["storage"]
                return s if s.get("alive") == 2 and all(m["port"] for m in s["members"]) else None

            storage = await _wait_for(both, "both members with their ports")
            assert storage["backend"] == "postgres" and storage["healthy"] is True and storage["schemaVersion"] >= 1
            assert storage["database"].startswith("127.0.0.1:") and "homarus" not in storage["database"].split("/")[0]
            ports = {m["port"]: m["self"] for m in storage["members"]}
            assert ports == {a.port: True, b.port: False}
            seen_by_b = (await _status(await _client(b.url)))["storage"]
            assert {m["id"] for m in seen_by_b["members"]} == {m["id"] for m in storage["members"]}
            assert [m["self"] for m in seen_by_b["members"] if m["port"] == b.port] == [True]
        # b stopped: it removed itself
        after = (await _status(ca))["storage"]
        assert [m["port"] for m in after["members"]] == [a.port] and after["alive"] == 1
        config_view = json.dumps((await ca.request("config.get"))["payload"])
        assert pg_url not in config_view and pg_url.split(":")[2].split("@")[0] not in config_view


async def _client(url: str) -> Any:
    c = await open_client(url)
    assert (await c.handshake(TEST_TOKEN))["ok"]
    return c


async def test_a_killed_gateway_stops_counting_after_its_ttl(tmp_path: Path, pg_url: str) -> None:
    state = tmp_path / "killed"
    write_config(state, json.dumps({"gateway": {"auth": {"token": TEST_TOKEN}}, **_config(pg_url)}))
    with run_gateway(tmp_path / "survivor", config=_config(pg_url)) as survivor:
        c = await _client(survivor.url)
        with start_gateway(scrubbed_env(state)) as victim:
            port = victim.wait_listening()

            async def victim_alive() -> bool:
                members = (await _status(c))["storage"]["members"]
                return any(m["port"] == port and m["alive"] for m in members)

            await _wait_for(victim_alive, "the victim to be a live member")
            victim.proc.send_signal(signal.SIGKILL)
            victim.wait_exit()

            async def victim_dead() -> bool:
                members = (await _status(c))["storage"]["members"]
                return any(m["port"] == port and not m["alive"] for m in members)

            await _wait_for(victim_dead, "the killed member to stop counting")
            storage = (await _status(c))["storage"]
            assert storage["alive"] == 1 and storage["healthy"] is True
            shown = await asyncio.to_thread(
                run_cli,
                scrubbed_env(tmp_path / "cli"),
                "cluster",
                "status",
                "--url",
                survivor.url,
                "--token",
                TEST_TOKEN,
            )
            assert shown.returncode == 0, shown.stderr
            text = shown.stdout.splitlines()
            assert text[0].startswith("storage: postgres 127.0.0.1:") and text[0].endswith(", healthy")
            assert text[1] == "members: 1 alive of 2"
            assert any(f":{port} " in line and line.strip().startswith("gone") for line in text)
            assert any(f":{survivor.port} " in line and line.endswith("(this gateway)") for line in text)


def test_a_database_that_cannot_be_had_stops_the_start_with_its_reason(tmp_path: Path) -> None:
    secret = "pw-that-must-not-show-9931"
    url = f"postgresql://homarus:{secret}@127.0.0.1:{free_port()}/assistant"
    state = tmp_path / "nodb"
    write_config(state, json.dumps(_config(url, connectTimeoutSeconds=2)))
    with start_gateway(scrubbed_env(state)) as gw:
        assert gw.wait_exit() == 1
        assert gw.port is None  # never listened
        assert "cannot start: PostgreSQL at 127.0.0.1:" in gw.stderr and "/assistant is unavailable" in gw.stderr
        assert secret not in gw.stderr + gw.stdout


async def test_the_embedded_default_reports_itself_and_touches_no_database(tmp_path: Path) -> None:
    state = tmp_path / "embedded"
    write_config(state, json.dumps({"gateway": {"auth": {"token": TEST_TOKEN}}}))
    with start_gateway(scrubbed_env(state)) as gw:
        gw.wait_listening()
        storage = (await _status(await _client(gw.url)))["storage"]
        assert storage == {"backend": "embedded"}
        shown = await asyncio.to_thread(run_cli, scrubbed_env(state), "cluster", "status", "--url", gw.url)
        assert shown.returncode == 0 and shown.stdout.startswith("storage: embedded"), shown.stderr
        assert "psycopg" not in gw.stderr
        assert stop_gracefully(gw) == 0


async def test_the_database_going_away_is_reported_at_once_and_its_return_noticed(tmp_path: Path) -> None:
    with pg_cluster() as own, run_gateway(tmp_path / "gw", config=_config(own.url())) as gw:  # own server: stopped here
        c = await _client(gw.url)
        assert (await _status(c))["storage"]["healthy"] is True
        own.stop("immediate")
        started = asyncio.get_running_loop().time()
        away = (await _status(c))["storage"]
        assert asyncio.get_running_loop().time() - started < 3.0  # status does not hang on the database
        assert away["healthy"] is False and "is unavailable" in away["error"] and own.password not in away["error"]
        assert (await c.request("health"))["ok"]  # the gateway goes on answering
        own.start()

        async def back() -> bool:
            s = (await _status(c))["storage"]
            return bool(s["healthy"] and s.get("alive") == 1)

        await _wait_for(back, "the database's return to be noticed")
