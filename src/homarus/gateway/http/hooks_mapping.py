"""Webhook mappings: which mapping a ``POST <hooks.path>/<name>`` matches, and the action it makes.

A mapping matches on ``match.path`` (the sub-path, slashes stripped) and/or ``match.source``
(``payload.source``); the first match wins. Its templates (``messageTemplate``, ``textTemplate``,
``name``, ``sessionKey``) are filled from ``{{expr}}`` over ``payload``, ``headers`` (lower-case
names), ``query``, ``path`` and ``now`` (ISO time); a bare path (``{{pull_request.title}}``) reads
the payload. Paths walk dicts and lists (``a.b[0].c``) and never touch ``__proto__``,
``prototype``, ``constructor`` or dunder names; a missing value renders as ``""``; dicts and lists
render as JSON.

Presets fill what the mapping leaves out: ``github`` turns the ``X-GitHub-Event`` header and the
usual payload fields into a message; ``json`` hands over the whole payload.

A ``transform`` is a Python module inside ``hooks.transformsDir`` (resolved, symlinks followed,
must stay inside; loaded once per file version): its function gets ``{payload, headers, query,
path}`` and returns a dict merged over the template action, or ``None`` to skip the request (204).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import importlib.util
import inspect
import json
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from homarus.config.automation import HookMapping
from homarus.errors import InvalidRequest
from homarus.usecases.webhooks import HookAction

__all__ = ["MappingFailed", "TransformLoader", "match_mapping", "render", "resolve_action"]

_TEMPLATE = re.compile(r"\{\{\s*([^{}]{1,200}?)\s*\}\}")
_SEGMENT = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
_BLOCKED: Final = frozenset({"__proto__", "prototype", "constructor"})
MAX_RENDERED_CHARS: Final = 100_000
TRANSFORM_TIMEOUT_S: Final = 10.0


class MappingFailed(Exception):
    """The mapping (a transform or its result) failed: a 500 ``hook mapping failed``; details are logged."""


def _lookup(root: Any, expr: str) -> Any:
    value = root
    for match in _SEGMENT.finditer(expr):
        name, index = match.group(1), match.group(2)
        if name is not None:
            if name in _BLOCKED or name.startswith("__") or not isinstance(value, Mapping):
                return None
            value = value.get(name)
        else:
            if not isinstance(value, list) or int(index) >= len(value):
                return None
            value = value[int(index)]
        if value is None:
            return None
    return value


def render(template: str, context: Mapping[str, Any]) -> str:
    """``template`` with every ``{{expr}}`` replaced (missing → ``""``)."""

    def one(match: re.Match[str]) -> str:
        expr = match.group(1).strip()
        head = re.split(r"[.\[]", expr, maxsplit=1)[0]
        value = _lookup(context, expr) if head in context else _lookup(context.get("payload"), expr)
        if value is None:
            return ""
        if isinstance(value, dict | list):
            return json.dumps(value, ensure_ascii=False)
        return str(value)

    return _TEMPLATE.sub(one, template)[:MAX_RENDERED_CHARS]


def match_mapping(mappings: tuple[HookMapping, ...], sub_path: str, payload: Mapping[str, Any]) -> HookMapping | None:
    source = payload.get("source") if isinstance(payload.get("source"), str) else None
    for mapping in mappings:
        m = mapping.match
        if m.path is None and m.source is None:
            continue  # a mapping must say what it matches
        if m.path is not None and m.path.strip("/") != sub_path:
            continue
        if m.source is not None and m.source != source:
            continue
        return mapping
    return None


def _github(context: Mapping[str, Any]) -> dict[str, str]:
    event = str(context["headers"].get("x-github-event", "event"))
    payload = context["payload"]
    repo = _lookup(payload, "repository.full_name") or "a repository"
    action = _lookup(payload, "action")
    title = _lookup(payload, "pull_request.title") or _lookup(payload, "issue.title") or ""
    sender = _lookup(payload, "sender.login") or "someone"
    url = (
        _lookup(payload, "pull_request.html_url")
        or _lookup(payload, "issue.html_url")
        or _lookup(payload, "compare")
        or _lookup(payload, "repository.html_url")
        or ""
    )
    what = f"{event}" + (f" ({action})" if action else "")
    lines = [f"GitHub {what} in {repo} by {sender}."]
    if title:
        lines.append(f"Title: {title}")
    if event == "push":
        commits = payload.get("commits") if isinstance(payload.get("commits"), list) else []
        lines.append(f"{len(commits)} commit(s) to {payload.get('ref', '?')}")
        lines += [f"- {str(_lookup(c, 'message') or '').splitlines()[0][:200]}" for c in commits[:10]]
    body = _lookup(payload, "comment.body") or _lookup(payload, "pull_request.body") or _lookup(payload, "issue.body")
    if body:
        lines.append(f"Text: {str(body)[:4000]}")
    if url:
        lines.append(f"Link: {url}")
    return {"message": "\n".join(lines), "text": lines[0], "name": f"GitHub {event}"}


def _preset(name: str | None, context: Mapping[str, Any]) -> dict[str, str]:
    if name == "github":
        return _github(context)
    if name == "json":
        whole = json.dumps(context["payload"], ensure_ascii=False, indent=2)[:MAX_RENDERED_CHARS]
        return {"message": whole, "text": whole}
    return {}


class TransformLoader:
    """Loads transform functions from ``hooks.transformsDir`` only (confined, cached per mtime)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._cache: dict[tuple[str, str], tuple[float, Callable[..., Any]]] = {}

    def resolve(self, module: str) -> Path:
        root = os.path.realpath(self.directory)
        target = os.path.realpath(os.path.join(root, module))
        if not module.endswith(".py") or os.path.isabs(module) or not target.startswith(root + os.sep):
            raise MappingFailed(f"transform module {module!r} is not a .py file inside hooks.transformsDir")
        if not os.path.isfile(target):
            raise MappingFailed(f"transform module {module!r} not found in {root}")
        return Path(target)

    def load(self, module: str, export: str) -> Callable[..., Any]:
        path = self.resolve(module)
        mtime = path.stat().st_mtime
        cached = self._cache.get((str(path), export))
        if cached is not None and cached[0] == mtime:
            return cached[1]
        spec = importlib.util.spec_from_file_location(f"homarus_hook_transform_{abs(hash(path))}", path)
        if spec is None or spec.loader is None:
            raise MappingFailed(f"cannot load transform {module!r}")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        fn: Callable[..., Any] | None = getattr(mod, export, None)
        if fn is None or not callable(fn):
            raise MappingFailed(f"transform {module!r} has no function {export!r}")
        self._cache[(str(path), export)] = (mtime, fn)
        return fn


