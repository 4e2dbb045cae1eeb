"""Audit log: every tool call as JSON lines, and an optional list of tools to refuse.

Config (``plugins.entries.audit-log.config``, checked against ``configSchema`` in the manifest):

- ``path``: the JSONL file. Default ``<state dir>/audit/tool-calls.jsonl`` (``api.state_dir``,
  i.e. ``$HOMARUS_STATE_DIR``); ``~`` is expanded and a relative path is taken relative to the
  state dir. The file is created with mode 0600: tool parameters can hold private data.
- ``blockTools``: tool names refused before they run (the model is told ``blockReason``).
- ``blockReason``: default ``"blocked by the audit-log plugin"``.

One line per hook call::

    {"ts": 1700000000123, "phase": "before", "tool": "exec", "params": {...}, "blocked": false,
     "sessionKey": "agent:main:main", "sessionId": "...", "runId": "...", "toolCallId": "..."}
    {"ts": ..., "phase": "after", "tool": "exec", "params": {...}, "result": "...", "error": null,
     "durationMs": 12, "sessionKey": ..., "sessionId": ..., "runId": ..., "toolCallId": ...}

Enable it with ``plugins.load.paths: ["<repo>/examples/plugins"]`` (or copy the directory to
``$HOMARUS_STATE_DIR/extensions/audit-log/``).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from homarus.plugins.api import PluginApi
from homarus.plugins.events import AfterToolCallEvent, BeforeToolCallEvent, BeforeToolCallResult, HookContext

DEFAULT_REASON = "blocked by the audit-log plugin"


def resolve_log_path(raw: str | None, state_dir: Path) -> Path:
    """Where the audit lines go (see the module docstring)."""
    if not raw:
        return state_dir / "audit" / "tool-calls.jsonl"
    path = Path(raw).expanduser()
    return path if path.is_absolute() else state_dir / path


def register(api: PluginApi) -> None:
    cfg = api.plugin_config
    path = resolve_log_path(cfg.get("path"), api.state_dir)
    blocked = frozenset(cfg.get("blockTools", ()))
    reason = str(cfg.get("blockReason") or DEFAULT_REASON)
    started: dict[str, float] = {}  # tool call id → monotonic start, for durations

    def write(record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode("utf-8"))  # one write of one line: lines never interleave
        finally:
            os.close(fd)

    def common(ctx: HookContext, run_id: str | None, tool_call_id: str | None) -> dict[str, Any]:
        return {
            "sessionKey": ctx.session_key,
            "sessionId": ctx.session_id,
            "agentId": ctx.agent_id,
            "runId": run_id or ctx.run_id,
            "toolCallId": tool_call_id or ctx.tool_call_id,
        }

    async def before_tool_call(event: BeforeToolCallEvent, ctx: HookContext) -> BeforeToolCallResult | None:
        refuse = event.tool_name in blocked
        call_id = event.tool_call_id or ctx.tool_call_id
        if call_id and not refuse:
            started[call_id] = time.monotonic()
        write(
            {
                "ts": int(time.time() * 1000),
                "phase": "before",
                "tool": event.tool_name,
                "params": event.params,
                "blocked": refuse,
                **({"reason": reason} if refuse else {}),
                **common(ctx, event.run_id, event.tool_call_id),
            }
        )
        return BeforeToolCallResult(block=True, block_reason=reason) if refuse else None

    async def after_tool_call(event: AfterToolCallEvent, ctx: HookContext) -> None:
        call_id = event.tool_call_id or ctx.tool_call_id
        began = started.pop(call_id, None) if call_id else None
        duration = event.duration_ms
        if duration is None and began is not None:
            duration = int((time.monotonic() - began) * 1000)
        write(
            {
                "ts": int(time.time() * 1000),
                "phase": "after",
                "tool": event.tool_name,
                "params": event.params,
                "result": event.result,
                "error": event.error,
                "durationMs": duration,
                **common(ctx, event.run_id, event.tool_call_id),
            }
        )

    # high priority: a block is terminal, so decide before other plugins rewrite the params
    api.on("before_tool_call", before_tool_call, priority=100)
    api.on("after_tool_call", after_tool_call)
    api.logger.info("audit log at %s; blocking %s", path, sorted(blocked) or "nothing")
