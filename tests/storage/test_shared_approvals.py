"""Approvals across two gateways on one real PostgreSQL: a request made on one is shown to an
operator connected to the other, who answers it there; a decision for an approval no gateway has
is refused as on one gateway (``APPROVAL_NOT_FOUND``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from homarus.gateway.services import cluster_approvals
from tests.conftest import TEST_TOKEN, RunningGateway, run_gateway
from tests.wsclient import Client, open_client


def _config(url: str) -> dict[str, Any]:
    return {"storage": {"backend": "postgres", "postgres": {"url": url}}}


async def _client(gw: RunningGateway) -> Client:
    c = await open_client(gw.url)
    assert (await c.handshake(TEST_TOKEN))["ok"]
    return c


async def test_an_approval_asked_on_one_gateway_is_answered_on_the_other(
    tmp_path: Path, pg_url: str, monkeypatch: Any
) -> None:
    monkeypatch.setattr(cluster_approvals, "FORWARD_WAIT_S", 1.0)
    with (
        run_gateway(tmp_path / "a", config=_config(pg_url)) as a,
        run_gateway(tmp_path / "b", config=_config(pg_url)) as b,
    ):
        asker, operator = await _client(a), await _client(b)
        await a.gateway.cluster.notices.listening.wait()  # type: ignore[union-attr]
        await b.gateway.cluster.notices.listening.wait()  # type: ignore[union-attr]
        params = {"title": "Deploy?", "description": "push to prod", "timeoutMs": 20_000}
        await asker.send({"type": "req", "id": "ask", "method": "plugin.approval.request", "params": params})
        requested = await operator.event("plugin.approval.requested", timeout=10)  # shown on b
        approval_id = requested["payload"]["id"]
        assert requested["payload"]["request"]["title"] == "Deploy?"
        answer = await operator.request("plugin.approval.resolve", {"id": approval_id, "decision": "allow-once"})
        assert answer["ok"], answer
        decided = await asker.response("ask", timeout=10)
        assert decided["ok"] and decided["payload"]["decision"] == "allow-once", decided
        resolved = await operator.event("plugin.approval.resolved", timeout=10)
        assert resolved["payload"]["id"] == approval_id and resolved["payload"]["decision"] == "allow-once"
        nowhere = await operator.request("plugin.approval.resolve", {"id": "plugin:nope", "decision": "deny"})
        assert nowhere["ok"] is False and nowhere["error"]["details"]["reason"] == "APPROVAL_NOT_FOUND", nowhere
        again = await operator.request("plugin.approval.resolve", {"id": approval_id, "decision": "deny"})
        assert again["ok"] is False  # decided already: nobody has it pending
