"""Public webhooks: ``POST <hooks.path>/wake``, ``/agent`` and ``/<mapping>`` (openclaw-protocol.md §5.3,
security.md §5.5).

Checks, in order: a ``?token=`` query → 400 (even with the right token); not POST → 405; a locked-out
client IP → 429 + ``Retry-After``; the token (``Authorization: Bearer``, ``X-Homarus-Token`` or
``X-OpenClaw-Token``, constant-time) → 401, each miss counted per IP (20 in 60 s lock it out for
60 s; loopback is not exempt); an empty or odd sub-path → 404; the body (``hooks.maxBodyBytes``,
declared or streamed → 413, 30 s → 408, bad JSON → 400; empty or non-object JSON → ``{}``). The
hook token authenticates nothing else, and the gateway token does not open hooks.

``/agent`` is accepted at once (202 ``{ok, runId}``), or with ``waitForCompletion: true`` answered
when the run ended (200 ``{ok, runId, completion: {status, replyDisposition, delivered?, …}}``, the
original's shape): the run is journaled before the answer, runs
on the ``cron`` lane in its own session (``agent:<id>:hook:<uuid>`` unless policy allows a key), and
a run accepted but never started is run after a restart. A reply is delivered as a system event
on the main session (``deliver``, default true). External text is wrapped as untrusted content
unless the mapping sets ``allowUnsafeExternalContent``. The same idempotency key (header
``Idempotency-Key``/``X-Homarus-Idempotency-Key``/``X-OpenClaw-Idempotency-Key`` or body
``idempotencyKey``, ≤ 256 chars) returns the first ``runId``: for 5 minutes from memory (``/wake``
too), and for ``/agent`` runs as long as the run journal keeps the run (the key names the run), so
a retry after a crash or a restart never starts a second run.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import re
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from homarus.errors import InvalidRequest
from homarus.gateway.errors import error_response, retry_after
from homarus.gateway.http.common import BodyError, read_json_body
from homarus.gateway.http.hooks_mapping import HookAction, MappingFailed, TransformLoader, match_mapping, now_iso
from homarus.gateway.http.hooks_mapping import resolve_action as mapping_action
from homarus.gateway.services.hook_runs import accept_and_run, wait_recorded
from homarus.queue.dedupe import DedupeCache
from homarus.security.auth import secrets_equal
from homarus.security.external_content import wrap_external_content
from homarus.security.ratelimit import FailureLimiter
from homarus.sessions.keys import AGENT_ID_RE

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext

__all__ = ["NO_QUERY_AUTH_MESSAGE", "hooks_routes"]

log = logging.getLogger("homarus.hooks")

NO_QUERY_AUTH_MESSAGE: Final = (
    "Hook token must be provided via Authorization: Bearer <token> or X-OpenClaw-Token header "
    "(query parameters are not allowed)."
)
SESSION_KEY_DISABLED: Final = (
    "sessionKey is disabled for external /hooks/agent payloads; set hooks.allowRequestSessionKey=true to enable"
)
_SUB_PATH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_BODY_ERRORS: Final = {413: "payload too large", 408: "request body timeout"}


def _fail(status: int, error: str) -> Response:
    return error_response("hooks", status, error)


def _token_of(request: Request) -> str | None:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    for header in ("x-homarus-token", "x-openclaw-token"):
        if request.headers.get(header, "").strip():
            return request.headers[header].strip()
    return None


def _idempotency_key(request: Request, body: dict[str, Any]) -> str | None:
    for raw in (
        request.headers.get("idempotency-key"),
        request.headers.get("x-homarus-idempotency-key"),
        request.headers.get("x-openclaw-idempotency-key"),
        body.get("idempotencyKey"),
    ):
        if isinstance(raw, str) and raw.strip():
            key = raw.strip()
            return key if len(key) <= 256 else None
    return None


class HooksEndpoint:
    def __init__(self, gateway: GatewayContext) -> None:
        self.gateway = gateway
        cfg = gateway.config.hooks
        self.limiter = FailureLimiter(cfg.max_auth_failures, 60.0, 60.0)
        self.dedupe = DedupeCache(ttl_s=300.0, max_entries=1000)
        transforms = Path(cfg.transforms_dir) if cfg.transforms_dir else None
        if transforms is None:
            transforms = gateway.paths.config_path.parent / "hooks" / "transforms"
        elif not transforms.is_absolute():
            transforms = gateway.paths.config_path.parent / transforms
        self.transforms = TransformLoader(transforms)

    def _shares_gateway_secret(self, token: str) -> bool:
        secret = self.gateway.auth.shared_secret
        if secret and secrets_equal(token, secret):
            log.error("hooks are disabled: hooks.token equals the gateway token (give webhooks their own secret)")
            return True
        return False

    # -- the checks -------------------------------------------------------------------------------
    async def __call__(self, request: Request) -> Response:
        cfg = self.gateway.config.hooks
        if not cfg.enabled or cfg.token is None or self._shares_gateway_secret(cfg.token.get_secret_value()):
            return error_response("plain", 404, "Not Found")
        if "token" in request.query_params:
            return error_response("plain", 400, NO_QUERY_AUTH_MESSAGE)
        if request.method != "POST":
            return error_response("plain", 405, "Method Not Allowed", headers={"Allow": "POST"})
        ip = request.client.host if request.client else "unknown"
        if (wait := self.limiter.retry_after(ip)) is not None:
            return error_response("plain", 429, "Too Many Requests", headers=retry_after(wait))
        token = _token_of(request)
        if token is None or not secrets_equal(token, cfg.token.get_secret_value()):
            self.limiter.record_failure(ip)
            return error_response("plain", 401, "Unauthorized")
        self.limiter.reset(ip)
        sub = str(request.path_params.get("rest", "")).strip("/")
        if not sub or not _SUB_PATH.fullmatch(sub):
            return error_response("plain", 404, "Not Found")
        try:
            raw = await read_json_body(request, cfg.max_body_bytes)
        except BodyError as exc:
            return _fail(exc.status, _BODY_ERRORS.get(exc.status, f"invalid JSON body: {exc.message}"))
        body: dict[str, Any] = raw if isinstance(raw, dict) else {}
        try:
            return await self._dispatch(request, sub, body)
        except InvalidRequest as exc:
            return _fail(400, exc.message)
        except MappingFailed as exc:
            log.error("hook mapping %r failed: %s", sub, exc)
            return _fail(500, "hook mapping failed")

    async def _dispatch(self, request: Request, sub: str, body: dict[str, Any]) -> Response:
        idem = _idempotency_key(request, body)
        if sub == "wake":
            text = body.get("text")
            if not isinstance(text, str) or not text.strip():
                raise InvalidRequest("text required")
            mode = body.get("mode", "now")
            if mode not in ("now", "next-heartbeat"):
                raise InvalidRequest("mode must be now or next-heartbeat")
            action = HookAction("wake", text=text, mode=mode, name="Hook")
        elif sub == "agent":
            action = self._agent_action(body)
        else:
            mapping = match_mapping(self.gateway.config.hooks.mappings, sub, body)
            if mapping is None:
                return error_response("plain", 404, "Not Found")
            context = {
                "payload": body,
                "headers": {k.lower(): v for k, v in request.headers.items() if k.lower() != "authorization"},
                "query": dict(request.query_params),
                "path": sub,
                "now": now_iso(),
            }
            resolved = await mapping_action(mapping, context, self.transforms)
            if resolved is None:
                return Response(status_code=204)
            action = resolved
        return await self._run(sub, action, idem)

    def _agent_action(self, body: dict[str, Any]) -> HookAction:
        message = body.get("message")
        if not isinstance(message, str) or not message.strip():
            raise InvalidRequest("message required")
        channel = body.get("channel")
        if channel is not None and channel != "last":
            raise InvalidRequest("channel must be last")
        model = body.get("model")
        if "model" in body and (not isinstance(model, str) or not model.strip()):
            raise InvalidRequest("model required")
        timeout = body.get("timeoutSeconds")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
            raise InvalidRequest("timeoutSeconds must be a positive number")
        wait = body.get("waitForCompletion")
        if wait is not None and not isinstance(wait, bool):
            raise InvalidRequest("waitForCompletion must be boolean")
        thinking, name = body.get("thinking"), body.get("name")
        return HookAction(
            "agent",
            message=message,
            mode="next-heartbeat" if body.get("wakeMode") == "next-heartbeat" else "now",
            name=name.strip()[:128] if isinstance(name, str) and name.strip() else "Hook",
            agent_id=body.get("agentId") if isinstance(body.get("agentId"), str) else None,
            session_key=body.get("sessionKey") if isinstance(body.get("sessionKey"), str) else None,
            deliver=body.get("deliver") is not False,
            model=model.strip() if isinstance(model, str) else None,
            thinking=thinking if isinstance(thinking, str) and thinking.strip() else None,
            timeout_seconds=math.floor(timeout) if timeout is not None else None,
            extra={"requestSessionKey": "sessionKey" in body, "wait": wait is True},
        )

    # -- policy ------------------------------------------------------------------------------------
    def _agent_id(self, requested: str | None) -> str:
        cfg = self.gateway.config
        default = cfg.agents.default_id
        candidate = requested.strip().lower() if requested and AGENT_ID_RE.match(requested.strip().lower()) else None
        allowed = cfg.hooks.allowed_agent_ids
        if candidate is not None and allowed is not None and "*" not in allowed and candidate not in allowed:
            raise InvalidRequest("agentId is not allowed by hooks.allowedAgentIds")
        agent = candidate if candidate in cfg.agents.ids else default
        if allowed is not None and "*" not in allowed and agent not in allowed:
            raise InvalidRequest("agentId is not allowed by hooks.allowedAgentIds")
        return agent

    def _session_key(self, action: HookAction, agent_id: str) -> str:
        cfg = self.gateway.config.hooks
        if action.extra.get("requestSessionKey") and not cfg.allow_request_session_key:
            raise InvalidRequest(SESSION_KEY_DISABLED)
        key = (action.session_key or "").strip() or cfg.default_session_key or f"hook:{uuid.uuid4()}"
        prefixes = [p.lower() for p in cfg.allowed_session_key_prefixes]
        if prefixes and not any(key.lower().startswith(p) for p in prefixes):
            raise InvalidRequest(f"sessionKey must start with one of: {', '.join(cfg.allowed_session_key_prefixes)}")
        parts = key.split(":")
        if parts[0] == "agent" and len(parts) >= 3:  # rebound to the target agent, never another one
            key = ":".join(parts[2:])
        return f"agent:{agent_id}:{key}"

    # -- running -----------------------------------------------------------------------------------
    async def _run(self, sub: str, action: HookAction, idem: str | None) -> Response:
        gw = self.gateway
        agent_id = self._agent_id(action.agent_id)
        dedupe_key = None
        if idem is not None:
            scope = json.dumps({"path": sub, "agent": agent_id, "kind": action.kind}, sort_keys=True)
            dedupe_key = hashlib.sha256(f"{scope}\x00{idem}".encode()).hexdigest()
            cached = self.dedupe.get(dedupe_key)
            if cached is not None:
                if action.kind == "agent" and action.extra.get("wait"):
                    return await self._completed(str(cached.payload["runId"]), None, action)
                return JSONResponse(cached.payload, status_code=200 if action.kind == "wake" else 202)
        if action.kind == "wake":
            text = action.text if action.allow_unsafe else wrap_external_content(action.text, source="Webhook")
            await gw.heartbeats.wake(
                text, mode="next-heartbeat" if action.mode == "next-heartbeat" else "now", source="hook"
            )
            payload: dict[str, Any] = {"ok": True, "mode": action.mode}
        else:
            session = self._session_key(action, agent_id)
            # a key names its run for good: a retry after a crash or restart finds it in the journal
            run_id = str(uuid.UUID(dedupe_key[:32])) if dedupe_key is not None else str(uuid.uuid4())
            params = {
                "message": action.message
                if action.allow_unsafe
                else wrap_external_content(action.message, source="Webhook"),
                "sessionKey": session,
                "name": action.name,
                "deliver": action.deliver,
                "wakeMode": action.mode,
                "model": action.model,
                "thinking": action.thinking,
                "timeoutSeconds": action.timeout_seconds,
                "path": sub,
            }
            _created, task = await accept_and_run(gw, run_id, params)
            payload = {"ok": True, "runId": run_id}
            if dedupe_key is not None:
                self.dedupe.put(dedupe_key, "accepted", payload=payload)
            if action.extra.get("wait"):
                return await self._completed(run_id, task, action)
            return JSONResponse(payload, status_code=202)
        if dedupe_key is not None:
            self.dedupe.put(dedupe_key, "accepted", payload=payload)
        return JSONResponse(payload, status_code=200)

    async def _completed(self, run_id: str, task: asyncio.Task[dict[str, Any]] | None, action: HookAction) -> Response:
        """``waitForCompletion``: 200 ``{ok, runId, completion}`` once the run ended (the original's
        answer); a run that outlives its own timeout and a margin is answered 202 as if not waited."""
        limit = float(action.timeout_seconds or self.gateway.config.agents.defaults.timeout_seconds) + 30.0
        completion: dict[str, Any] | None
        if task is not None:
            try:
                completion = await asyncio.wait_for(asyncio.shield(task), limit)
            except TimeoutError:
                completion = None
        else:  # a retry of a run already accepted: the journal says when it ends
            completion = await wait_recorded(self.gateway, run_id, limit)
        if completion is None:
            return JSONResponse({"ok": True, "runId": run_id, "pending": True}, status_code=202)
        return JSONResponse({"ok": True, "runId": run_id, "completion": completion}, status_code=200)


def hooks_routes(gateway: GatewayContext) -> list[Route]:
    hooks = HooksEndpoint(gateway)

    async def endpoint(request: Request) -> Response:  # a function: Starlette calls it with the request
        return await hooks(request)

    base = gateway.config.hooks.path
    every = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
    return [Route(base, endpoint, methods=every), Route(base + "/{rest:path}", endpoint, methods=every)]
