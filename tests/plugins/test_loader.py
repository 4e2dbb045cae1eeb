"""Importing and registering: failures, rollback, module isolation, entry-point plugins."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from homarus.plugins.events import BeforeToolCallEvent
from homarus.plugins.loader import default_workspace, module_name_for
from tests.plugins.helpers import config_with, load, make_plugin

#: registers one of everything, then (maybe) fails
EVERYTHING = """
from homarus.plugins.events import BeforeToolCallResult

async def tool_{n}(ctx, *, x: int) -> str:
    return str(x)

async def method(params, ctx):
    return {{"ok": True}}

async def noop():
    pass

def register(api):
    api.on("before_tool_call", lambda e, c: BeforeToolCallResult(block=True, block_reason="{n}"))
    api.register_tool(tool_{n})
    api.register_gateway_method("{n}.status", method)
    api.register_http_route("/{n}", method, auth="plugin")
    api.register_command("{n}", method)
    api.register_provider("{n}-llm", type("P", (), {{"api": "x", "stream": lambda *a: None}})())
    api.register_service("{n}-svc", noop, noop)
    {tail}
"""


def everything(n: str, tail: str = "pass") -> str:
    return EVERYTHING.format(n=n, tail=tail)


def contracts(n: str) -> dict[str, list[str]]:
    return {"tools": [f"tool_{n}"]}


async def test_failures_are_isolated_and_rolled_back(tmp_path: Path) -> None:
    ext = tmp_path / "extensions"
    make_plugin(ext, "a-import", "raise RuntimeError('boom at import')\n")
    make_plugin(ext, "b-register", everything("b", "raise ValueError('boom in register')"), contracts=contracts("b"))
    make_plugin(ext, "c-async", "async def register(api):\n    api.register_command('never', print)\n")
    make_plugin(ext, "d-good", everything("d"), contracts=contracts("d"))
    make_plugin(ext, "e-noregister", "X = 1\n")
    make_plugin(ext, "f-exit", "import sys\ndef register(api):\n    sys.exit(3)\n")
    loaded = load(tmp_path, {})
    reg = loaded.registry

    assert {i: r.status for i, r in reg.records.items()} == {
        "a-import": "error",
        "b-register": "error",
        "c-async": "loaded",
        "d-good": "loaded",
        "e-noregister": "error",
        "f-exit": "error",
    }
    assert loaded.messages("a-import") == [
        "plugin failed during register: import raised RuntimeError('boom at import')"
    ]
    assert loaded.messages("b-register") == ["plugin failed during register: ValueError('boom in register')"]
    assert loaded.messages("c-async") == ["register returned a coroutine; async registration is ignored"]
    assert loaded.messages("c-async", "warn") == loaded.messages("c-async")
    assert loaded.messages("e-noregister") == ["plugin has no register(api)"]
    assert loaded.messages("f-exit") == ["plugin failed during register: SystemExit(3)"]

    # b's registrations are gone everywhere; d's are intact
    assert [h.plugin_id for h in loaded.runner.handlers("before_tool_call")] == ["d-good"]
    assert loaded.tools.names() == ["tool_d"]
    assert list(reg.methods) == ["d.status"]
    assert [r.path for r in reg.routes] == ["/d"]
    assert list(reg.commands) == ["d"]
    assert list(reg.providers) == ["d-llm"]
    assert list(reg.services) == ["d-svc"]
    assert reg.tool_owners == {"tool_d": "d-good"}
    b = reg.get("b-register")
    assert b is not None and b.registrations.count() == 0
    d = reg.get("d-good")
    assert d is not None and d.registrations.to_json() == {
        "hooks": ["before_tool_call"],
        "tools": ["tool_d"],
        "methods": ["d.status"],
        "routes": ["exact /d"],
        "commands": ["d"],
        "providers": ["d-llm"],
        "services": ["d-svc"],
        "channels": [],
    }
    outcome = await loaded.runner.modify("before_tool_call", BeforeToolCallEvent("t", {}), tool_name="t")
    assert (outcome.result.block, outcome.result.block_reason, outcome.decided_by) == (True, "d", "d-good")
    assert "homarus_plugin_a_import" not in sys.modules  # a failed import leaves no module behind


def test_registration_after_register_returned_is_ignored(tmp_path: Path) -> None:
    code = """
    saved = []
    def register(api):
        saved.append(api)

    def later():
        return saved[0].register_command("late", print)
    """
    make_plugin(tmp_path / "extensions", "late", code)
    loaded = load(tmp_path, {})
    module = sys.modules[module_name_for("late")]
    assert module.later() is False
    assert loaded.registry.commands == {}
    assert loaded.messages("late", "warn") == ["register_command called after register() returned; ignored"]


def test_same_module_file_names_do_not_collide(tmp_path: Path) -> None:
    code = "VALUE = {v!r}\ndef register(api):\n    api.register_command(VALUE, print)\n"
    make_plugin(tmp_path / "extensions", "one", code.format(v="one"))
    make_plugin(tmp_path / "extensions", "two", code.format(v="two"))
    loaded = load(tmp_path, {})
    assert sorted(loaded.registry.commands) == ["one", "two"]
    assert sys.modules["homarus_plugin_one"].VALUE == "one"
    assert sys.modules["homarus_plugin_two"].VALUE == "two"


def test_ids_that_sanitize_alike_get_distinct_modules(tmp_path: Path) -> None:
    code = "import sys\ndef register(api):\n    api.register_command(api.id.replace('.', '-'), lambda: __name__)\n"
    make_plugin(tmp_path / "extensions", "a.b", code)
    make_plugin(tmp_path / "extensions", "a_b", code)
    loaded = load(tmp_path, {})
    names = {c.handler() for c in loaded.registry.commands.values()}
    assert names == {"homarus_plugin_a_b", "homarus_plugin_a_b_2"}


def test_relative_imports_reach_sibling_modules(tmp_path: Path) -> None:
    d = make_plugin(
        tmp_path / "extensions",
        "pkg",
        "from .helper import NAME\ndef register(api):\n    api.register_command(NAME, print)\n",
    )
    (d / "helper.py").write_text("NAME = 'from-helper'\n", encoding="utf-8")
    assert list(load(tmp_path, {}).registry.commands) == ["from-helper"]


def test_api_attributes(tmp_path: Path) -> None:
    code = """
    seen = {}
    def register(api):
        seen.update(id=api.id, name=api.name, version=api.version, root=api.root_dir, state=api.state_dir,
                    cfg=api.plugin_config, logger=api.logger.name, origin=api.origin)
    """
    d = make_plugin(tmp_path / "extensions", "attrs", code, name="Attrs", version="2.0")
    load(tmp_path, {"entries": {"attrs": {"config": {"k": [1]}}}})
    seen = sys.modules[module_name_for("attrs")].seen
    assert seen == {
        "id": "attrs",
        "name": "Attrs",
        "version": "2.0",
        "root": d,
        "state": tmp_path,
        "cfg": {"k": [1]},
        "logger": "homarus.plugin.attrs",
        "origin": "global",
    }


def test_default_workspace(tmp_path: Path) -> None:
    assert default_workspace(config_with(), tmp_path) == tmp_path / "workspace"
    cfg = config_with(agents={"defaults": {"workspace": str(tmp_path / "ws")}})
    assert default_workspace(cfg, tmp_path) == tmp_path / "ws"


# -- entry points ------------------------------------------------------------------------------------
def make_distribution(site: Path, dist: str, entry_points: str, files: dict[str, str]) -> None:
    info = site / f"{dist}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points), encoding="utf-8")
    for rel, text in files.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def test_entry_point_plugin_with_manifest_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    manifest = {"id": "ep-weather", "name": "Weather", "version": "0.1", "configSchema": {"type": "object"}}
    make_distribution(
        site,
        "homarus_ep_weather",
        "[homarus.plugins]\nep-weather = homarus_ep_weather.plugin:entry\n",
        {
            "homarus_ep_weather/__init__.py": "",
            "homarus_ep_weather/plugin.py": """
                class Entry:
                    def register(self, api):
                        api.register_gateway_method("weather.now", self.now, scope="operator.read")
                    async def now(self, params, ctx):
                        return {"sunny": True}
                entry = Entry()
            """,
            "homarus_ep_weather/homarus.plugin.json": json.dumps(manifest),
        },
    )
    monkeypatch.syspath_prepend(str(site))
    loaded = load(tmp_path / "state", {})
    rec = loaded.registry.get("ep-weather")
    assert rec is not None
    assert (rec.origin, rec.status, rec.name, rec.version) == ("entrypoint", "loaded", "Weather", "0.1")
    assert rec.source == "homarus_ep_weather:homarus_ep_weather.plugin:entry"
    assert rec.root_dir == site / "homarus_ep_weather"
    assert loaded.registry.methods["weather.now"].scope == "operator.read"


def test_entry_point_manifest_is_read_without_importing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    make_distribution(
        site,
        "homarus_ep_denied",
        "[homarus.plugins]\nep-denied = homarus_ep_denied\n",
        {
            "homarus_ep_denied/__init__.py": "raise RuntimeError('imported although denied')\n",
            "homarus_ep_denied/homarus.plugin.json": '{id: "ep-denied", configSchema: {}}',
        },
    )
    monkeypatch.syspath_prepend(str(site))
    loaded = load(tmp_path / "state", {"deny": ["ep-denied"]})
    assert loaded.status("ep-denied") == "disabled"
    assert "homarus_ep_denied" not in sys.modules
    bad_config = load(tmp_path / "state", {"entries": {"ep-denied": {"config": {"x": 1}}}})
    assert bad_config.status("ep-denied") == "error"  # only because the import raised
    assert "imported although denied" in bad_config.messages("ep-denied")[0]


def test_entry_point_with_manifest_attribute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    make_distribution(
        site,
        "homarus_ep_attr",
        "[homarus.plugins]\nep-attr = homarus_ep_attr_mod\nep-wrong = homarus_ep_attr_wrong\n",
        {
            "homarus_ep_attr_mod.py": """
                manifest = {"id": "ep-attr", "configSchema": {"type": "object"}, "contracts": {"tools": ["echo"]}}
                async def echo(ctx, *, text: str) -> str:
                    return text
                def register(api):
                    api.register_tool(echo)
            """,
            "homarus_ep_attr_wrong.py": """
                manifest = {"id": "something-else", "configSchema": {}}
                def register(api):
                    pass
            """,
        },
    )
    monkeypatch.syspath_prepend(str(site))
    loaded = load(tmp_path / "state", {})
    assert loaded.status("ep-attr") == "loaded"
    assert loaded.tools.names() == ["echo"]
    assert loaded.status("ep-wrong") == "error"
    assert loaded.messages("ep-wrong") == ["manifest id 'something-else' differs from entry point 'ep-wrong'"]


def test_config_pin_beats_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    make_distribution(
        site,
        "homarus_ep_pinned",
        "[homarus.plugins]\nep-pinned = homarus_ep_pinned_mod\n",
        {"homarus_ep_pinned_mod.py": "manifest = {'id': 'ep-pinned', 'configSchema': {}}\ndef register(api): pass\n"},
    )
    monkeypatch.syspath_prepend(str(site))
    pinned = make_plugin(tmp_path / "dev", "ep-pinned")
    make_plugin(tmp_path / "state" / "extensions", "ep-pinned")
    loaded = load(tmp_path / "state", {"entries": {"ep-pinned": {"path": str(pinned)}}})
    rec = loaded.registry.get("ep-pinned")
    assert rec is not None and rec.origin == "config"
    dropped = loaded.messages("ep-pinned", "warn")
    assert [m.split(": ")[1].split(" ")[0] for m in dropped] == ["entrypoint", "global"]
    without_pin = load(tmp_path / "state", {})
    rec = without_pin.registry.get("ep-pinned")
    assert rec is not None and rec.origin == "entrypoint"
