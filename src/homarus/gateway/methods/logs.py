"""`logs.tail`: the audit trail (or the raw model stream log) for operators."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal

from pydantic import Field

from homarus.audit.summary import as_log_line
from homarus.errors import Forbidden
from homarus.gateway.router import MethodCall, Params
from homarus.security.scopes import ADMIN

__all__: list[str] = []


class TailParams(Params):
    cursor: int | None = Field(default=None, ge=0)
    limit: int = Field(default=200, ge=1, le=5000)
    run_id: str | None = Field(default=None, alias="runId", max_length=256)
    log: Literal["audit", "raw-stream"] = "audit"
    #: the original's bound on the lines' bytes (the newest lines that fit are kept)
    max_bytes: int | None = Field(default=None, alias="maxBytes", ge=1, le=1_000_000)


async def logs_tail(call: MethodCall, p: TailParams) -> dict[str, Any]:
    if p.log == "raw-stream" and ADMIN not in call.client.scopes:
        # the raw stream holds model output verbatim: admins only
        raise Forbidden("the raw stream log needs operator.admin")
    trail = call.gateway.audit_log if p.log == "audit" else call.gateway.raw_stream_log
    tail = await asyncio.to_thread(lambda: trail.tail(limit=p.limit, run_id=p.run_id, cursor=p.cursor))
    # each line also in the original's log format (its Logs view reads time, level and message)
    lines = [json.dumps(as_log_line(r), ensure_ascii=False, separators=(",", ":")) for r in tail.records]
    records, truncated = tail.records, tail.truncated
    if p.max_bytes is not None:
        kept, used = 0, 0
        for line in reversed(lines):
            used += len(line.encode("utf-8")) + 1
            if used > p.max_bytes:
                break
            kept += 1
        if kept < len(lines):
            lines, records, truncated = lines[len(lines) - kept :], records[len(records) - kept :], True
    # lines/size/reset: the original's shape (its CLI prints lines); records: the same, parsed
    return {
        "file": tail.file,
        "cursor": tail.cursor,
        "size": tail.size,
        "lines": lines,
        "records": records,
        "truncated": truncated,
        "reset": False,
    }
