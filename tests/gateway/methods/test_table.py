"""The core method table: every row resolves to a coroutine handler and a params model."""

from __future__ import annotations

import inspect

import pytest
from pydantic import BaseModel

from homarus.gateway.methods import CORE_METHODS
from homarus.gateway.router import LazyMethod, MethodRegistry


@pytest.mark.parametrize("method", CORE_METHODS, ids=lambda m: m.name)
def test_row_resolves(method: LazyMethod) -> None:
    spec = method.load()
    assert inspect.iscoroutinefunction(spec.handler), method.target
    assert issubclass(spec.params, BaseModel)
    assert spec.name == method.name and spec.scope == method.scope


def test_names_are_unique_and_registered_without_imports() -> None:
    names = [m.name for m in CORE_METHODS]
    assert len(names) == len(set(names))
    registry = MethodRegistry()
    for method in CORE_METHODS:
        registry.register_lazy(method)
    assert registry.names() == sorted(names)
    assert "chat.inject" not in registry.advertised() and "chat.send" in registry.advertised()
