"""An operator's WebSocket client on a channel test's gateway."""

from __future__ import annotations

from tests.conftest import TEST_TOKEN, RunningGateway
from tests.wsclient import Client, open_client

__all__ = ["operator"]


async def operator(gw: RunningGateway, scopes: list[str] | None = None) -> Client:
    """A client connected with the test token (``scopes``: asked for; default: the client's)."""
    client = await open_client(gw.url)
    assert (await client.handshake(TEST_TOKEN, scopes=scopes))["ok"]
    return client
