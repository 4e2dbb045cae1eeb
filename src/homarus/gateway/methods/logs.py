"""`logs.tail`: the audit trail (or the raw model stream log) for operators."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from pydantic import Field

from homarus.audit.log import read_records
from homarus.errors import Forbidden
from homarus.gateway.router import MethodCall, Params
from homarus.security.scopes import ADMIN

__all__: list[str] = []


class TailParams(Params):
    cursor: int | None = Field(default=None, ge=0)
    limit: int = Field(default=200, ge=1, le=5000)
    run_id: str | None = Field(default=None, alias="runId", max_length=256)
    log: Literal["audit", "raw-stream"] = "audit"


async def logs_tail(call: MethodCall, p: TailParams) -> dict[str, Any]:
    if p.log == "raw-stream" and ADMIN not in call.client.scopes:
        # the raw stream holds model output verbatim: admins only
        raise Forbidden("the raw stream log needs operator.admin")
    directory = call.gateway.paths.state_dir / "logs"
    tail = await asyncio.to_thread(
        read_records, directory, limit=p.limit, run_id=p.run_id, cursor=p.cursor, prefix=p.log
    )
    return {"file": tail.file, "cursor": tail.cursor, "records": tail.records, "truncated": tail.truncated}
