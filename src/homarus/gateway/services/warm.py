"""The modules an agent run needs, imported in a worker thread right after the gateway is ready.

The gateway starts without them, so that it is ready sooner (``homarus gateway run`` answers
``/health`` in ~0.24 s). Imported by the first run instead, they made the first answer after a
start cost 120 ms against 5 for the next ones; imported just after ready (:func:`preload`, from
``Gateway.on_listening``), they are loaded before a client has finished connecting. In a worker
thread: the interpreter hands the loop the GIL every few milliseconds, so the loop keeps answering
meanwhile. A run asked for before that is done waits for the same imports (:func:`runs_ready`).
What it costs is memory the gateway would hold after its first run anyway (~8 MiB, in
``bench/RESULTS.md``).
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import sys
from collections.abc import Sequence

__all__ = ["RUN_MODULES", "preload", "runs_ready", "settle_heap", "settle_heaps_of_this_process", "trim_malloc"]

#: what the first run imports beyond what the gateway imported to start (together with their own
#: imports: ``tests/gateway/test_warm_up.py`` fails, naming the module, when a turn imports more)
RUN_MODULES = (
    "homarus.gateway.services.agent_runtime",  # the turn, the loop, sessions, the hook bridge
    "homarus.tools.catalog",
    "homarus.plugins.loader",
    "homarus.plugins.injections",
    "homarus.gateway.services.plugins",
    "homarus.plugins.hookmd",
    "homarus.usecases.run_events",
    "homarus.audit.log",
    "homarus.channels.model",  # where a reply is delivered
    "homarus.config.channel_registry",
    "homarus.tls",
    "encodings.utf_8_sig",  # bootstrap files are read with it
    # the config sections a run reads (their models are built on the first read)
    "homarus.config.tools",
    "homarus.config.browser",
    "homarus.config.session",
    # the methods a client asks for a run
    "homarus.gateway.methods.agent",
    "homarus.gateway.methods.chat",
)


async def preload(extra: Sequence[str] = ()) -> None:
    """Import what a run and a client need right after the gateway is ready, in a worker thread,
    so the first answer after a start costs what the next ones do. ``extra``: modules the
    configuration names (its providers' adapters). A module that fails to import is left for the
    run that needs it to report."""
    await runs_ready(extra)
    from homarus import codecache

    codecache.release()  # what the first run would have asked of it is compiled now


async def runs_ready(extra: Sequence[str] = ()) -> None:
    """Return once every module of :data:`RUN_MODULES` is imported (at once after the first time)."""
    names = [*RUN_MODULES, *extra]
    if all(name in sys.modules for name in names):
        return
    if _settling:
        gc.disable()  # what the imports make lives as long as the process: no collection need walk it
    try:
        await asyncio.to_thread(_import_all, names)
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
        trim_malloc()


def trim_malloc() -> bool:
    """Hand the C heap's free pages back to the system (glibc's ``malloc_trim``): the imports and
    the start leave freed blocks between live ones, resident until reused (~0.7 MiB of the idle
    gateway, measured). True when it was done; False where the C library has no such call."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        trim = ctypes.CDLL(None).malloc_trim  # the process's own symbols: its C library's
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return False
    trim(0)
    return True


def _import_all(names: Sequence[str]) -> None:
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            if name in RUN_MODULES:
                raise
