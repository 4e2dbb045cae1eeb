"""``homarus.plugins.events``: every hook type is reachable from the package, and each phase's
module loads with the first use of one of its types."""

from __future__ import annotations

import importlib

import pytest

from homarus.plugins import events as ev
from tests.conftest import python_output


def test_every_exported_name_is_its_phase_modules_type() -> None:
    for name in ev.__all__:
        value = getattr(ev, name)
        if name == "HookContext":
            continue
        phase = importlib.import_module(f"homarus.plugins.events.{ev._PHASE_OF[name]}")
        assert value is getattr(phase, name), name
    assert set(ev.__all__) == {*ev._PHASE_OF, "HookContext"}


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchEvent"):
        _ = ev.NoSuchEvent


def test_a_phase_module_loads_with_its_first_type_only() -> None:
    out = python_output(
        "import sys\n"
        "from homarus.plugins import events as ev\n"
        "loaded = lambda: sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('homarus.plugins.events.'))\n"
        "ev.HookContext()\n"
        "print(*loaded(), sep=',')\n"
        "ev.AgentEndEvent\n"
        "print(*loaded(), sep=',')\n"
    )
    assert out.split() == ["context", "context,delivery"]
