"""warm: the agent loop's modules are imported off the loop, and only the gateway's own process
freezes its start-up heap (a test process hosting gateways keeps a normal collector)."""

from __future__ import annotations

import asyncio
import gc
import sys
from pathlib import Path

import httpx
import pytest

from homarus.gateway.services import warm
from tests.conftest import RunningGateway, run_gateway


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


def test_a_warm_up_whose_imports_fail_leaves_the_gateway_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(warm, "RUN_MODULES", (*warm.RUN_MODULES, "homarus.no_such_module"))
    with run_gateway(tmp_path) as gw:
        done = asyncio.run_coroutine_threadsafe(_settled(gw), gw.loop).result(10)
        assert done == (True, False)  # finished without an exception; nothing built for a run
        status = httpx.get(f"{gw.http}/health", timeout=5)
        assert status.status_code == 200


async def _settled(gw: RunningGateway) -> tuple[bool, bool]:
    while gw.gateway.warm_up is None:
        await asyncio.sleep(0.01)
    await gw.gateway.warm_up
    return gw.gateway.warm_up.exception() is None, gw.gateway.built("runtime")


def test_the_c_heap_is_trimmed_where_the_c_library_can(monkeypatch: pytest.MonkeyPatch) -> None:
    import ctypes

    assert warm.trim_malloc() is True  # glibc, as on every machine the suite runs on

    class NoTrim:
        def __init__(self, name: object) -> None:
            pass

    monkeypatch.setattr(ctypes, "CDLL", NoTrim)
    assert warm.trim_malloc() is False
