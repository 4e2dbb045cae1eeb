"""Operator-installed HOOK.md hooks: the coarse ``type:action`` event system (plugins.md §1.7).

A hook is a directory ``<name>/`` holding ``HOOK.md`` (front matter between ``---`` lines with
``name``, ``description`` and ``events``) and ``handler.py`` defining ``handle(event)``, sync or
async. Hooks are found in ``$STATE/hooks/`` (managed) and then ``<workspace>/hooks/``; a
workspace hook may only add a new name, never replace a managed one.

Dispatch (``HookMdRunner.trigger``) mirrors the reference: handlers registered for the bare
family (``command``) first, then those for the exact key (``command:new``), each group in
discovery order, awaited one after the other; a hook listed under both runs once. Errors and
timeouts (10 s per handler) are logged and returned, never raised. The event dict is shared:
``agent:bootstrap`` handlers edit ``event["context"]["bootstrap_files"]`` in place and strings
appended to ``event["messages"]`` reach the caller. Sync handlers run in a worker thread; one that
times out cannot be stopped and keeps running there, unobserved.

Safety: a world-writable hooks root, hook directory, ``HOOK.md`` or ``handler.py`` is skipped
with a diagnostic; each handler is imported under its own unique module name.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.util
import inspect
import json
import logging
import re
import stat
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

__all__ = [
    "KNOWN_EVENTS",
    "HookDiagnostic",
    "HookMd",
    "HookMdRunner",
    "discover_hooks",
    "parse_front_matter",
]

log = logging.getLogger("homarus.hooks.md")

KNOWN_EVENTS: Final = frozenset(
    {
        "command:new",
        "command:reset",
        "command:stop",
        "session:auto-reset",
        "session:compact:before",
        "session:compact:after",
        "session:patch",
        "agent:bootstrap",
        "gateway:startup",
        "gateway:shutdown",
        "gateway:pre-restart",
        "message:received",
        "message:transcribed",
        "message:preprocessed",
        "message:sent",
    }
)
FAMILIES: Final = frozenset(e.split(":", 1)[0] for e in KNOWN_EVENTS)
DEFAULT_TIMEOUT_S: Final = 10.0
MAX_HOOK_MD_BYTES: Final = 64 * 1024
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

Origin = Literal["managed", "workspace"]


@dataclass(frozen=True, slots=True)
class HookDiagnostic:
    level: Literal["warn", "error"]
    source: str
    message: str


@dataclass(frozen=True, slots=True)
class HookMd:
    name: str
    description: str
    events: tuple[str, ...]
    origin: Origin
    path: Path
    handler: Callable[[dict[str, Any]], Any] = field(repr=False)


# -- front matter ----------------------------------------------------------------------------------
def parse_front_matter(text: str) -> dict[str, Any]:
    """The small YAML subset HOOK.md uses: ``key: scalar``, ``key: [a, b]``, inline JSON, and
    block lists (``key:`` then ``  - item`` lines). Returns {} when there is no front matter."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return {}
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise ValueError("front matter is not closed by a '---' line") from None
    out: dict[str, Any] = {}
    current: str | None = None
    for raw in lines[1:end]:
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        if raw[0] in " \t":
            item = raw.strip()
            if current is not None and item.startswith("- "):
                out[current].append(_scalar(item[2:]))
            continue  # nested mappings are not part of the subset: ignored
        key, sep, value = raw.partition(":")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"expected 'key: value', got {raw!r}")
        value = value.strip()
        if value:
            out[key] = _value(value)
            current = None
        else:
            out[key] = []
            current = key
    return out


def _value(text: str) -> Any:
    if text[0] in "[{":
        with contextlib.suppress(ValueError):
            return json.loads(text)
        if text[0] == "[" and text.endswith("]"):
            inner = text[1:-1].strip()
            return [_scalar(p) for p in inner.split(",")] if inner else []
    return _scalar(text)


