"""What both OpenAI-compatible endpoints share: gate, auth, body, model → agent, session key, usage.

Order of checks for a POST: endpoint enabled (404, so a disabled API looks absent) → bearer
auth (401/429) → body size and JSON (413/408/400) → body is an object → model → session.

Models name agents, not backends: ``homarus`` (or ``openclaw``, for clients configured for the
original) is the default agent, ``homarus/<agentId>`` (also ``homarus:<id>``, ``agent:<id>``,
``openclaw/<id>``) a given one. The backend model is the agent's own; a caller may pick another
through the ``x-homarus-model`` header, checked against the model registry.

Session keys, first match wins: the ``x-homarus-session-key`` (or ``x-openclaw-session-key``)
header; a ``previous_response_id`` (Responses only, resolved by the caller); the ``user`` field
as ``agent:<id>:openai-user:<user>``; else a fresh ``agent:<id>:<prefix>:<uuid>`` per request.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response

from homarus.agents.request import RunRequest
from homarus.agents.runs import RunOutcome
from homarus.config.http_api import HttpEndpointConfig
from homarus.errors import HomarusError
from homarus.gateway.errors import error_response
from homarus.gateway.http.common import BodyError, bearer_auth, read_json_body
from homarus.gateway.http.openai_prompt import ApiError, Prompt
from homarus.gateway.http.openai_stream import LiveRun
from homarus.gateway.services.inbound import sanitize_message
from homarus.sessions.keys import SessionKey

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext

__all__ = [
    "MODEL_FAMILIES",
    "Target",
    "api_error",
    "build_run",
    "finish_reason",
    "header_channel",
    "not_found",
    "open_post",
    "outcome_error",
    "parse_model",
    "resolve_target",
    "start_live",
    "usage_counts",
]

MODEL_FAMILIES = ("homarus", "openclaw")
_USER_SAFE = re.compile(r"[^a-z0-9._@+-]+")
MAX_USER_CHARS = 128


def api_error(exc: ApiError) -> Response:
    return error_response("openai", exc.status, exc.message, kind=exc.kind, code=exc.code, param=exc.param)


def not_found() -> Response:
    return error_response("openai", 404, "Not Found", code="not_found")


async def open_post(
    gateway: GatewayContext, request: Request, endpoint: HttpEndpointConfig
) -> dict[str, Any] | Response:
    """The request's JSON object, or the response refusing it."""
    if not endpoint.enabled:
        return not_found()
    denied = bearer_auth(gateway, request)
    if denied is not None:
        return denied
    try:
        body = await read_json_body(request, endpoint.max_body_bytes)
    except BodyError as exc:
        code = {413: "payload_too_large", 408: "request_timeout"}.get(exc.status, "invalid_json")
        message = "Request body is not valid JSON." if exc.status == 400 else exc.message
        return error_response("openai", exc.status, message, code=code)
    if not isinstance(body, dict):
        return api_error(ApiError(400, "Request body must be a JSON object.", code="invalid_body"))
    return body


def parse_model(gateway: GatewayContext, model: Any) -> tuple[str, str]:
    """(agent id, the model name to echo) for a ``model`` value; ApiError 400/404 when it names nothing."""
    if model is None:
        return gateway.sessions.default_agent, "homarus"
    if not isinstance(model, str) or not model.strip():
        raise ApiError(400, "`model` must be a string.", param="model")
    name = model.strip()
    lowered = name.lower()
    agent: str | None = None
    if lowered in MODEL_FAMILIES:
        return gateway.sessions.default_agent, name
    for family in MODEL_FAMILIES:
        for sep in ("/", ":"):
            if lowered.startswith(family + sep):
                agent = lowered[len(family) + 1 :]
    if lowered.startswith("agent:"):
        agent = lowered[len("agent:") :]
    if agent is None or not agent:
        raise ApiError(
            400,
            f"Invalid `model` {name!r}. Use `homarus` or `homarus/<agentId>` (see GET /v1/models).",
            code="model_not_found",
            param="model",
        )
    if agent == "default":
        return gateway.sessions.default_agent, name
    if agent not in gateway.sessions.agent_ids:
        raise ApiError(404, f"The model `{name}` does not exist.", code="model_not_found", param="model")
    return agent, name


@dataclass(frozen=True)
class Target:
    agent_id: str
    model_name: str
    session_key: SessionKey
    backend_model: str | None


