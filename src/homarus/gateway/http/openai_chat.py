"""OpenAI-compatible HTTP API: ``POST /v1/chat/completions``, ``GET /v1/models``, ``/v1/models/{id}``.

Each completion is one agent run in a session (see ``openai_common`` for how the model and the
session key are chosen, ``openai_prompt`` for how messages become the prompt): the agent keeps
its tools, workspace and transcript; the OpenAI client sees only the assistant's text. Streaming
sends the text as it is produced (``openai_stream``); a client that disconnects aborts the run.
``POST /v1/responses`` lives in ``openai_responses``.

Responses use the OpenAI shapes exactly (``chat.completion`` / ``chat.completion.chunk``,
``data: [DONE]``); every error is ``{"error": {"message", "type", "code"?}}``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from homarus.gateway.http.common import bearer_auth
from homarus.gateway.http.openai_common import (
    MODEL_FAMILIES,
    api_error,
    finish_reason,
    not_found,
    open_post,
    outcome_error,
    parse_model,
    resolve_target,
    start_live,
    usage_counts,
)
from homarus.gateway.http.openai_prompt import ApiError, chat_prompt
from homarus.gateway.http.openai_responses import responses_route
from homarus.gateway.http.openai_stream import EventStream, LiveRun, sse_data

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext

__all__ = ["chat_completions", "model_ids", "openai_routes"]

KIND = "openai"


def openai_routes(gateway: GatewayContext) -> list[Route]:
    """The routes to mount; each checks its own ``gateway.http.endpoints.*.enabled`` on every request."""

    async def models(request: Request) -> Response:
        denied = _models_gate(gateway, request)
        if denied is not None:
            return denied
        return JSONResponse({"object": "list", "data": [_model(m) for m in model_ids(gateway)]})

    async def model(request: Request) -> Response:
        denied = _models_gate(gateway, request)
        if denied is not None:
            return denied
        wanted = request.path_params["model"]
        try:
            parse_model(gateway, wanted)
        except ApiError as exc:
            return api_error(ApiError(404, exc.message, code="model_not_found", param="model"))
        return JSONResponse(_model(wanted))

    async def completions(request: Request) -> Response:
        return await chat_completions(gateway, request)

    return [
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/models/{model:path}", model, methods=["GET"]),
        Route("/v1/chat/completions", completions, methods=["POST"]),
        responses_route(gateway),
    ]


def model_ids(gateway: GatewayContext) -> list[str]:
    family = MODEL_FAMILIES[0]
    return [family, *(f"{family}/{agent}" for agent in gateway.sessions.agent_ids)]


def _model(model_id: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": 0, "owned_by": "homarus", "permission": []}


def _models_gate(gateway: GatewayContext, request: Request) -> Response | None:
    endpoints = gateway.config.gateway.http.endpoints
    if not (endpoints.chat_completions.enabled or endpoints.responses.enabled):
        return not_found()
    return bearer_auth(gateway, request)


async def chat_completions(gateway: GatewayContext, request: Request) -> Response:
    body = await open_post(gateway, request, gateway.config.gateway.http.endpoints.chat_completions)
    if isinstance(body, Response):
        return body
    try:
        stream = body.get("stream", False)
        if not isinstance(stream, bool):
            raise ApiError(400, "`stream` must be a boolean.", param="stream")
        options = body.get("stream_options") or {}
        if not isinstance(options, dict):
            raise ApiError(400, "`stream_options` must be an object.", param="stream_options")
        prompt = chat_prompt(body.get("messages"))
        target = resolve_target(gateway, request, body, prefix="openai")
    except ApiError as exc:
        return api_error(exc)
    completion_id = f"chatcmpl-{uuid.uuid4().hex}"
    params = {"model": target.model_name, "stream": stream, "endpoint": "chat.completions"}
    live = await start_live(gateway, request, target, prompt, completion_id, KIND, params)
    if isinstance(live, Response):
        return live
    created = int(time.time())
    if stream:
        chunks = _stream(live, completion_id, created, target.model_name, options.get("include_usage") is True)
        return EventStream(chunks, on_disconnect=live.abort)
    outcome = await live.wait_or_disconnect(request)
    if outcome is None:  # the client is gone; nobody reads this
        return Response(status_code=499)
    failed = outcome_error(outcome)
    if failed is not None:
        return api_error(failed)
    prompt_tokens, completion_tokens, total = usage_counts(outcome.usage)
    text = "" if outcome.silent else outcome.text
    return JSONResponse(
        {
            "id": completion_id,
            "object": "chat.completion",
            "created": created,
            "model": target.model_name,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "logprobs": None,
                    "finish_reason": finish_reason(outcome),
                }
            ],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": total},
        }
    )


async def _stream(
    live: LiveRun, completion_id: str, created: int, model: str, include_usage: bool
) -> AsyncIterator[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        base = {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model}
        return sse_data({**base, "choices": [choice], **extra})

    yield chunk({"role": "assistant", "content": ""})
    async for delta in live.deltas():
        yield chunk({"content": delta})
    outcome = await live.outcome()
    failed = outcome_error(outcome)
    if failed is not None:
        yield sse_data(failed.body())
        yield b"data: [DONE]\n\n"
        return
    yield chunk({}, finish_reason(outcome))
    if include_usage:
        prompt_tokens, completion_tokens, total = usage_counts(outcome.usage)
        yield sse_data(
            {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": total,
                },
            }
        )
    yield b"data: [DONE]\n\n"