async def _transform(loader: TransformLoader, mapping: HookMapping, context: dict[str, Any]) -> dict[str, Any] | None:
    assert mapping.transform is not None
    try:
        fn = loader.load(mapping.transform.module, mapping.transform.export)
        arg = {k: context[k] for k in ("payload", "headers", "query", "path")}
        result = fn(arg)
        if inspect.isawaitable(result):
            async with asyncio.timeout(TRANSFORM_TIMEOUT_S):
                result = await result
    except MappingFailed:
        raise
    except Exception as exc:
        raise MappingFailed(f"transform {mapping.transform.module!r} raised {type(exc).__name__}: {exc}") from exc
    if result is not None and not isinstance(result, dict):
        raise MappingFailed(f"transform {mapping.transform.module!r} returned {type(result).__name__}, not a dict")
    return result


async def resolve_action(
    mapping: HookMapping, context: dict[str, Any], loader: TransformLoader | None
) -> HookAction | None:
    """The action of ``mapping`` for this request; None = skip (204). InvalidRequest → 400."""
    if mapping.action == "ignore":
        return None
    preset = _preset(mapping.preset, context)
    action = HookAction(
        kind=mapping.action,
        message=render(mapping.message_template, context) if mapping.message_template else preset.get("message", ""),
        text=render(mapping.text_template, context) if mapping.text_template else preset.get("text", ""),
        mode=mapping.wake_mode,
        name=render(mapping.name, context) if mapping.name else preset.get("name", "Hook"),
        agent_id=mapping.agent_id,
        session_key=render(mapping.session_key, context) if mapping.session_key else None,
        deliver=mapping.deliver,
        allow_unsafe=mapping.allow_unsafe_external_content,
        model=mapping.model,
        thinking=mapping.thinking,
        timeout_seconds=mapping.timeout_seconds,
    )
    if mapping.transform is not None:
        if loader is None:
            raise MappingFailed("a transform is configured but hooks.transformsDir is not usable")
        override = await _transform(loader, mapping, context)
        if override is None:
            return None
        _merge(action, override)
    if action.kind == "wake" and not action.text.strip():
        raise InvalidRequest("hook mapping requires text")
    if action.kind == "agent" and not action.message.strip():
        raise InvalidRequest("hook mapping requires message")
    if action.kind not in ("agent", "wake"):
        raise MappingFailed(f"unknown action kind {action.kind!r}")
    return action


def _merge(action: HookAction, override: Mapping[str, Any]) -> None:
    names = {
        "kind": "kind",
        "message": "message",
        "text": "text",
        "mode": "mode",
        "name": "name",
        "agentId": "agent_id",
        "sessionKey": "session_key",
        "deliver": "deliver",
        "model": "model",
        "thinking": "thinking",
        "timeoutSeconds": "timeout_seconds",
    }
    for key, value in override.items():
        attr = names.get(key)
        if attr is None:
            action.extra[key] = value
        elif value is not None:
            setattr(action, attr, value if attr in ("deliver", "timeout_seconds") else str(value))


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
