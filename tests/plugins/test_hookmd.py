"""HOOK.md hooks: front matter, discovery and precedence, safety, dispatch order, errors, timeouts."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from homarus.plugins.hookmd import HookMdRunner, discover_hooks, parse_front_matter

TRACE = 'event["messages"].append("{name}")\n'


def make_hook(
    root: Path,
    dirname: str,
    *,
    events: str = "[command:new]",
    name: str | None = None,
    body: str | None = None,
    front: str | None = None,
) -> Path:
    """A hook dir whose handler appends its name to ``event["messages"]`` unless ``body`` says otherwise."""
    hook_dir = root / "hooks" / dirname
    hook_dir.mkdir(parents=True, exist_ok=True)
    header = front or f"name: {name or dirname}\ndescription: the {dirname} hook\nevents: {events}\n"
    (hook_dir / "HOOK.md").write_text(f"---\n{header}---\n\n# {dirname}\n\nSome docs.\n")
    code = body or f"def handle(event):\n    {TRACE.format(name=name or dirname)}"
    (hook_dir / "handler.py").write_text(textwrap.dedent(code))
    return hook_dir


def runner(state: Path, workspace: Path | None = None, **kwargs: Any) -> HookMdRunner:
    return HookMdRunner.discover(state, workspace, **kwargs)


def test_parse_front_matter_subset() -> None:
    text = textwrap.dedent(
        """\
        ---
        name: "my-hook"
        description: 'Says: hello'  
        events: [command:new, "command:reset"]
        other:
          - a
          - "b"
        # a comment
        emoji: 🦞 # trailing comment
        metadata: {"openclaw": {"events": ["gateway:startup"]}}
        ---
        body
        """
    )
    meta = parse_front_matter(text)
    assert meta == {
        "name": "my-hook",
        "description": "Says: hello",
        "events": ["command:new", "command:reset"],
        "other": ["a", "b"],
        "emoji": "🦞",
        "metadata": {"openclaw": {"events": ["gateway:startup"]}},
    }
    assert parse_front_matter("no front matter") == {}
    with pytest.raises(ValueError, match="not closed"):
        parse_front_matter("---\nname: x\n")
    with pytest.raises(ValueError, match="key: value"):
        parse_front_matter("---\njust words\n---\n")


def test_discovery_order_precedence_and_diagnostics(tmp_path: Path) -> None:
    state, ws = tmp_path / "state", tmp_path / "ws"
    make_hook(state, "b-second")
    make_hook(state, "a-first", events="\n  - command:new\n  - agent:bootstrap")
    make_hook(
        state, "json-events", front='name: json-events\nmetadata: {"openclaw": {"events": ["gateway:startup"]}}\n'
    )
    make_hook(ws, "c-workspace")
    make_hook(ws, "shadow", name="a-first")  # tries to replace a managed hook
    make_hook(state, "no-events", front="name: no-events\n")
    make_hook(state, "broken-import", body="raise RuntimeError('bad import')\n")
    make_hook(state, "no-handle", body="x = 1\n")
    make_hook(state, "odd-event", events="[command:new, nonsense:thing]")
    (state / "hooks" / "no-handler").mkdir()
    (state / "hooks" / "no-handler" / "HOOK.md").write_text("---\nevents: [command]\n---\n")
    (state / "hooks" / ".hidden").mkdir()

    hooks, diags = discover_hooks(state, ws)
    assert [(h.name, h.origin) for h in hooks] == [
        ("a-first", "managed"),
        ("b-second", "managed"),
        ("json-events", "managed"),
        ("odd-event", "managed"),
        ("c-workspace", "workspace"),
    ]
    assert hooks[0].events == ("command:new", "agent:bootstrap") and hooks[0].description == "the a-first hook"
    assert hooks[2].events == ("gateway:startup",)
    messages = {Path(d.source).name: (d.level, d.message) for d in diags}
    assert messages["shadow"][0] == "warn" and "cannot override" in messages["shadow"][1]
    assert messages["no-events"] == ("error", "HOOK.md lists no events; skipped")
    assert "RuntimeError: bad import" in messages["broken-import"][1]
    assert messages["no-handle"][1] == "handler.py defines no handle(event); skipped"
    assert messages["no-handler"][1] == "missing handler.py; skipped"
    assert messages["odd-event"] == ("warn", "unknown event 'nonsense:thing' (kept, but nothing emits it yet)")
    assert ".hidden" not in messages
    # without a workspace only managed hooks load
    assert [h.origin for h in discover_hooks(state)[0]] == ["managed"] * 4


async def test_workspace_cannot_override_state_hook(tmp_path: Path) -> None:
    state, ws = tmp_path / "state", tmp_path / "ws"
    make_hook(state, "guard", body='def handle(event):\n    event["messages"].append("managed")\n')
    make_hook(ws, "guard", body='def handle(event):\n    event["messages"].append("workspace")\n')
    make_hook(ws, "extra")
    r = runner(state, ws)
    event: dict[str, Any] = {}
    assert await r.trigger("command", "new", event) == []
    assert event["messages"] == ["managed", "extra"]


async def test_family_matching_and_order(tmp_path: Path) -> None:
    state = tmp_path / "state"
    make_hook(state, "1-exact-new", events="[command:new]")
    make_hook(state, "2-family", events="[command]")
    make_hook(state, "3-both", events="[command:new, command]")
    make_hook(state, "4-reset", events="[command:reset]")
    make_hook(state, "5-boot", events="[agent:bootstrap]")
    r = runner(state)
    event: dict[str, Any] = {"sessionKey": "agent:main:main"}
    assert await r.trigger("command", "new", event) == []
    # family handlers first, then exact ones, each in discovery order; a hook runs at most once
    assert event["messages"] == ["2-family", "3-both", "1-exact-new"]
    assert event["type"] == "command" and event["action"] == "new" and event["timestamp"] > 0
    assert event["sessionKey"] == "agent:main:main" and event["context"] == {}
    reset: dict[str, Any] = {}
    await r.trigger("command", "reset", reset)
    assert reset["messages"] == ["2-family", "3-both", "4-reset"]
    nothing: dict[str, Any] = {}
    await r.trigger("gateway", "startup", nothing)
    assert nothing["messages"] == []


async def test_errors_are_isolated_and_returned(tmp_path: Path) -> None:
    state = tmp_path / "state"
    make_hook(state, "a-ok")
    make_hook(state, "b-boom", body="def handle(event):\n    raise ValueError('no good')\n")
    make_hook(state, "c-async-boom", body="async def handle(event):\n    raise KeyError('k')\n")
    make_hook(state, "d-ok")
    r = runner(state)
    event: dict[str, Any] = {}
    errors = await r.trigger("command", "new", event)
    assert errors == ["b-boom: ValueError: no good", "c-async-boom: KeyError: 'k'"]
    assert event["messages"] == ["a-ok", "d-ok"]


async def test_timeouts_async_and_sync(tmp_path: Path) -> None:
    state = tmp_path / "state"
    make_hook(
        state,
        "a-slow-async",
        body=(
            "import asyncio\n"
            "async def handle(event):\n"
            "    await asyncio.sleep(5)\n"
            "    event['messages'].append('late')\n"
        ),
    )
    make_hook(state, "b-slow-sync", body="import time\ndef handle(event):\n    time.sleep(0.15)\n")
    make_hook(state, "c-after")
    r = runner(state, timeout_s=0.05)
    event: dict[str, Any] = {}
    errors = await r.trigger("command", "new", event)
    assert errors == ["a-slow-async: timed out after 0.05 s", "b-slow-sync: timed out after 0.05 s"]
    assert event["messages"] == ["c-after"]  # the cancelled async handler never appended


async def test_bootstrap_mutation_and_messages_reach_the_caller(tmp_path: Path) -> None:
    state = tmp_path / "state"
    make_hook(
        state,
        "a-add",
        events="[agent:bootstrap]",
        body=(
            "def handle(event):\n"
            "    files = event['context']['bootstrap_files']\n"
            "    files.append({'name': 'EXTRA.md', 'content': 'be brief'})\n"
            "    event['messages'].append('added EXTRA.md')\n"
        ),
    )
    make_hook(
        state,
        "b-drop",
        events="[agent]",
        body=(
            "async def handle(event):\n"
            "    files = event['context']['bootstrap_files']\n"
            "    files[:] = [f for f in files if f['name'] != 'SOUL.md']\n"
        ),
    )
    files = [{"name": "AGENTS.md", "content": "a"}, {"name": "SOUL.md", "content": "s"}]
    messages: list[str] = []
    event: dict[str, Any] = {"messages": messages, "context": {"bootstrap_files": files}}
    assert await runner(state).trigger("agent", "bootstrap", event) == []
    assert [f["name"] for f in files] == ["AGENTS.md", "EXTRA.md"]  # family (b-drop) ran first
    assert messages == ["added EXTRA.md"]


def test_world_writable_hooks_are_skipped(tmp_path: Path) -> None:
    state = tmp_path / "state"
    open_dir = make_hook(state, "open-dir")
    os.chmod(open_dir, 0o777)  # noqa: S103 - the point of the test
    open_file = make_hook(state, "open-file")
    os.chmod(open_file / "handler.py", 0o666)  # noqa: S103 - the point of the test
    open_md = make_hook(state, "open-md")
    os.chmod(open_md / "HOOK.md", 0o646)  # noqa: S103 - the point of the test
    make_hook(state, "fine")
    hooks, diags = discover_hooks(state)
    assert [h.name for h in hooks] == ["fine"]
    assert {Path(d.source).name: d.message for d in diags} == {
        "open-dir": "open-dir is world-writable; skipped",
        "open-file": "handler.py is world-writable; skipped",
        "open-md": "HOOK.md is world-writable; skipped",
    }
    os.chmod(state / "hooks", 0o777)  # noqa: S103 - the point of the test
    hooks, diags = discover_hooks(state)
    assert hooks == [] and diags[0].message == "hooks directory is world-writable; skipped"


def test_handlers_get_unique_module_names(tmp_path: Path) -> None:
    state, ws = tmp_path / "state", tmp_path / "ws"
    body = "COUNT = []\ndef handle(event):\n    COUNT.append(1)\n"
    make_hook(state, "same", body=body)
    make_hook(ws, "other", body=body)
    hooks, _ = discover_hooks(state, ws)
    modules = {h.name: sys.modules[h.handler.__module__] for h in hooks}
    assert modules["same"] is not modules["other"]
    assert all(m.__name__.startswith("_homarus_hookmd_") for m in modules.values())
    assert "handler" not in sys.modules or sys.modules["handler"] not in modules.values()
