"""`POST /tools/invoke`: call one tool over HTTP through the same policy and hooks as a model call.

Order of checks: method (405, before auth) → bearer auth (401/429) → body (413/408/400) →
`tool` present (400) → policy for the session plus the HTTP deny list (404, also for unknown
tools, so callers cannot probe what exists) → `before_tool_call` (403 when blocked) → run
(400 for bad arguments, 500 when the tool fails) → `after_tool_call`.

Every call that passed authentication is in the audit trail like a model's tool call (a token
holder calling a tool directly is the riskiest thing the API allows): a ``run.start`` with trigger
``http`` and the caller (address, user agent), the ``tool.call`` with the redacted arguments, the
decision (``allowed``, ``blocked:policy``, ``blocked:hook``, ``approved``/``denied``), status and
duration, and a ``run.end``. A dry run is recorded as such.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from homarus.agents.hook_bridge import RuntimeHooks
from homarus.audit.trail import RunAudit
from homarus.errors import HomarusError, InvalidRequest
from homarus.gateway.http.common import BodyError, bearer_auth, json_error, read_json_body
from homarus.gateway.services.approvals import approve_tool_call
from homarus.gateway.services.tooling import prepare_tools
from homarus.messages import TextContent, ToolCall, ToolResultMessage
from homarus.plugins.events import HookContext
from homarus.security.tool_policy import normalize_tool_name

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext

__all__ = ["MAX_BODY_BYTES", "tools_invoke_routes"]

MAX_BODY_BYTES = 2 * 1024 * 1024


def tools_invoke_routes(gateway: GatewayContext) -> list[Route]:
    async def invoke(request: Request) -> Response:
        denied = bearer_auth(gateway, request)
        if denied is not None:
            return denied
        try:
            body = await read_json_body(request, MAX_BODY_BYTES)
        except BodyError as exc:
            return json_error(exc.status, "invalid_request_error", exc.message)
        if not isinstance(body, dict):
            return json_error(400, "invalid_request_error", "tools.invoke body must be a JSON object")
        raw_tool = body.get("tool")
        if not isinstance(raw_tool, str) or not raw_tool.strip():
            return json_error(400, "invalid_request_error", "tools.invoke requires body.tool")
        args = body.get("args", {})
        if args is None:
            args = {}
        if not isinstance(args, dict):
            return json_error(400, "invalid_request_error", "tools.invoke body.args must be an object")
        try:
            key = gateway.sessions.resolve_key(
                body.get("sessionKey") if isinstance(body.get("sessionKey"), str) else None
            )
        except HomarusError as exc:
            return json_error(400, "invalid_request_error", exc.message)
        name = normalize_tool_name(raw_tool)
        audit = _audit(gateway, request, key.canonical, key.agent_id)
        hidden = await prepare_tools(gateway, key.agent_id)  # a lazy MCP server starts on this need too
        tool = gateway.tools.get(name) if name not in hidden else None
        if tool is None or name not in gateway.tool_access.names_for(key, http=True):
            if audit is not None:
                _refused(audit, name, args, "blocked:policy", "tool not available to HTTP callers")
            return json_error(404, "not_found", f"Tool not available: {raw_tool.strip()}")
        action = body.get("action")
        props = tool.parameters.get("properties", {})
        if isinstance(action, str) and "action" in props and "action" not in args:
            args = {**args, "action": action}
        if body.get("dryRun") is True:
            if audit is not None:
                _refused(audit, name, args, "dry-run", None)
            return JSONResponse({"ok": True, "result": {"dryRun": True, "tool": name, "args": args}})
        return await _run(gateway, tool, name, args, key.canonical, key.agent_id, audit)

    return [Route("/tools/invoke", invoke, methods=["POST"])]


def _audit(gateway: GatewayContext, request: Request, session_key: str, agent_id: str) -> RunAudit | None:
    if not gateway.config.logging.audit.enabled:
        return None
    audit = RunAudit(gateway.audit_log, f"http-{uuid.uuid4()}", session_key, agent_id)
    caller = {
        "kind": "http",
        "path": "/tools/invoke",
        "ip": request.client.host if request.client else None,
        "userAgent": (request.headers.get("user-agent") or "")[:200] or None,
    }
    audit.run_start(trigger="http", channel=None, origin={k: v for k, v in caller.items() if v}, model=None)
    return audit


def _refused(audit: RunAudit, name: str, args: dict[str, Any], decision: str, reason: str | None) -> None:
    call_id = f"call_{uuid.uuid4().hex[:12]}"
    audit.decided(call_id, decision, reason=reason)
    status = "ok" if decision == "dry-run" else "error"
    audit.tool_call(
        tool_call_id=call_id,
        tool=name,
        args=args,
        is_error=status == "error",
        duration_ms=0,
        details=None,
        error_text=reason,
    )
    audit.run_end(status=status, error=reason)


async def _run(
    gateway: GatewayContext,
    tool: Any,
    name: str,
    args: dict[str, Any],
    session_key: str,
    agent_id: str,
    audit: RunAudit | None,
) -> Response:
    run_id = audit.run_id if audit is not None else f"http-{uuid.uuid4()}"
    call_id = f"call_{uuid.uuid4().hex[:12]}"
    abort = asyncio.Event()
    ctx = HookContext(agent_id=agent_id, session_key=session_key, run_id=run_id, trigger="http")
    hooks = RuntimeHooks(
        gateway.hooks, ctx, gateway.spawn, abort=abort, approve=approve_tool_call(gateway), audit=audit
    )
    call = ToolCall(call_id, name, args)
    decided = await hooks.before_tool(call)
    if isinstance(decided, str):
        if audit is not None:  # the decision (blocked:hook, denied approval) was recorded by the hooks
            audit.tool_call(
                tool_call_id=call_id,
                tool=name,
                args=args,
                is_error=True,
                duration_ms=0,
                details=None,
                error_text=decided,
            )
            audit.run_end(status="error", error=decided)
        return json_error(403, "tool_call_blocked", decided)
    started = time.monotonic()
    workspace = gateway.runtime.workspace_dir(agent_id, gateway.config)
    tool_ctx = gateway.runtime.wiring.tool_context(
        gateway.sessions.resolve_key(session_key), run_id, call_id, workspace, abort
    )
    response: Response
    try:
        outcome = await tool.execute(tool_ctx, decided.arguments)
    except InvalidRequest as exc:
        result = ToolResultMessage(call_id, name, [TextContent(exc.message)], is_error=True)
        response = json_error(400, "tool_error", exc.message)
        error: str | None = exc.message
    except Exception:
        result = ToolResultMessage(call_id, name, [TextContent("tool execution failed")], is_error=True)
        response = json_error(500, "tool_error", "tool execution failed")
        error = "tool execution failed"
    else:
        result = ToolResultMessage(call_id, name, list(outcome.content), outcome.is_error, outcome.details)
        payload: dict[str, Any] = {"content": [b.to_json() for b in outcome.content]}
        if outcome.details is not None:
            payload["details"] = outcome.details
        if outcome.is_error:
            payload["isError"] = True
        response = JSONResponse({"ok": True, "result": payload})
        error = result.text[:500] if outcome.is_error else None
    hooks.after_tool(decided, result, int((time.monotonic() - started) * 1000))
    if audit is not None:
        audit.run_end(status="error" if result.is_error else "ok", error=error)
    return response
