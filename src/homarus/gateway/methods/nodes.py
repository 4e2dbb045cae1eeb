"""``node.list`` / ``node.describe`` (operator.read): Homarus pairs no device nodes (the original's
remote execution hosts) yet, so the list is empty and every node id is unknown — the original's own
answers when nothing is paired, so its ``nodes status`` reports "no nodes" rather than failing."""

from __future__ import annotations

import time
from typing import Any

from pydantic import Field

from homarus.errors import InvalidRequest
from homarus.gateway.router import MethodCall, Params

__all__: list[str] = []


class DescribeParams(Params):
    node_id: str = Field(alias="nodeId", min_length=1, max_length=256)


async def node_list(call: MethodCall, p: Params) -> dict[str, Any]:
    return {"ts": int(time.time() * 1000), "nodes": []}


async def node_describe(call: MethodCall, p: DescribeParams) -> dict[str, Any]:
    raise InvalidRequest("unknown nodeId")


async def node_pair_list(call: MethodCall, p: Params) -> dict[str, Any]:
    """``node.pair.list`` (operator.pairing): no node has asked to pair, none is paired."""
    return {"pending": [], "paired": []}
