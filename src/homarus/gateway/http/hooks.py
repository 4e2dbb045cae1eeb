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
original's shape). What a hook does once it is parsed (policy, the journaled run, delivery,
idempotency) is the ``usecases.webhooks`` use case; the idempotency key comes from a header
(``Idempotency-Key``/``X-Homarus-Idempotency-Key``/``X-OpenClaw-Idempotency-Key``) or the body
(``idempotencyKey``), ≤ 256 characters.
"""

from __future__ import annotations

import logging
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from homarus.errors import InvalidRequest
from homarus.gateway.errors import error_response, retry_after
from homarus.gateway.http.common import BodyError, read_json_body
from homarus.gateway.http.hooks_mapping import MappingFailed, TransformLoader, match_mapping, now_iso
from homarus.gateway.http.hooks_mapping import resolve_action as mapping_action
from homarus.security.auth import secrets_equal
from homarus.security.ratelimit import FailureLimiter
from homarus.usecases.webhooks import HookAction, Webhooks

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext

__all__ = ["NO_QUERY_AUTH_MESSAGE", "hooks_routes"]

log = logging.getLogger("homarus.hooks")

NO_QUERY_AUTH_MESSAGE: Final = (
    "Hook token must be provided via Authorization: Bearer <token> or X-OpenClaw-Token header "
    "(query parameters are not allowed)."
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
        self.webhooks = Webhooks(gateway)
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
        answer = await self.webhooks.submit(sub, action, idem)
        return JSONResponse(answer.payload, status_code=answer.status)

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


def hooks_routes(gateway: GatewayContext) -> list[Route]:
    hooks = HooksEndpoint(gateway)

    async def endpoint(request: Request) -> Response:  # a function: Starlette calls it with the request
        return await hooks(request)

    base = gateway.config.hooks.path
    every = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
    return [Route(base, endpoint, methods=every), Route(base + "/{rest:path}", endpoint, methods=every)]
