"""warm: the agent loop's modules are imported off the loop, and only the gateway's own process
freezes its start-up heap (a test process hosting gateways keeps a normal collector)."""

from __future__ import annotations

import gc
import sys

import pytest

from homarus.gateway.services import warm


async def test_runs_ready_imports_the_run_modules() -> None:
    await warm.runs_ready()
    assert all(name in sys.modules for name in warm.RUN_MODULES)


def test_the_heap_is_frozen_only_in_the_gateway_process(monkeypatch: pytest.MonkeyPatch) -> None:
    before = gc.get_freeze_count()
    warm.settle_heap()
    assert gc.get_freeze_count() == before  # not the gateway's own process: nothing frozen
    monkeypatch.setattr(warm, "_settling", False)
    warm.settle_heaps_of_this_process()
    try:
        assert not gc.isenabled()  # start-up makes what lives as long as the process: not walked
        warm.settle_heap()
        assert gc.get_freeze_count() > before
        assert gc.isenabled()  # frozen, collections resume for what comes after
    finally:
        gc.enable()
        gc.unfreeze()
