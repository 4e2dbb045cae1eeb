"""A route that imports its HTTP surface on the first request under its path.

The gateway knows where each surface lives (``/v1``, ``/tools/invoke``, the hooks path, ...)
without importing it: :class:`LazyMount` matches the path prefix, and the first matching request
imports ``module:factory``, builds that surface's routes once and serves through them (their own
404/405 answers included). A surface nobody calls costs nothing.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.routing import BaseRoute, Match, Router

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

__all__ = ["LazyMount"]


class LazyMount(BaseRoute):
    def __init__(self, prefix: str | Callable[[], str], target: str, *args: Any) -> None:
        """``prefix``: the path (or a callable giving it, read per request); ``target``:
        ``module:factory``, called with ``args`` to build the surface's routes."""
        self._prefix = prefix
        self.target = target
        self._args = args
        self._router: Router | None = None

    @property
    def path(self) -> str:
        return self._prefix() if callable(self._prefix) else self._prefix

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http":
            return Match.NONE, {}
        path: str = scope["path"]
        prefix = self.path.rstrip("/")
        if path == prefix or path.startswith(prefix + "/"):
            return Match.FULL, {}
        return Match.NONE, {}

    @property
    def loaded(self) -> bool:
        return self._router is not None

    def router(self) -> Router:
        if self._router is None:
            module_name, _, attr = self.target.partition(":")
            factory = getattr(importlib.import_module(module_name), attr)
            self._router = Router(routes=factory(*self._args))
        return self._router

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.router()(scope, receive, send)
