"""The scale-out example (examples/scale-out) is what it says: its compose file runs two gateways
with one config on one PostgreSQL behind a TLS proxy balancing both, and that config, as it is,
starts two real gateway processes that form one cluster on a real PostgreSQL."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import TEST_TOKEN
from tests.gateway_process import scrubbed_env, start_gateway
from tests.wsclient import open_client

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "scale-out"


def test_the_compose_file_runs_two_gateways_on_one_database_behind_the_proxy() -> None:
    compose = yaml.safe_load((EXAMPLE / "docker-compose.yml").read_text())
    services = compose["services"]
    gateways = [name for name in services if name.startswith("gateway-")]
    assert gateways == ["gateway-a", "gateway-b"]
    for name in gateways:
        gw = services[name]
        assert "./homarus.json:/state/homarus.json:ro" in gw["volumes"]
        assert "workspace:/workspace" in gw["volumes"] and gw["environment"]["HOMARUS_WORKSPACE"] == "/workspace"
        assert gw["environment"]["HOMARUS_PG_URL"].startswith("postgresql://homarus:${HOMARUS_PG_PASSWORD}@postgres:")
        assert gw["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert {v.split(":")[0] for n in gateways for v in services[n]["volumes"]} >= {"state-a", "state-b"}
    caddy = (EXAMPLE / "Caddyfile").read_text()
    assert "reverse_proxy gateway-a:18789 gateway-b:18789" in caddy and "tls internal" in caddy
    assert "health_uri /health" in caddy


async def test_the_example_config_forms_a_cluster(tmp_path: Path, pg_url: str) -> None:
    envs = []
    for name in ("a", "b"):
        state = tmp_path / name
        state.mkdir(mode=0o700)
        shutil.copy(EXAMPLE / "homarus.json", state / "homarus.json")
        shared = tmp_path / "workspace"
        envs.append(
            scrubbed_env(state, HOMARUS_PG_URL=pg_url, HOMARUS_GATEWAY_TOKEN=TEST_TOKEN, HOMARUS_WORKSPACE=str(shared))
        )
    with start_gateway(envs[0], "--bind", "loopback") as a, start_gateway(envs[1], "--bind", "loopback") as b:
        a.wait_listening()
        b.wait_listening()
        client = await open_client(b.url)
        assert (await client.handshake(TEST_TOKEN))["ok"]
        deadline = asyncio.get_running_loop().time() + 15
        while True:
            storage: dict[str, Any] = (await client.request("status"))["payload"]["storage"]
            if storage.get("alive") == 2 and len(storage.get("roles", {})) == 1:
                break
            assert asyncio.get_running_loop().time() < deadline, storage
            await asyncio.sleep(0.2)
        assert storage["backend"] == "postgres" and storage["healthy"] is True
        assert storage["roles"]["heartbeats"]["live"] is True
        for gw in (a, b):  # one workspace for both (the agents' files, memory notes included)
            other = await open_client(gw.url)
            assert (await other.handshake(TEST_TOKEN))["ok"]
            [agent] = (await other.request("agents.list"))["payload"]["agents"]
            assert agent["workspace"] == str(tmp_path / "workspace")