def resolve_target(
    gateway: GatewayContext, request: Request, body: dict[str, Any], *, prefix: str, session: str | None = None
) -> Target:
    """Agent, echoed model name, session key and backend override of a request (ApiError when invalid)."""
    agent, name = parse_model(gateway, body.get("model"))
    header_agent = request.headers.get("x-homarus-agent-id") or request.headers.get("x-openclaw-agent-id")
    if header_agent:
        agent = header_agent.strip().lower()
        if agent not in gateway.sessions.agent_ids:
            raise ApiError(400, f"Unknown agent id {header_agent!r}.", code="agent_not_found")
    explicit = request.headers.get("x-homarus-session-key") or request.headers.get("x-openclaw-session-key")
    user = body.get("user")
    if user is not None and not isinstance(user, str):
        raise ApiError(400, "`user` must be a string.", param="user")
    if explicit and explicit.strip():
        raw = explicit.strip()
    elif session is not None:
        raw = session
    elif user and user.strip():
        raw = f"agent:{agent}:openai-user:{_user_part(user)}"
    else:
        raw = f"agent:{agent}:{prefix}:{uuid.uuid4()}"
    try:
        key = gateway.sessions.resolve_key(raw, agent)
    except HomarusError as exc:
        raise ApiError(400, f"Invalid session key: {exc.message}", code="invalid_session_key") from None
    backend = request.headers.get("x-homarus-model") or request.headers.get("x-openclaw-model")
    if backend:
        try:
            gateway.models.resolve(backend.strip())
        except HomarusError as exc:
            raise ApiError(400, f"Backend model not available: {exc.message}", code="model_not_found") from None
    return Target(agent, name, key, backend.strip() if backend else None)


def _user_part(user: str) -> str:
    """A key-safe form of ``user``; distinct users never share a session (a hash keeps them apart)."""
    raw = user.strip()
    safe = _USER_SAFE.sub("-", raw.lower()).strip("-")[:MAX_USER_CHARS]
    if safe != raw or not safe:
        safe = f"{safe or 'user'}-{hashlib.sha256(raw.encode()).hexdigest()[:12]}"
    return safe


def usage_counts(usage: dict[str, Any]) -> tuple[int, int, int]:
    """(prompt, completion, total) tokens of a run's usage record."""
    prompt = int(usage.get("input") or 0) + int(usage.get("cacheRead") or 0) + int(usage.get("cacheWrite") or 0)
    completion = int(usage.get("output") or 0)
    total = int(usage.get("totalTokens") or 0) or prompt + completion
    return prompt, completion, max(total, prompt + completion)


def header_channel(request: Request) -> str:
    channel = request.headers.get("x-homarus-message-channel") or request.headers.get("x-openclaw-message-channel")
    return (channel or "webchat").strip().lower()[:64] or "webchat"


async def start_live(
    gateway: GatewayContext,
    request: Request,
    target: Target,
    prompt: Prompt,
    run_id: str,
    kind: str,
    params: dict[str, Any],
) -> LiveRun | Response:
    """The started run, or the error response when it cannot start (NUL in the text, store failure)."""
    try:
        message = sanitize_message(prompt.message)
    except HomarusError as exc:
        return api_error(ApiError(400, exc.message, code="invalid_message"))
    live = LiveRun(gateway, build_run(request, target, prompt, run_id, message), kind, params)
    try:
        await live.start()
    except HomarusError as exc:
        return api_error(ApiError(exc.http_status, exc.message, kind=exc.http_type))
    return live


def build_run(request: Request, target: Target, prompt: Prompt, run_id: str, message: str) -> RunRequest:
    return RunRequest(
        run_id=run_id,
        session_key=target.session_key,
        message=message,
        images=prompt.images,
        model=target.backend_model,
        extra_system_prompt=prompt.system,
        channel=header_channel(request),
        # a request is one run of its own: never steered into (or collected with) another run
        queue_mode="followup",
        trigger="user",
    )


def outcome_error(outcome: RunOutcome) -> ApiError | None:
    if outcome.status == "error":
        return ApiError(500, outcome.error or "internal error", kind="api_error", code="run_failed")
    if outcome.status == "timeout":
        return ApiError(504, outcome.error or "run timed out", kind="api_error", code="timeout")
    return None


def finish_reason(outcome: RunOutcome) -> str:
    return "length" if outcome.stop_reason == "length" else "stop"
