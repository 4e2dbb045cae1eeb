"""What each turn costs in bytes: the model request for "hi" with the default config stays within
its budget with every tool still offered, and its prefix (system prompt, tools, earlier messages) is
byte-stable from one turn to the next, so providers' prompt caches hit. Bytes are deterministic:
these are tests, not benchmarks (``bench/prompt_bench.py`` shows the parts)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import TEST_TOKEN, run_gateway
from tests.fakes import Reply, run_fake_llm
from tests.wsclient import open_client

#: the model request for "hi" on a fresh workspace with the default config (bytes)
BUDGET = 12_000
#: tools offered by name and one line, their parameters a ``tool_schema`` call away
DEFERRED = {"browser", "cron", "memory_get", "process", "session_status"} | {
    "sessions_history",
    "sessions_list",
    "sessions_send",
    "sessions_spawn",
}


def _config(base_url: str, **tools: Any) -> dict[str, Any]:
    return {
        "models": {
            "providers": {
                "fake": {
                    "api": "openai-completions",
                    "baseUrl": base_url,
                    "apiKey": "sk-test",
                    "models": [{"id": "fake-model", "contextWindow": 128000}],
                }
            }
        },
        "agents": {"defaults": {"model": {"primary": "fake/fake-model"}}},
        **({"tools": tools} if tools else {}),
    }


async def _turns(url: str, *messages: str) -> None:
    client = await open_client(url)
    assert (await client.handshake(TEST_TOKEN))["ok"]
    for i, message in enumerate(messages):
        params = {"message": message, "idempotencyKey": f"budget-{i}"}
        await client.send({"type": "req", "id": f"t{i}", "method": "agent", "params": params})
        assert (await client.response(f"t{i}"))["payload"]["status"] == "accepted"
        final = await client.response(f"t{i}", timeout=15)
        assert final["ok"], final


async def test_the_request_for_hi_fits_the_budget_with_every_tool_offered(tmp_path: Path) -> None:
    with run_fake_llm() as llm, run_gateway(tmp_path, config=_config(llm.base_url)) as gw:
        llm.push(Reply("Hello!"))
        await _turns(gw.url, "hi")
        body = llm.requests[0]
        offered = {t["function"]["name"]: t["function"] for t in body.json["tools"]}
        every = set(gw.gateway.tools.names())
    assert len(body.body) <= BUDGET, f"{len(body.body)} bytes for 'hi' (budget {BUDGET})"
    # nothing was cut to fit: every tool is still offered (``message`` only comes with chat channels)
    assert every - {"message"} <= set(offered)
    assert "tool_schema" in offered
    for name in DEFERRED:
        assert offered[name]["parameters"] == {"type": "object"}, name  # declared; parameters on demand
    assert "properties" in offered["read"]["parameters"] and "properties" in offered["exec"]["parameters"]
    system = body.json["messages"][0]["content"]
    assert "Tools (call them by these exact names): " in system and "browser" in system


async def test_with_deferred_schemas_off_every_tool_goes_in_full(tmp_path: Path) -> None:
    with run_fake_llm() as llm, run_gateway(tmp_path, config=_config(llm.base_url, deferredSchemas=False)) as gw:
        llm.push(Reply("Hello!"))
        await _turns(gw.url, "hi")
    tools = {t["function"]["name"]: t["function"] for t in llm.requests[0].json["tools"]}
    assert "tool_schema" not in tools
    assert all("properties" in tools[name]["parameters"] for name in DEFERRED - {"session_status"})


async def test_the_prompt_prefix_is_byte_stable_from_turn_to_turn(tmp_path: Path) -> None:
    with run_fake_llm() as llm, run_gateway(tmp_path, config=_config(llm.base_url)) as gw:
        llm.push(Reply("Hello!"), Reply("Again!"), Reply("And again!"))
        await _turns(gw.url, "hi", "what can you do?", "thanks")
        bodies = [json.loads(r.body) for r in llm.requests[:3]]
    first, second, third = bodies

    def dumped(value: Any) -> bytes:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()

    # the system prompt and the tools are the same bytes on every turn ...
    assert dumped(second["messages"][0]) == dumped(first["messages"][0])
    assert dumped(third["messages"][0]) == dumped(first["messages"][0])
    assert dumped(second["tools"]) == dumped(first["tools"]) == dumped(third["tools"])
    # ... and each turn's messages begin with the previous turn's, unchanged
    assert dumped(second["messages"][: len(first["messages"])]) == dumped(first["messages"])
    assert dumped(third["messages"][: len(second["messages"])]) == dumped(second["messages"])
