"""One audit record as a line a person reads (``homarus logs``) and as a line of the original's
log format (``logs.tail``: its Control UI's Logs view reads ``time``, ``_meta.logLevelName`` and
``message`` of each line)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

__all__ = ["as_log_line", "describe"]


def describe(r: dict[str, Any]) -> str:
    """What happened, without the time: ``run.start agent:main:main trigger=user by=cli``."""
    kind = str(r.get("type") or r.get("event") or "?")
    if kind == "run.start":
        origin = r.get("origin") or {}
        who = origin.get("clientId") or origin.get("path") or origin.get("jobId") or origin.get("kind") or "-"
        what = f"{r.get('sessionKey')} trigger={r.get('trigger')} by={who}"
    elif kind == "model.call":
        usage = r.get("usage") or {}
        what = f"{r.get('provider')}/{r.get('model')} {r.get('durationMs')}ms stop={r.get('stopReason')}"
        what += f" tokens={usage.get('input', '?')}/{usage.get('output', '?')}"
    elif kind == "tool.call":
        by = f" by={r['by']}" if r.get("by") else ""
        what = f"{r.get('tool')} {r.get('decision')}{by} {r.get('status')} {r.get('durationMs')}ms"
        what += f" args={json.dumps(r.get('args'), ensure_ascii=False)[:200]}"
    elif kind == "run.end":
        what = f"{r.get('status')} {r.get('durationMs')}ms" + (f" error={r['error']}" if r.get("error") else "")
    else:
        what = json.dumps({k: v for k, v in r.items() if k not in ("ts", "runId")}, ensure_ascii=False)[:300]
    return f"{kind:<10} {str(r.get('runId', ''))[:36]} {what}"


def _level(r: dict[str, Any]) -> str:
    failed = r.get("status") in ("error", "timeout") or str(r.get("decision") or "").startswith("blocked")
    return "WARN" if failed else "INFO"


def as_log_line(r: dict[str, Any]) -> dict[str, Any]:
    """``r`` with the original's log-line fields beside its own."""
    when = datetime.fromtimestamp(int(r.get("ts", 0)) / 1000, UTC)
    iso = when.isoformat(timespec="milliseconds")
    meta = {"logLevelName": _level(r), "name": '{"subsystem":"audit"}', "date": iso.replace("+00:00", "Z")}
    return {**r, "time": iso, "_meta": meta, "message": describe(r)}
