"""The warm-up after a start: once it is done, the first run imports nothing more (and a gateway
whose model is reached over HTTP never loads httpx).

A fresh interpreter (this process has imported everything long ago) serves a gateway with an
``openai-completions`` provider on a loopback fake model, waits for the warm-up, then runs one
``agent`` turn over WebSocket and reports which modules the turn imported. A module added to the
turn's path but not to the warm-up's shows up here as a failure, with its name.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.fakes.llm_server import run_fake_llm

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import asyncio, json, sys
from pathlib import Path
from homarus.config.paths import StatePaths
from homarus.gateway.app import GatewayOptions
from homarus.gateway.server import build_gateway, serve
from tests.wsclient import open_client, close_all

state = Path(sys.argv[1])
HOOK_MODULES = ("homarus.plugins.hookspecs", "homarus.plugins.events.")
gateway = build_gateway(StatePaths(state, state / "homarus.json"), GatewayOptions(port=0, token="t" * 32))

async def turn(server):
    await gateway.warm_up
    before = set(sys.modules)
    client = await open_client(f"ws://127.0.0.1:{server.bound_port}")
    assert (await client.handshake("t" * 32))["ok"]
    res = await client.request("agent", {"message": "hi", "sessionKey": "first", "idempotencyKey": "k1"})
    assert res["ok"], res
    final = await client.response(res["id"], timeout=30)
    assert final["ok"] and final["payload"]["status"] == "ok", final
    await close_all()
    print(json.dumps({
        "runtime_built": gateway.built("runtime"),
        "imported_by_the_turn": sorted(m for m in set(sys.modules) - before if m.startswith("homarus")),
        "httpx": "httpx" in sys.modules,
        "hook_catalogue": sorted(m for m in sys.modules if m.startswith(HOOK_MODULES)),
    }))
    server.should_exit = True

def ready(server):
    asyncio.get_running_loop().create_task(turn(server))

asyncio.run(serve(gateway, on_ready=ready))
"""


def test_after_the_warm_up_the_first_turn_imports_nothing(tmp_path: Path) -> None:
    with run_fake_llm() as llm:
        provider = {
            "api": "openai-completions",
            "baseUrl": llm.base_url,
            "apiKey": "k",
            "models": [{"id": "fake-model"}],
        }
        config = {
            "models": {"providers": {"fake": provider}},
            "agents": {"defaults": {"model": {"primary": "fake/fake-model"}}},
        }
        (tmp_path / "homarus.json").write_text(json.dumps(config), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("HOMARUS_")}
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
        proc = subprocess.run(
            [sys.executable, "-c", PROBE, str(tmp_path)],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["runtime_built"] is True
    assert report["imported_by_the_turn"] == []
    assert report["httpx"] is False  # the providers' requests go through homarus.http_pool
    # no plugin registers a hook: no event is built, the catalogue and the event types stay unloaded
    assert report["hook_catalogue"] == ["homarus.plugins.events.context"]
