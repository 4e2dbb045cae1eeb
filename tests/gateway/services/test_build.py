"""The lazy services: listed once (GatewayServices), one builder for each."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from homarus.gateway.context import GatewayContext, GatewayServices
from homarus.gateway.services.build import SERVICES, LazyServices


def test_every_declared_service_has_a_builder_and_the_context_has_them() -> None:
    declared = set(GatewayServices.__annotations__)
    assert len(declared) == 27 and declared == set(SERVICES)
    assert issubclass(GatewayContext, GatewayServices)
    assert not [name for name in declared if name in LazyServices.__dict__]  # built, never preset


def test_unknown_attribute_is_an_attribute_error_and_built_says_what_exists() -> None:
    class Holder(LazyServices):
        pass

    holder = Holder()
    assert not holder.built("sessions")
    try:
        holder.nope  # type: ignore[attr-defined] # noqa: B018
    except AttributeError as exc:
        assert "nope" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("an unknown name must not be built")


def test_a_service_asked_for_by_two_threads_is_built_once(monkeypatch: pytest.MonkeyPatch) -> None:
    started, release = threading.Event(), threading.Event()
    builds: list[object] = []

    def slow(holder: object) -> object:
        started.set()
        release.wait(5)
        builds.append(object())
        return builds[-1]

    monkeypatch.setitem(SERVICES, "sessions", slow)

    class Holder(LazyServices):
        pass

    holder: Any = Holder()  # a service is typed only on the gateway's context
    got: list[object] = []
    first = threading.Thread(target=lambda: got.append(holder.sessions))
    first.start()
    assert started.wait(5)
    second = threading.Thread(target=lambda: got.append(holder.sessions))  # arrives mid-build
    second.start()
    time.sleep(0.05)
    release.set()
    first.join(5)
    second.join(5)
    assert len(builds) == 1 and got == [builds[0], builds[0]]


def test_a_service_that_needs_itself_is_still_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(SERVICES, "sessions", lambda holder: holder.sessions)

    class Holder(LazyServices):
        pass

    holder: Any = Holder()
    with pytest.raises(RuntimeError, match="needs itself"):
        _ = holder.sessions
