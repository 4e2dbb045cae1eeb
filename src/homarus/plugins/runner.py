"""Runs the handlers of a hook with the catalogue's semantics.

Order: higher ``priority`` first, registration order on ties. Each handler gets its own
:class:`HookContext` (its plugin id and config) on a shallow copy of the event. Timeouts resolve
``hooks.timeouts.<name>`` > ``hooks.timeoutMs`` > ``api.on(timeout_ms=...)`` > the hook's default;
a timed-out handler is not cancelled, only no longer waited for. Errors are logged with the
plugin id and skipped, except on the fail-closed gates, where an error, a timeout or a malformed
decision blocks.

The hook catalogue (:mod:`homarus.plugins.hookspecs`, and with it every event type) is imported
when a handler is registered or a hook without one is asked for its default result: a gateway
whose plugins register no hook never loads it.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from homarus.plugins import events as ev

if TYPE_CHECKING:
    from homarus.plugins.hookspecs import HookSpec

__all__ = ["HookOutcome", "HookRegistration", "HookRunner"]

log = logging.getLogger("homarus.hooks")


@dataclass(frozen=True, slots=True)
class HookRegistration:
    plugin_id: str
    hook: str
    handler: Callable[..., Any]
    priority: int = 0
    timeout_ms: int | None = None
    matcher: frozenset[str] | None = None
    plugin_config: dict[str, Any] = field(default_factory=dict)
    order: int = 0


@dataclass(slots=True)
class HookOutcome:
    """The merged result of a modifying hook, who decided it, and which handlers failed."""

    result: Any
    decided_by: str | None = None
    errors: list[str] = field(default_factory=list)


class _HandlerFailed(Exception):
    pass


class HookRunner:
    def __init__(self, *, trace: bool = False) -> None:
        self.trace = trace
        self._by_hook: dict[str, list[HookRegistration]] = {}
        self._order = 0
        self._stragglers: set[asyncio.Task[Any]] = set()
        #: (hook, plugin) → count, for tests and `plugins doctor`
        self.calls: dict[tuple[str, str], int] = {}

    # -- registration -----------------------------------------------------------------------
    def add(self, reg: HookRegistration) -> HookRegistration:
        from homarus.plugins.hookspecs import HOOKS

        if reg.hook not in HOOKS:
            raise ValueError(f"unknown hook {reg.hook!r}")
        self._order += 1
        reg = replace(reg, order=self._order)
        handlers = [*self._by_hook.get(reg.hook, []), reg]
        handlers.sort(key=lambda r: (-r.priority, r.order))
        self._by_hook[reg.hook] = handlers
        return reg

    def remove_plugin(self, plugin_id: str) -> None:
        for hook, handlers in list(self._by_hook.items()):
            self._by_hook[hook] = [h for h in handlers if h.plugin_id != plugin_id]

    def has(self, hook: str) -> bool:
        return bool(self._by_hook.get(hook))

    def handlers(self, hook: str, tool_name: str | None = None) -> list[HookRegistration]:
        regs = self._by_hook.get(hook, [])
        if tool_name is None:
            return regs
        return [r for r in regs if r.matcher is None or tool_name in r.matcher]

    # -- dispatch -------------------------------------------------------------------------------
    async def void(self, hook: str, event: Any, *, tool_name: str | None = None) -> list[str]:
        """Run every handler concurrently; returns the errors as ``"<plugin>: <error>"`` (already logged)."""
        regs = self.handlers(hook, tool_name)
        if not regs:
            return []
        spec = _spec(hook)
        results = await asyncio.gather(*(self._call(spec, r, event) for r in regs), return_exceptions=True)
        return [f"{reg.plugin_id}: {r}" for reg, r in zip(regs, results, strict=True) if isinstance(r, BaseException)]

    async def modify(self, hook: str, event: Any, *, tool_name: str | None = None) -> HookOutcome:
        """Run handlers one at a time by priority, merging their results by the hook's rule."""
        from homarus.plugins.hookspecs import Merge, result_from

        spec = _spec(hook)
        assert spec.result is not None and spec.merge is not None
        acc = Merge(spec.result())
        outcome = HookOutcome(acc.value)
        for reg in self.handlers(hook, tool_name):
            current = spec.chain(event, acc) if spec.chain is not None else event
            try:
                value = result_from(spec, await self._call(spec, reg, current))
                if value is not None:
                    acc = spec.merge(acc, value, reg.plugin_id)
            except Exception as exc:
                outcome.errors.append(f"{reg.plugin_id}: {exc}")
                if spec.fail_closed:
                    return HookOutcome(_blocked(spec, reg.plugin_id, exc), reg.plugin_id, outcome.errors)
                continue
            if acc.stop:
                log.info(
                    "%s decided by %s (priority=%d); skipping remaining handlers", hook, reg.plugin_id, reg.priority
                )
                return HookOutcome(acc.value, acc.decided_by, outcome.errors)
        outcome.result = acc.value
        return outcome

    async def claim(self, hook: str, event: Any) -> tuple[Any, str | None]:
        """First handler answering ``handled`` wins; returns (result, plugin) or (None, None)."""
        from homarus.plugins.hookspecs import result_from

        spec = _spec(hook)
        for reg in self.handlers(hook):
            try:
                value = result_from(spec, await self._call(spec, reg, event))
            except Exception as exc:  # a failing claimer just does not claim
                log.warning("[hooks] %s handler from %s ignored: %s", hook, reg.plugin_id, exc)
                continue
            if value is not None and getattr(value, "handled", False):
                return value, reg.plugin_id
        return None, None

    def sync(self, hook: str, event: Any) -> Any:
        """Hot-path hooks: plain calls in priority order, results chained; awaitables are ignored.

        A field a handler leaves ``None`` keeps an earlier handler's value, so a later ``{}`` or
        ``{"block": False}`` neither undoes an earlier rewrite nor hides it from the next handler.
        """
        from homarus.plugins.hookspecs import Merge, result_from

        spec = _spec(hook)
        latest: Any = None
        for reg in self.handlers(hook):
            current = event if latest is None or spec.chain is None else spec.chain(event, Merge(latest))
            started = time.perf_counter()
            try:
                ctx = replace(current.context, plugin_id=reg.plugin_id, plugin_config=reg.plugin_config)
                value = reg.handler(replace(current, context=ctx), ctx)
                if inspect.isawaitable(value):
                    _discard(value)
                    log.warning("%s handler from %s returned an awaitable; sync hooks ignore it", hook, reg.plugin_id)
                    continue
                result = result_from(spec, value)
            except Exception:
                log.exception("[hooks] %s handler from %s failed", hook, reg.plugin_id)
                continue
            finally:
                self._count(hook, reg, started)
            if result is None:
                continue
            latest = result if latest is None else _carry(latest, result)
            if getattr(latest, "block", False):
                return latest
        return latest

    async def _call(self, spec: HookSpec, reg: HookRegistration, event: Any) -> Any:
        ctx: ev.HookContext = replace(event.context, plugin_id=reg.plugin_id, plugin_config=reg.plugin_config)
        started = time.perf_counter()
        try:
            value = reg.handler(replace(event, context=ctx), ctx)
            if inspect.isawaitable(value):
                timeout_ms = reg.timeout_ms if reg.timeout_ms is not None else spec.default_timeout_ms
                if not timeout_ms and spec.kind == "void":
                    # void handlers already run in their own gather task and have no bound to enforce:
                    # awaiting in place saves a task per handler on the hot path
                    return await value
                task = asyncio.ensure_future(value)
                try:
                    done, _ = await asyncio.wait({task}, timeout=timeout_ms / 1000 if timeout_ms else None)
                finally:
                    if not task.done():  # timed out or the caller was cancelled: keep it referenced, let it run
                        self._stragglers.add(task)
                        task.add_done_callback(lambda t: self._straggler_done(t, spec.name, reg.plugin_id))
                if task not in done:
                    raise _HandlerFailed(f"timed out after {timeout_ms} ms")
                value = task.result()
            return value
        except Exception as exc:
            level = logging.ERROR if spec.fail_closed else logging.WARNING
            log.log(level, "[hooks] %s handler from %s failed: %s", spec.name, reg.plugin_id, exc)
            raise
        finally:
            self._count(spec.name, reg, started)

    def _straggler_done(self, task: asyncio.Task[Any], hook: str, plugin_id: str) -> None:
        self._stragglers.discard(task)
        if not task.cancelled() and task.exception() is not None:  # retrieved: asyncio would log it unnamed
            log.warning(
                "[hooks] %s handler from %s failed after it was no longer awaited: %s",
                hook,
                plugin_id,
                task.exception(),
            )

    def _count(self, hook: str, reg: HookRegistration, started: float) -> None:
        key = (hook, reg.plugin_id)
        self.calls[key] = self.calls.get(key, 0) + 1
        if self.trace:
            log.info("[hooks] %s → %s (%.3f ms)", hook, reg.plugin_id, (time.perf_counter() - started) * 1000)


def _spec(hook: str) -> HookSpec:
    from homarus.plugins.hookspecs import HOOKS

    return HOOKS[hook]


def _blocked(spec: HookSpec, plugin_id: str, exc: Exception) -> Any:
    reason = f"blocked because {spec.name} hook from {plugin_id} failed: {exc}"
    if spec.name == "before_tool_call":
        return ev.BeforeToolCallResult(block=True, block_reason=f"Tool call {reason}")
    if spec.name == "before_agent_run":
        return ev.BeforeAgentRunResult(outcome="block", reason=reason)
    return ev.BeforeInstallResult(block=True, reason=reason)


def _carry(previous: Any, result: Any) -> Any:
    """``result`` with the fields it leaves None taken from ``previous`` (a copy; the handler's object is kept)."""
    kept = {
        f.name: getattr(previous, f.name)
        for f in fields(result)
        if getattr(result, f.name) is None and getattr(previous, f.name) is not None
    }
    return replace(result, **kept) if kept else result


def _discard(awaitable: Any) -> None:
    if inspect.iscoroutine(awaitable):
        awaitable.close()  # never awaited: close it so Python does not warn
