"""What the audit trail records about a run, and how arguments are made safe to record.

Records (``type``):

* ``run.start``: run id, session key, agent, trigger (user, hook, cron, heartbeat, …), channel and
  who asked (``origin``: the connection's client id and name, the hook path, the cron job);
* ``model.call``: provider, model, duration, stop reason, token usage — never prompt or reply text;
* ``tool.call``: tool name, arguments (credential-like keys and values redacted, long strings cut),
  the decision (``allowed``, ``blocked:policy``, ``blocked:hook``, ``blocked:approval``,
  ``approved`` with who approved, ``denied`` by the exec policy), result status and duration;
* ``run.end``: status, duration, error.

:class:`RunAudit` is the per-run writer the agent loop's hook bridge calls; it keeps the decision
taken before a tool ran until the tool's end is recorded.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from homarus.config.redact import is_sensitive_key

__all__ = ["AuditSink", "RunAudit", "redact_args"]

MAX_STRING: Final = 1000
REDACTED: Final = "[redacted]"
_SECRET_VALUE = re.compile(
    r"(sk-[A-Za-z0-9_-]{16,}|sk-ant-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|"
    r"AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{30,}|Bearer\s+[A-Za-z0-9._~+/=-]{12,}|-----BEGIN [A-Z ]*PRIVATE KEY-----)"
)


class AuditSink(Protocol):
    def write(self, record: dict[str, Any]) -> None: ...


def redact_args(value: Any, depth: int = 0) -> Any:
    """``value`` with credential-like keys and token-looking strings redacted, strings cut, depth bounded."""
    if depth > 6:
        return "[…]"
    if isinstance(value, dict):
        return {
            str(k): REDACTED if is_sensitive_key(str(k)) else redact_args(v, depth + 1)
            for k, v in list(value.items())[:100]
        }
    if isinstance(value, list | tuple):
        return [redact_args(v, depth + 1) for v in list(value)[:100]]
    if isinstance(value, str):
        text = _SECRET_VALUE.sub(REDACTED, value)
        return text if len(text) <= MAX_STRING else text[:MAX_STRING] + f"…[{len(text) - MAX_STRING} more chars]"
    return value


@dataclass(slots=True)
class RunAudit:
    sink: AuditSink
    run_id: str
    session_key: str
    agent_id: str
    #: tool call id → decision taken before it ran (absent: nothing stood in its way)
    decisions: dict[str, dict[str, Any]] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)

    def _write(self, kind: str, **fields: Any) -> None:
        self.sink.write({"type": kind, "runId": self.run_id, "sessionKey": self.session_key, **fields})

    def run_start(self, *, trigger: str, channel: str | None, origin: dict[str, Any] | None, model: str | None) -> None:
        self._write("run.start", agentId=self.agent_id, trigger=trigger, channel=channel, origin=origin, model=model)

    def run_end(self, *, status: str, error: str | None = None, usage: dict[str, Any] | None = None) -> None:
        duration = int((time.monotonic() - self.started) * 1000)
        self._write("run.end", status=status, error=error, durationMs=duration, usage=usage or None)

    def model_call(
        self, *, provider: str, model: str, duration_ms: int, stop_reason: str, usage: dict[str, Any]
    ) -> None:
        self._write(
            "model.call", provider=provider, model=model, durationMs=duration_ms, stopReason=stop_reason, usage=usage
        )

    def decided(self, tool_call_id: str, decision: str, **details: Any) -> None:
        self.decisions[tool_call_id] = {"decision": decision, **{k: v for k, v in details.items() if v is not None}}

    def tool_call(
        self,
        *,
        tool_call_id: str,
        tool: str,
        args: dict[str, Any],
        is_error: bool,
        duration_ms: int,
        details: Any,
        error_text: str | None,
    ) -> None:
        decided = self.decisions.pop(tool_call_id, None) or {"decision": "allowed"}
        info = details if isinstance(details, dict) else {}
        if info.get("approval") in ("allow-once", "allow-always"):
            decided = {
                "decision": "approved",
                "approval": info.get("approval"),
                "approvalId": info.get("approvalId"),
                "by": info.get("approvedBy"),
            }
        elif info.get("status") == "denied" and decided["decision"] == "allowed":
            decided = {"decision": "denied", "approval": info.get("approval"), "approvalId": info.get("approvalId")}
        status = "error" if is_error else "ok"
        self._write(
            "tool.call",
            toolCallId=tool_call_id,
            tool=tool,
            args=redact_args(args),
            **{k: v for k, v in decided.items() if v is not None},
            status=status,
            error=(error_text or "")[:500] if is_error else None,
            durationMs=duration_ms,
        )
