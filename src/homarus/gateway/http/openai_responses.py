"""``POST /v1/responses``: the OpenAI Responses API over an agent run.

One response = one run (its id is the run id, ``resp_<hex>``), answering with one output
message item (``msg_<hex>``) holding one ``output_text`` part. Streaming sends the event
sequence clients expect — ``response.created``, ``response.in_progress``,
``response.output_item.added``, ``response.content_part.added``, ``response.output_text.delta``…,
``response.output_text.done``, ``response.content_part.done``, ``response.output_item.done``,
then ``response.completed`` (or ``response.failed``) — each as ``event: <type>`` + ``data:``, with a
``sequence_number``, ending with ``data: [DONE]``.

``previous_response_id`` continues the session of that response. The mapping is the run
journal (kind ``openresponses``), so it survives a gateway restart; a response id of another
kind, or of another agent than the requested model's, is refused.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from homarus.agents.runs import RunOutcome
from homarus.gateway.http.openai_common import (
    api_error,
    open_post,
    outcome_error,
    resolve_target,
    start_live,
    usage_counts,
)
from homarus.gateway.http.openai_prompt import ApiError, responses_prompt
from homarus.gateway.http.openai_stream import EventStream, LiveRun, sse_event

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext

__all__ = ["KIND", "responses_route"]

KIND = "openresponses"


def responses_route(gateway: GatewayContext) -> Route:
    async def responses(request: Request) -> Response:
        return await create_response(gateway, request)

    return Route("/v1/responses", responses, methods=["POST"])


async def _previous_session(gateway: GatewayContext, body: dict[str, Any]) -> str | None:
    previous = body.get("previous_response_id")
    if previous is None:
        return None
    if not isinstance(previous, str) or not previous.startswith("resp_") or len(previous) > 128:
        raise ApiError(400, "`previous_response_id` must be a response id.", param="previous_response_id")
    record = await asyncio.to_thread(gateway.journal.get, previous)
    if record is None or record.kind != KIND or not record.session_key:
        raise ApiError(
            404,
            f"Previous response with id '{previous}' not found.",
            code="previous_response_not_found",
            param="previous_response_id",
        )
    if "model" not in body and record.agent_id:
        body["model"] = f"homarus/{record.agent_id}"  # continuing: the agent of that response
    return record.session_key


async def create_response(gateway: GatewayContext, request: Request) -> Response:
    body = await open_post(gateway, request, gateway.config.gateway.http.endpoints.responses)
    if isinstance(body, Response):
        return body
    try:
        stream = body.get("stream", False)
        if not isinstance(stream, bool):
            raise ApiError(400, "`stream` must be a boolean.", param="stream")
        prompt = responses_prompt(body.get("input"), body.get("instructions"))
        session = await _previous_session(gateway, body)
        target = resolve_target(gateway, request, body, prefix=KIND, session=session)
    except ApiError as exc:
        return api_error(exc)
    resp = _Resp(
        f"resp_{uuid.uuid4().hex}",
        f"msg_{uuid.uuid4().hex}",
        int(time.time()),
        target.model_name,
        body.get("previous_response_id"),
        body.get("instructions") if isinstance(body.get("instructions"), str) else None,
        metadata if isinstance(metadata := body.get("metadata"), dict) else {},
    )
    params = {"model": target.model_name, "stream": stream, "endpoint": "responses"}
    live = await start_live(gateway, request, target, prompt, resp.id, KIND, params)
    if isinstance(live, Response):
        return live
    if stream:
        return EventStream(_stream(live, resp), on_disconnect=live.abort)
    outcome = await live.wait_or_disconnect(request)
    if outcome is None:
        return Response(status_code=499)
    failed = outcome_error(outcome)
    if failed is not None:
        return api_error(failed)
    text = "" if outcome.silent else outcome.text
    return JSONResponse(resp.body("completed", [resp.item(text, "completed")], outcome))


class _Resp:
    """The ids and request echoes of one response, and its JSON at each stage."""

    def __init__(
        self,
        resp_id: str,
        msg_id: str,
        created: int,
        model: str,
        previous: Any,
        instructions: str | None,
        metadata: dict[str, Any],
    ) -> None:
        self.id = resp_id
        self.msg_id = msg_id
        self.created = created
        self.model = model
        self.previous = previous if isinstance(previous, str) else None
        self.instructions = instructions
        self.metadata = metadata

    def item(self, text: str | None, status: str) -> dict[str, Any]:
        content = [] if text is None else [_part(text)]
        return {"id": self.msg_id, "type": "message", "status": status, "role": "assistant", "content": content}

    def body(
        self,
        status: str,
        output: list[dict[str, Any]],
        outcome: RunOutcome | None = None,
        error: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        usage = None
        if outcome is not None:
            prompt, completion, total = usage_counts(outcome.usage)
            usage = {
                "input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": int(outcome.usage.get("cacheRead") or 0)},
                "output_tokens": completion,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": total,
            }
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "error": error,
            "incomplete_details": None,
            "instructions": self.instructions,
            "max_output_tokens": None,
            "model": self.model,
            "output": output,
            "parallel_tool_calls": False,
            "previous_response_id": self.previous,
            "temperature": None,
            "text": {"format": {"type": "text"}},
            "tool_choice": "auto",
            "tools": [],
            "top_p": None,
            "truncation": "disabled",
            "usage": usage,
            "metadata": self.metadata,
        }


def _part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": []}


async def _stream(live: LiveRun, resp: _Resp) -> AsyncIterator[bytes]:
    seq = itertools.count()

    def event(kind: str, **fields: Any) -> bytes:
        return sse_event(kind, {"type": kind, "sequence_number": next(seq), **fields})

    at = {"item_id": resp.msg_id, "output_index": 0, "content_index": 0}
    yield event("response.created", response=resp.body("in_progress", []))
    yield event("response.in_progress", response=resp.body("in_progress", []))
    yield event("response.output_item.added", output_index=0, item=resp.item(None, "in_progress"))
    yield event("response.content_part.added", **at, part=_part(""))
    parts: list[str] = []
    async for delta in live.deltas():
        parts.append(delta)
        yield event("response.output_text.delta", **at, delta=delta, logprobs=[])
    outcome = await live.outcome()
    failed = outcome_error(outcome)
    if failed is not None:
        error = {"code": "server_error", "message": failed.message}
        yield event("response.failed", response=resp.body("failed", [], outcome, error))
        yield b"data: [DONE]\n\n"
        return
    text = "".join(parts) or ("" if outcome.silent else outcome.text)
    yield event("response.output_text.done", **at, text=text, logprobs=[])
    yield event("response.content_part.done", **at, part=_part(text))
    item = resp.item(text, "completed")
    yield event("response.output_item.done", output_index=0, item=item)
    yield event("response.completed", response=resp.body("completed", [item], outcome))
    yield b"data: [DONE]\n\n"
