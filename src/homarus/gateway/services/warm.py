"""The modules an agent run needs, imported in a worker thread the first time a run is asked for.

The gateway starts without them (lightness: a gateway nobody talks to never loads the agent
loop), so the first run used to import them on the event loop: ~200 ms of module code during
which no ping, ``health`` or other client was answered. Imported in a thread instead, the
interpreter hands the loop the GIL every few milliseconds, so the loop keeps answering while the
first run waits for its imports.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import sys

__all__ = ["RUN_MODULES", "runs_ready", "settle_heap", "settle_heaps_of_this_process"]

#: what the first run imports, heaviest first (measured with ``PYTHONPROFILEIMPORTTIME``)
RUN_MODULES = (
    "homarus.gateway.services.agent_runtime",
    "homarus.agents.runtime",
    "homarus.sessions.manager",
    "homarus.tools.catalog",
    "homarus.plugins.loader",
    "homarus.plugins.injections",
    "homarus.gateway.services.memory_access",
    "homarus.gateway.services.policy",
    "homarus.usecases.run_events",
)


async def runs_ready() -> None:
    """Return once every module of :data:`RUN_MODULES` is imported (at once after the first time)."""
    if all(name in sys.modules for name in RUN_MODULES):
        return
    if _settling:
        gc.disable()  # what the imports make lives as long as the process: no collection need walk it
    try:
        await asyncio.to_thread(_import_all)
    finally:
        settle_heap()


_settling = False


def settle_heaps_of_this_process() -> None:
    """Let :func:`settle_heap` work: only the gateway's own process (``homarus gateway run``) does,
    because freezing is for the whole process (a test run hosting gateways keeps its collector).

    Collections pause from here to the first :func:`settle_heap`: start-up (imports, config,
    services) makes objects that live as long as the process, so each collection before the freeze
    walked them for nothing (15 ms of the start, 44 ms of the first run's imports, measured with
    ``gc.callbacks``)."""
    global _settling
    _settling = True
    gc.disable()


def settle_heap() -> None:
    """Move what exists now (modules, classes, the services built so far) out of the garbage
    collector's sight: it lives as long as the process, and a full collection walks every object
    it sees. With a thousand clients connected, full collections of a gateway that had not done
    this took 76 to 118 ms each, on the event loop: the largest stalls under load (22 ms after)."""
    if _settling:
        gc.freeze()
        gc.enable()


def _import_all() -> None:
    for name in RUN_MODULES:
        importlib.import_module(name)
