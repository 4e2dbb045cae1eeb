"""`sessions.*` methods: list, get, preview, resolve, create, patch, reset, delete, subscribe.

Store and transcript I/O blocks (fsync), so every handler runs it in a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from typing import Annotated, Any, Final, Literal

from pydantic import Field

from homarus.errors import InvalidRequest, NotFound
from homarus.gateway.router import MethodCall, Params
from homarus.patterns import Pattern
from homarus.plugins import events as ev
from homarus.protocol.compat import (
    NO_BOARDS,
    NO_BRANCHES,
    NO_FAST_MODE,
    NO_PERMISSION_MODES,
    NO_PROJECTS,
    NO_RUNTIMES,
    PER_SESSION_EXEC,
    Unsupported,
    compat_params,
)
from homarus.security.scopes import ADMIN, require_scope
from homarus.sessions.entry import SessionEntry
from homarus.sessions.manager import SessionManager
from homarus.sessions.patch import SessionPatch
from homarus.sessions.views import preview_items, session_row, visible_messages
from homarus.usecases.session_events import emit_session_changed

__all__: list[str] = []

_Key = Field(min_length=1, max_length=512)


_NO_PEOPLE = "Homarus has one owner: every session is theirs, no one else is involved"


@compat_params(
    inert={
        "boardFace": NO_BOARDS,
        "group": NO_BOARDS,
        "includeActivitySummary": NO_BOARDS,
        "includePeople": _NO_PEOPLE,
        "involvingMe": _NO_PEOPLE,
        "involvingProfileId": _NO_PEOPLE,
        "ownerId": _NO_PEOPLE,
        "creatorId": _NO_PEOPLE,
        "profileRelation": _NO_PEOPLE,
        "projectId": NO_PROJECTS,
        "workspaceDir": "every session of an agent shares the agent's workspace: filter by agentId",
        "excludeSystem": "Homarus makes no system sessions besides cron runs (excludeCron) and subagents",
        "requireLastInteraction": "every listed session has had its last interaction recorded (updatedAt)",
    }
)
class ListParams(Params):
    limit: int | None = Field(default=None, ge=1, le=10_000)
    offset: int | None = Field(default=None, ge=0, le=1_000_000)
    active_minutes: int | None = Field(default=None, alias="activeMinutes", ge=1)
    include_global: bool | None = Field(default=None, alias="includeGlobal")
    include_unknown: bool | None = Field(default=None, alias="includeUnknown")
    include_derived_titles: bool | None = Field(default=None, alias="includeDerivedTitles")
    include_last_message: bool | None = Field(default=None, alias="includeLastMessage")
    label: str | None = Field(default=None, max_length=100)
    spawned_by: str | None = Field(default=None, alias="spawnedBy", max_length=512)
    agent_id: str | None = Field(default=None, alias="agentId", max_length=64)
    search: str | None = Field(default=None, max_length=200)
    #: the original's (v4) listing options: every agent here is a configured one; owners come first anyway
    configured_agents_only: bool | None = Field(default=None, alias="configuredAgentsOnly")
    owner_first: bool | None = Field(default=None, alias="ownerFirst")
    #: v4 board filters: Homarus has no archive and no boards, so "all" and "only" are the same list
    archived: bool | Literal["all", "only", "exclude"] | None = None
    has_board: bool | None = Field(default=None, alias="hasBoard")
    pinned: bool | None = None
    active_only: bool | None = Field(default=None, alias="activeOnly")
    exclude_cron: bool | None = Field(default=None, alias="excludeCron")
    exclude_subagents: bool | None = Field(default=None, alias="excludeSubagents")
    #: Homarus records one time per session (``updatedAt``): every order is by it, newest first
    sort_by: Literal["updatedAt", "lastInteractionAt", "activity"] | None = Field(default=None, alias="sortBy")


class GetParams(Params):
    key: str | None = _Key
    session_key: str | None = Field(default=None, alias="sessionKey", min_length=1, max_length=512)
    limit: int = Field(default=200, ge=1, le=1000)


class PreviewParams(Params):
    keys: list[str] = Field(min_length=1, max_length=64)
    limit: int = Field(default=12, ge=1, le=200)
    max_chars: int = Field(default=240, alias="maxChars", ge=20, le=100_000)


@compat_params(
    inert={
        "reference": "session references and slugs are not a Homarus feature: use key, sessionId or label",
        "shortId": "session references and slugs are not a Homarus feature: use key, sessionId or label",
        "slugHint": "session references and slugs are not a Homarus feature: use key, sessionId or label",
        "includeGlobal": "global and unknown sessions are always resolvable",
        "includeUnknown": "global and unknown sessions are always resolvable",
    }
)
class ResolveParams(Params):
    key: str | None = Field(default=None, max_length=512)
    session_key: str | None = Field(default=None, alias="sessionKey", max_length=512)
    session_id: str | None = Field(default=None, alias="sessionId", min_length=1, max_length=128)
    agent_id: str | None = Field(default=None, alias="agentId", max_length=64)
    label: str | None = Field(default=None, max_length=100)
    spawned_by: str | None = Field(default=None, alias="spawnedBy", max_length=512)
    #: with a label or session id that matches nothing: ``{ok: true, key: null}`` instead of NOT_FOUND
    allow_missing: bool | None = Field(default=None, alias="allowMissing")


@compat_params(
    inert={
        "fastMode": NO_FAST_MODE,
        "category": NO_BOARDS,
        "titleSource": NO_BOARDS,
        "visibility": _NO_PEOPLE,
        "mentions": _NO_PEOPLE,
        "catalogId": NO_PROJECTS,
        "projectId": NO_PROJECTS,
        "projectGitUrl": NO_PROJECTS,
        "repository": NO_PROJECTS,
        "worktree": NO_PROJECTS,
        "worktreeBaseRef": NO_PROJECTS,
        "worktreeName": NO_PROJECTS,
        "worktreeSource": NO_PROJECTS,
        "contextWindow": "the context window comes from the model's entry in the config",
        "emitCommandHooks": "a new session fires its hooks (session_start) anyway",
        "spawnDepth": "subagent depth is tracked by the sessions tools themselves",
        "succeedsParent": "session succession is not a Homarus feature",
        "timeoutMs": "the run's timeout comes from the config (agents.defaults.timeoutSeconds)",
    },
    unsupported={
        "agentRuntime": Unsupported(NO_RUNTIMES),
        "permissionMode": Unsupported(NO_PERMISSION_MODES),
        "toolOverrides": Unsupported(NO_PERMISSION_MODES),
        "execNode": Unsupported(PER_SESSION_EXEC),
        "cwd": Unsupported("sessions work in their agent's workspace"),
        "fork": Unsupported(NO_BRANCHES, False),
        "forkFrom": Unsupported(NO_BRANCHES),
        "incognito": Unsupported("every Homarus session keeps its transcript on disk", False),
        "attachments": Unsupported("send attachments with the first message (chat.send or agent)", []),
    },
)
class CreateParams(Params):
    key: str | None = Field(default=None, max_length=512)
    display_name: str | None = Field(default=None, alias="displayName", max_length=200)
    thinking_level: str | None = Field(default=None, alias="thinkingLevel", max_length=20)
    #: a retried create with the same key answers the session the first one made
    idempotency_key: str | None = Field(default=None, alias="idempotencyKey", min_length=1, max_length=256)
    agent_id: str | None = Field(default=None, alias="agentId", max_length=64)
    label: str | None = Field(default=None, max_length=100)
    model: str | None = Field(default=None, max_length=200)
    parent_session_key: str | None = Field(default=None, alias="parentSessionKey", max_length=512)
    task: str | None = Field(default=None, max_length=100_000)
    message: str | None = Field(default=None, max_length=1_000_000)


class ResetParams(Params):
    key: str = _Key
    agent_id: str | None = Field(default=None, alias="agentId", max_length=64)
    reason: Annotated[str, Pattern("^(new|reset)$")] | None = None
    #: refuse when the session was replaced since the caller looked (a second reset or delete)
    expected_session_id: str | None = Field(default=None, alias="expectedSessionId", max_length=128)


@compat_params(
    inert={
        "archivedOnly": "Homarus has no session archive state: a delete removes the session",
        "expectedLifecycleRevision": "Homarus has one writer per session store; use expectedSessionId",
        "expectedSessionUpdatedAt": "Homarus has one writer per session store; use expectedSessionId",
    }
)
class DeleteParams(Params):
    key: str = _Key
    agent_id: str | None = Field(default=None, alias="agentId", max_length=64)
    expected_session_id: str | None = Field(default=None, alias="expectedSessionId", max_length=128)
    delete_transcript: bool = Field(default=True, alias="deleteTranscript")
    emit_lifecycle_hooks: bool | None = Field(default=None, alias="emitLifecycleHooks")


def _mgr(call: MethodCall) -> SessionManager:
    return call.gateway.sessions


async def sessions_list(call: MethodCall, p: ListParams) -> dict[str, Any]:
    mgr = _mgr(call)
    if p.agent_id is not None and p.agent_id not in mgr.agent_ids:
        raise InvalidRequest(f'unknown agent id "{p.agent_id}"')

    runs = call.gateway.runtime.runs if call.gateway.built("runtime") else None

    def skip(key_text: str, entry: SessionEntry) -> bool:
        if p.exclude_cron and ":cron:" in key_text:
            return True
        if p.exclude_subagents and (":subagent:" in key_text or entry.spawned_by):
            return True
        if p.pinned is not None and bool((entry.model_extra or {}).get("pinned")) != p.pinned:
            return True
        return bool(p.active_only) and (runs is None or runs.for_session(key_text) is None)

    def collect() -> list[dict[str, Any]]:
        now = int(time.time() * 1000)
        rows = []
        skipped = 0
        for agent_id, key_text, entry in mgr.all_entries(p.agent_id):
            key = mgr.resolve_key(key_text)
            if p.active_minutes and now - entry.updated_at > p.active_minutes * 60_000:
                continue
            if skip(key.canonical, entry):
                continue
            if p.label is not None and entry.label != p.label:
                continue
            if p.spawned_by is not None and entry.spawned_by != p.spawned_by:
                continue
            if p.search:
                needle = p.search.lower()
                hay = " ".join(x for x in (key_text, entry.label, entry.display_name) if x).lower()
                if needle not in hay:
                    continue
            if p.offset and skipped < p.offset:
                skipped += 1
                continue
            last = None
            if p.include_last_message:
                view = mgr.transcript(agent_id, entry.session_id).read()
                items = preview_items(view.entries, 1, 240)
                last = items[0]["text"] if items else ""
            rows.append(session_row(key, entry, last_message=last))
            if p.limit and len(rows) >= p.limit:
                break
        return rows

    rows = await asyncio.to_thread(collect)
    cfg = call.gateway.config
    return {
        "ts": int(time.time() * 1000),
        "path": mgr.store(p.agent_id or cfg.agents.default_id).location,
        "count": len(rows),
        "defaults": {"modelProvider": None, "model": None, "contextTokens": None},
        "sessions": rows,
    }


async def sessions_get(call: MethodCall, p: GetParams) -> dict[str, Any]:
    mgr = _mgr(call)
    key = mgr.resolve_key(p.key or p.session_key)

    def read() -> dict[str, Any]:
        ref = mgr.require(key)
        view = mgr.transcript_for(ref).read()
        return {
            "key": key.canonical,
            "sessionId": ref.entry.session_id,
            "messages": visible_messages(view.entries)[-p.limit :],
        }

    return await asyncio.to_thread(read)


class CompactParams(Params):
    key: str = _Key
    agent_id: str | None = Field(default=None, alias="agentId", min_length=1, max_length=64)
    max_lines: int | None = Field(default=None, alias="maxLines", ge=1)


async def sessions_compact(call: MethodCall, p: CompactParams) -> dict[str, Any]:
    """Summarise the session's context now (``maxLines``: keep only the newest messages in it);
    a session with a run going or waiting answers INVALID_REQUEST, retry after it."""
    mgr = _mgr(call)
    key = mgr.resolve_key(p.key)
    ref = await asyncio.to_thread(mgr.get, key)
    if ref is None or not ref.entry.session_id:
        return {"ok": True, "key": key.canonical, "compacted": False, "reason": "no sessionId"}
    report = await call.gateway.runtime.compact(key, max_messages=p.max_lines)
    if report.compacted:
        emit_session_changed(call.gateway, key, "compact", compacted=True)
    return report.to_json(key.canonical)


async def sessions_preview(call: MethodCall, p: PreviewParams) -> dict[str, Any]:
    mgr = _mgr(call)

    def read() -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for raw in p.keys:
            try:
                key = mgr.resolve_key(raw)
                ref = mgr.get(key)
                if ref is None:
                    out.append({"key": key.canonical, "status": "missing", "items": []})
                    continue
                items = preview_items(mgr.transcript_for(ref).read().entries, p.limit, p.max_chars)
                out.append({"key": key.canonical, "status": "ok" if items else "empty", "items": items})
            except Exception as exc:  # one bad key must not hide the others' previews
                out.append({"key": raw, "status": "error", "items": [], "error": str(exc)})
        return out

    return {"ts": int(time.time() * 1000), "previews": await asyncio.to_thread(read)}


async def sessions_resolve(call: MethodCall, p: ResolveParams) -> dict[str, Any]:
    mgr = _mgr(call)
    if p.key is None and p.session_key is None and (p.label is not None or p.session_id is not None):
        rows = await asyncio.to_thread(mgr.all_entries, p.agent_id)
        for _agent, key_text, entry in rows:
            if p.label is not None and entry.label != p.label:
                continue
            if p.session_id is not None and entry.session_id != p.session_id:
                continue
            if p.spawned_by is not None and entry.spawned_by != p.spawned_by:
                continue
            return {"ok": True, "key": key_text}
        if p.allow_missing:
            return {"ok": True, "key": None}
        what = f"label {p.label!r}" if p.label is not None else f"session id {p.session_id!r}"
        raise NotFound(f"no session with {what}")
    key = mgr.resolve_key(p.key or p.session_key, p.agent_id)
    return {"ok": True, "key": key.canonical}


async def sessions_create(call: MethodCall, p: CreateParams) -> dict[str, Any]:
    mgr = _mgr(call)
    if p.idempotency_key is not None:
        done = call.gateway.dedupe.get(f"sessions.create:{p.idempotency_key}")
        if done is not None and done.payload is not None:
            return {**done.payload, "created": False}
    agent = p.agent_id or call.gateway.config.agents.default_id
    raw = p.key or f"agent:{agent}:dashboard:{uuid.uuid4()}"
    key = mgr.resolve_key(raw, p.agent_id)
    parent = mgr.resolve_key(p.parent_session_key).canonical if p.parent_session_key else None
    ref = await asyncio.to_thread(
        mgr.ensure,
        key,
        label=p.label,
        parentSessionKey=parent,
        modelOverride=p.model,
        displayName=p.display_name,
        thinkingLevel=p.thinking_level,
    )
    if ref.created:
        emit_session_changed(call.gateway, key, "create", sessionId=ref.entry.session_id)
    out = {
        "ok": True,
        "key": key.canonical,
        "sessionId": ref.entry.session_id,
        "entry": ref.entry.to_json(),
        "created": ref.created,
        "runStarted": False,
    }
    if p.idempotency_key is not None:
        call.gateway.dedupe.put(f"sessions.create:{p.idempotency_key}", "ok", payload=out)
    return out


def _expect(key: str, current: str | None, expected: str | None) -> None:
    if expected is not None and current is not None and current != expected:
        raise InvalidRequest(f"session {key} was replaced (now {current}); expectedSessionId {expected} is stale")


#: what ``operator.write`` may change with ``sessions.patch`` (the original's v4 rule: a client's own
#: presentation of a session and its model choices); anything else needs ``operator.admin``
WRITE_PATCH_FIELDS: Final = frozenset(
    {"label", "displayName", "model", "thinkingLevel", "fastMode", "unread", "pinned", "archived", "icon", "color"}
    | {"category"}
)


async def sessions_patch(call: MethodCall, p: SessionPatch) -> dict[str, Any]:
    mgr = _mgr(call)
    key = mgr.resolve_key(p.key)
    changes = p.changes()
    if not set(changes) <= WRITE_PATCH_FIELDS:
        require_scope("sessions.patch", ADMIN, call.client.scopes)
    if "model" in changes:  # a model choice is an override of the agent default
        changes["modelOverride"] = changes.pop("model")
    ref = await asyncio.to_thread(mgr.update_entry, key, changes)
    emit_session_changed(call.gateway, key, "patch", fields=sorted(changes))
    entry = ref.entry
    return {
        "ok": True,
        "path": mgr.store(key.agent_id).location,
        "key": key.canonical,
        "entry": entry.to_json(),
        "resolved": {
            "modelProvider": entry.provider_override or entry.model_provider,
            "model": entry.model_override or entry.model,
        },
    }


async def sessions_reset(call: MethodCall, p: ResetParams) -> dict[str, Any]:
    mgr = _mgr(call)
    key = mgr.resolve_key(p.key, p.agent_id)
    before = await asyncio.to_thread(mgr.require, key)
    _expect(key.canonical, before.entry.session_id, p.expected_session_id)
    hooks = call.gateway.hooks
    ctx = ev.HookContext(agent_id=key.agent_id, session_key=key.canonical, session_id=before.entry.session_id)
    if hooks.has("before_reset"):  # awaited (bounded): plugins read the history before it is archived
        transcript = str(mgr.transcript_for(before).path)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(10.0):
                await hooks.void("before_reset", ev.BeforeResetEvent(transcript, p.reason or "reset", context=ctx))
    ref, archived = await asyncio.to_thread(mgr.reset, key)
    await asyncio.to_thread(call.gateway.injections.clear, key.canonical)
    reason_text = p.reason or "reset"
    await call.gateway.hookmd.trigger(
        "command",
        reason_text,
        {"type": "command", "action": reason_text, "sessionKey": key.canonical, "messages": [], "context": {}},
    )
    if hooks.has("session_end"):
        _ = call.gateway.spawn(
            hooks.void(
                "session_end",
                ev.SessionEndEvent(
                    before.entry.session_id,
                    key.canonical,
                    p.reason or "reset",
                    next_session_id=ref.entry.session_id,
                    transcript_archived=archived is not None,
                    context=ctx,
                ),
            )
        )
    reason = p.reason or "reset"
    emit_session_changed(call.gateway, key, reason, sessionId=ref.entry.session_id)
    return {"ok": True, "key": key.canonical, "entry": ref.entry.to_json(), "archived": archived}


async def sessions_delete(call: MethodCall, p: DeleteParams) -> dict[str, Any]:
    mgr = _mgr(call)
    key = mgr.resolve_key(p.key, p.agent_id)
    existing = await asyncio.to_thread(mgr.get, key)
    _expect(key.canonical, existing.entry.session_id if existing is not None else None, p.expected_session_id)
    deleted, archived = await asyncio.to_thread(mgr.delete, key, delete_transcript=p.delete_transcript)
    if deleted:
        emit_session_changed(call.gateway, key, "delete")
        await asyncio.to_thread(call.gateway.injections.clear, key.canonical)
        if existing is not None and call.gateway.hooks.has("session_end"):
            ctx = ev.HookContext(agent_id=key.agent_id, session_key=key.canonical, session_id=existing.entry.session_id)
            _ = call.gateway.spawn(
                call.gateway.hooks.void(
                    "session_end",
                    ev.SessionEndEvent(
                        existing.entry.session_id,
                        key.canonical,
                        "deleted",
                        transcript_archived=bool(archived),
                        context=ctx,
                    ),
                )
            )
    return {"ok": True, "key": key.canonical, "deleted": deleted, "archived": archived}


async def sessions_subscribe(call: MethodCall, p: Params) -> dict[str, Any]:
    call.gateway.session_subscribers.add(call.client.conn_id)
    return {"subscribed": True}


async def sessions_unsubscribe(call: MethodCall, p: Params) -> dict[str, Any]:
    call.gateway.session_subscribers.discard(call.client.conn_id)
    return {"subscribed": False}