def _scalar(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    hash_at = text.find(" #")
    return text[:hash_at].rstrip() if hash_at >= 0 else text


# -- discovery ---------------------------------------------------------------------------------------
def _world_writable(path: Path) -> bool:
    return bool(path.stat().st_mode & stat.S_IWOTH)


def discover_hooks(state_dir: Path, workspace: Path | None = None) -> tuple[list[HookMd], list[HookDiagnostic]]:
    """Load the managed hooks, then the workspace ones that bring new names."""
    hooks: list[HookMd] = []
    diags: list[HookDiagnostic] = []
    roots: list[tuple[Origin, Path]] = [("managed", state_dir / "hooks")]
    if workspace is not None:
        roots.append(("workspace", workspace / "hooks"))
    for origin, root in roots:
        if not root.is_dir():
            continue
        if _world_writable(root):
            diags.append(HookDiagnostic("error", str(root), "hooks directory is world-writable; skipped"))
            continue
        taken = {h.name: h for h in hooks}
        for hook_dir in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
            try:
                hook = _load_hook(hook_dir, origin, diags)
            except OSError as exc:  # vanished or unreadable while we looked
                diags.append(HookDiagnostic("error", str(hook_dir), f"cannot read hook: {exc}; skipped"))
                continue
            if hook is None:
                continue
            prior = taken.get(hook.name)
            if prior is not None:
                why = "cannot override" if prior.origin != origin else "duplicates"
                diags.append(HookDiagnostic("warn", str(hook_dir), f"hook {hook.name!r} {why} {prior.path}; skipped"))
                continue
            taken[hook.name] = hook
            hooks.append(hook)
    return hooks, diags


def _load_hook(hook_dir: Path, origin: Origin, diags: list[HookDiagnostic]) -> HookMd | None:
    def bad(message: str, level: Literal["warn", "error"] = "error") -> None:
        diags.append(HookDiagnostic(level, str(hook_dir), message))

    md, handler_path = hook_dir / "HOOK.md", hook_dir / "handler.py"
    for required in (md, handler_path):
        if not required.is_file():
            bad(f"missing {required.name}; skipped")
            return None
    for checked in (hook_dir, md, handler_path):
        if _world_writable(checked):
            bad(f"{checked.name} is world-writable; skipped")
            return None
    try:
        raw = md.read_bytes()
        if len(raw) > MAX_HOOK_MD_BYTES:
            raise ValueError(f"HOOK.md larger than {MAX_HOOK_MD_BYTES} bytes")
        meta = parse_front_matter(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        bad(f"unreadable HOOK.md: {exc}; skipped")
        return None
    name = str(meta.get("name") or hook_dir.name)
    if not _NAME.match(name):
        bad(f"invalid hook name {name!r}; skipped")
        return None
    events = _events(meta)
    if not events:
        bad("HOOK.md lists no events; skipped")
        return None
    for e in events:
        if e not in KNOWN_EVENTS and e not in FAMILIES:
            bad(f"unknown event {e!r} (kept, but nothing emits it yet)", "warn")
    handler = _import_handler(handler_path, origin, name, bad)
    if handler is None:
        return None
    return HookMd(name, str(meta.get("description") or ""), events, origin, hook_dir, handler)


def _events(meta: dict[str, Any]) -> tuple[str, ...]:
    events = meta.get("events")
    if events is None and isinstance(meta.get("metadata"), dict):  # reference: metadata.openclaw.events
        openclaw = meta["metadata"].get("openclaw")
        events = openclaw.get("events") if isinstance(openclaw, dict) else None
    if isinstance(events, str):
        events = [events]
    if not isinstance(events, list):
        return ()
    return tuple(dict.fromkeys(str(e).strip() for e in events if str(e).strip()))


def _import_handler(
    path: Path, origin: Origin, name: str, bad: Callable[[str], None]
) -> Callable[[dict[str, Any]], Any] | None:
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    module_name = f"_homarus_hookmd_{origin}_{re.sub(r'[^A-Za-z0-9_]', '_', name)}_{digest}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        bad("handler.py cannot be imported; skipped")
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # operator code: any failure is a diagnostic, not a crash
        sys.modules.pop(module_name, None)
        bad(f"handler.py failed to import: {type(exc).__name__}: {exc}; skipped")
        return None
    handle = getattr(module, "handle", None)
    if not callable(handle):
        sys.modules.pop(module_name, None)
        bad("handler.py defines no handle(event); skipped")
        return None
    return handle  # type: ignore[no-any-return]


# -- dispatch ----------------------------------------------------------------------------------------
class HookMdRunner:
    """Runs the HOOK.md hooks matching an event, one after the other."""

    def __init__(
        self,
        hooks: Iterable[HookMd] = (),
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        diagnostics: Iterable[HookDiagnostic] = (),
    ) -> None:
        self.hooks = list(hooks)
        self.timeout_s = timeout_s
        self.diagnostics = list(diagnostics)
        self._stragglers: set[asyncio.Task[Any]] = set()

    @classmethod
    def discover(
        cls, state_dir: Path, workspace: Path | None = None, *, timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> HookMdRunner:
        hooks, diags = discover_hooks(state_dir, workspace)
        for d in diags:
            (log.error if d.level == "error" else log.warning)("hook %s: %s", d.source, d.message)
        return cls(hooks, timeout_s=timeout_s, diagnostics=diags)

    def handlers_for(self, event_type: str, action: str) -> list[HookMd]:
        key = f"{event_type}:{action}"
        family = [h for h in self.hooks if event_type in h.events]
        exact = [h for h in self.hooks if key in h.events and h not in family]
        return family + exact

    async def trigger(self, event_type: str, action: str, event: dict[str, Any]) -> list[str]:
        """Run every matching handler on the shared ``event``; returns the errors (logged too)."""
        event["type"] = event_type
        event["action"] = action
        event.setdefault("timestamp", int(time.time() * 1000))
        event.setdefault("messages", [])
        event.setdefault("context", {})
        errors: list[str] = []
        for hook in self.handlers_for(event_type, action):
            error = await self._run(hook, event)
            if error is not None:
                log.warning("hook %s failed on %s:%s: %s", hook.name, event_type, action, error)
                errors.append(f"{hook.name}: {error}")
        return errors

    async def _run(self, hook: HookMd, event: dict[str, Any]) -> str | None:
        task = asyncio.ensure_future(_invoke(hook.handler, event))
        try:
            done, _ = await asyncio.wait({task}, timeout=self.timeout_s)
        except asyncio.CancelledError:
            task.cancel()  # the caller gave up: do not leave the handler running unobserved
            raise
        if not done:
            task.cancel()
            self._stragglers.add(task)
            task.add_done_callback(self._stragglers.discard)
            task.add_done_callback(_swallow)
            return f"timed out after {self.timeout_s:g} s"
        if task.cancelled():
            return "cancelled"
        exc = task.exception()
        if exc is not None:
            return f"{type(exc).__name__}: {exc}"
        return None


async def _invoke(handler: Callable[[dict[str, Any]], Any], event: dict[str, Any]) -> None:
    if inspect.iscoroutinefunction(handler):
        await handler(event)
        return
    value = await asyncio.to_thread(handler, event)
    if inspect.isawaitable(value):
        await value


def _swallow(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved, so asyncio does not log it as never retrieved
