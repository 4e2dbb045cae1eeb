"""``PluginApi``: every registration, its conflicts and its gates."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from homarus.messages import ModelInfo
from homarus.plugins import api as plugin_api
from homarus.plugins.discovery import BundledPlugin
from homarus.plugins.events import BeforeToolCallEvent
from homarus.plugins.loader import load_plugins, module_name_for
from homarus.plugins.registry import NextTurnInjection
from homarus.plugins.runner import HookRunner
from homarus.security.scopes import RESERVED_ADMIN_PREFIXES
from homarus.tools.base import ToolRegistry
from homarus.tools.builtin import register_builtins
from tests.plugins.helpers import config_with, load, make_plugin

HELPERS = """
async def handler(params, ctx):
    return params
async def tool_fn(ctx, *, q: str) -> str:
    \"\"\"Look something up.\"\"\"
    return q
"""


def with_helpers(tmp_path: Path, pid: str, body: str, **manifest: Any) -> None:
    code = "from homarus.plugins.events import *\n" + HELPERS + "\ndef register(api):\n"
    code += "".join(f"    {line}\n" for line in body.strip().splitlines())
    make_plugin(tmp_path / "extensions", pid, code, **manifest)


# -- gateway methods ------------------------------------------------------------------------------------
def test_gateway_method_conflicts(tmp_path: Path) -> None:
    with_helpers(tmp_path, "a-first", "api.register_gateway_method('shared.status', handler, scope='operator.read')")
    with_helpers(tmp_path, "b-second", "api.register_gateway_method('shared.status', handler)")
    with_helpers(tmp_path, "c-core", "api.register_gateway_method('sessions.list', handler)")
    with_helpers(
        tmp_path,
        "d-misc",
        """
api.register_gateway_method('config.plugin', handler, scope='operator.read')
api.register_gateway_method('bad name', handler)
api.register_gateway_method('sync.handler', lambda p, c: p)
api.register_gateway_method('bad.scope', handler, scope='root')
""",
    )
    loaded = load(tmp_path, {}, reserved_methods=frozenset({"sessions.list", "health"}))
    methods = loaded.registry.methods
    assert sorted(methods) == ["config.plugin", "shared.status"]
    assert (methods["shared.status"].plugin_id, methods["shared.status"].scope) == ("a-first", "operator.read")
    assert loaded.messages("b-second") == ["gateway method 'shared.status' already registered by plugin 'a-first'"]
    assert loaded.messages("c-core") == ["gateway method 'sessions.list' already registered (core)"]
    assert methods["config.plugin"].scope == "operator.admin"
    assert loaded.messages("d-misc") == [
        "gateway method 'config.plugin' is in a reserved namespace; scope coerced to operator.admin",
        "invalid gateway method name 'bad name'",
        "gateway method 'sync.handler': handler must be an async function",
        "gateway method 'bad.scope': invalid scope 'root'",
    ]
    # a refused registration is a diagnostic, not a failed plugin
    assert {loaded.status(p) for p in ("a-first", "b-second", "c-core", "d-misc")} == {"loaded"}


def test_reserved_prefixes_mirror_security_scopes() -> None:
    assert plugin_api.RESERVED_ADMIN_PREFIXES == RESERVED_ADMIN_PREFIXES


# -- tools ------------------------------------------------------------------------------------------------
def test_tool_contracts_and_duplicates(tmp_path: Path) -> None:
    with_helpers(tmp_path, "a-tools", "api.register_tool(tool_fn, name='lookup')", contracts={"tools": ["lookup"]})
    with_helpers(tmp_path, "b-undeclared", "api.register_tool(tool_fn)")
    with_helpers(tmp_path, "c-dup", "api.register_tool(tool_fn, name='lookup')", contracts={"tools": ["lookup"]})
    with_helpers(tmp_path, "d-notatool", "api.register_tool(42)", contracts={"tools": ["x"]})
    loaded = load(tmp_path, {})
    assert loaded.tools.names() == ["lookup"]
    tool = loaded.tools.get("lookup")
    assert tool is not None and tool.description == "Look something up."
    assert loaded.messages("b-undeclared") == ["plugin must declare contracts.tools for: tool_fn"]
    assert loaded.messages("c-dup") == ["tool 'lookup' is already registered by plugin 'a-tools'"]
    assert loaded.messages("d-notatool") == ["register_tool needs a Tool or an async function"]


def test_tool_taken_by_core_is_refused(tmp_path: Path) -> None:
    with_helpers(
        tmp_path, "shadow", "api.register_tool(tool_fn, name='current_time')", contracts={"tools": ["current_time"]}
    )
    alone = load(tmp_path, {})
    assert alone.tools.names() == ["current_time"]  # nobody else registered it here
    core = ToolRegistry()
    register_builtins(core)  # as the gateway does before loading plugins
    registry = load_plugins(
        config_with(),
        state_dir=tmp_path,
        workspace=None,
        runner=HookRunner(),
        tools=core,
        reserved_methods=frozenset(),
        bundled=(),
    )
    (diag,) = registry.diagnostics
    assert diag.message == "tool 'current_time' refused: tool 'current_time' is already registered"


# -- hooks ------------------------------------------------------------------------------------------------
def test_conversation_hooks_need_opt_in_for_non_bundled(tmp_path: Path) -> None:
    body = """
api.on('llm_input', lambda e, c: None)
api.on('agent_end', lambda e, c: None)
api.on('after_tool_call', lambda e, c: None)
"""
    with_helpers(tmp_path, "closed", body)
    with_helpers(tmp_path, "opened", body)
    loaded = load(tmp_path, {"entries": {"opened": {"hooks": {"allowConversationAccess": True}}}})
    assert loaded.registry.records["closed"].registrations.hooks == ["after_tool_call"]
    assert loaded.messages("closed") == [
        f"typed hook '{h}' blocked because non-bundled plugins must set "
        "plugins.entries.closed.hooks.allowConversationAccess=true"
        for h in ("llm_input", "agent_end")
    ]
    assert loaded.registry.records["opened"].registrations.hooks == ["llm_input", "agent_end", "after_tool_call"]
    assert [r.plugin_id for r in loaded.runner.handlers("llm_input")] == ["opened"]


def test_bundled_plugins_have_conversation_access_unless_denied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = type(sys)("homarus_test_bundled_conv")
    module.manifest = {"id": "core-conv", "configSchema": {}}  # type: ignore[attr-defined]
    module.register = lambda api: api.on("llm_output", lambda e, c: None)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "homarus_test_bundled_conv", module)
    bundled = (BundledPlugin("homarus_test_bundled_conv"),)
    assert load(tmp_path, {}, bundled=bundled).registry.records["core-conv"].registrations.hooks == ["llm_output"]
    off = load(tmp_path, {"entries": {"core-conv": {"hooks": {"allowConversationAccess": False}}}}, bundled=bundled)
    assert off.registry.records["core-conv"].registrations.hooks == []


def test_prompt_injection_gate(tmp_path: Path) -> None:
    body = """
api.on('before_prompt_build', lambda e, c: None)
api.on('before_agent_start', lambda e, c: None)
api.on('before_tool_call', lambda e, c: None)
"""
    with_helpers(tmp_path, "noinject", body)
    loaded = load(
        tmp_path,
        {"entries": {"noinject": {"hooks": {"allowPromptInjection": False, "allowConversationAccess": True}}}},
    )
    assert loaded.registry.records["noinject"].registrations.hooks == ["before_tool_call"]
    assert loaded.messages("noinject") == [
        "typed hook 'before_prompt_build' blocked by plugins.entries.noinject.hooks.allowPromptInjection=false",
        "typed hook 'before_agent_start' blocked by plugins.entries.noinject.hooks.allowPromptInjection=false",
    ]


def test_unknown_hook_matcher_and_sync_hooks(tmp_path: Path) -> None:
    with_helpers(
        tmp_path,
        "misc",
        """
api.on('no_such_hook', lambda e, c: None)
api.on('session_start', lambda e, c: None, matcher=['exec'])
api.on('before_tool_call', lambda e, c: None, matcher='exec')
api.on('tool_result_persist', handler)
api.on('before_message_write', lambda e, c: None)
api.on('after_tool_call', 'not callable')
api.on('after_tool_call', lambda e, c: None, priority='high')
api.on('after_tool_call', lambda e, c: None, matcher=[])
""",
    )
    loaded = load(tmp_path, {})
    assert loaded.messages("misc") == [
        "unknown typed hook 'no_such_hook' ignored",
        "matcher on non-tool hook 'session_start' ignored",
        "typed hook 'tool_result_persist' runs synchronously; an async handler is refused",
        "handler for hook 'after_tool_call' is not callable",
        "priority for hook 'after_tool_call' must be an integer, not 'high'",
        "matcher for hook 'after_tool_call' must be tool names",
    ]
    assert loaded.registry.records["misc"].registrations.hooks == [
        "session_start",
        "before_tool_call",
        "before_message_write",
    ]
    (session,) = loaded.runner.handlers("session_start")
    assert session.matcher is None
    (tool,) = loaded.runner.handlers("before_tool_call")
    assert tool.matcher == frozenset({"exec"})
    assert loaded.runner.handlers("before_tool_call", tool_name="read") == []


@pytest.mark.parametrize(
    ("hooks", "expected"),
    [
        ({}, {"before_tool_call": 1234, "agent_end": None}),
        ({"timeoutMs": 50}, {"before_tool_call": 50, "agent_end": 50}),
        ({"timeoutMs": 50, "timeouts": {"agent_end": 7}}, {"before_tool_call": 50, "agent_end": 7}),
    ],
)
def test_timeout_resolution(tmp_path: Path, hooks: dict[str, Any], expected: dict[str, int | None]) -> None:
    with_helpers(
        tmp_path,
        "timed",
        """
api.on('before_tool_call', lambda e, c: None, timeout_ms=1234, priority=5)
api.on('agent_end', lambda e, c: None)
""",
    )
    loaded = load(tmp_path, {"entries": {"timed": {"hooks": {**hooks, "allowConversationAccess": True}}}})
    got = {h: loaded.runner.handlers(h)[0].timeout_ms for h in expected}
    assert got == expected
    assert loaded.runner.handlers("before_tool_call")[0].priority == 5


async def test_hooks_see_their_plugin_config(tmp_path: Path) -> None:
    with_helpers(
        tmp_path,
        "cfg",
        "api.on('before_tool_call', lambda e, c: BeforeToolCallResult(block=True, block_reason=c.plugin_config['x']))",
    )
    loaded = load(tmp_path, {"entries": {"cfg": {"config": {"x": "configured"}}}})
    outcome = await loaded.runner.modify("before_tool_call", BeforeToolCallEvent("x", {}), tool_name="x")
    assert outcome.result.block_reason == "configured"


# -- routes, commands, providers, services --------------------------------------------------------------
def test_http_routes(tmp_path: Path) -> None:
    with_helpers(
        tmp_path,
        "a-routes",
        """
api.register_http_route('/hooks/a', handler, auth='plugin')
api.register_http_route('/hooks/a', handler, auth='plugin')
api.register_http_route('/api/a//', handler, auth='gateway', match='prefix')
api.register_http_route('/x', handler, auth='none')
api.register_http_route('no-slash', handler, auth='gateway')
api.register_http_route('/a/../etc', handler, auth='gateway')
""",
    )
    with_helpers(
        tmp_path,
        "b-routes",
        """
api.register_http_route('/hooks/a', handler, auth='plugin')
api.register_http_route('/api/a/sub', handler, auth='plugin')
api.register_http_route('/api/a/sub2', handler, auth='gateway')
api.register_http_route('/hooks/a', handler, auth='plugin', match='prefix')
""",
    )
    loaded = load(tmp_path, {})
    routes = [(r.path, r.match, r.auth, r.plugin_id) for r in loaded.registry.routes]
    assert routes == [
        ("/hooks/a", "exact", "plugin", "a-routes"),
        ("/api/a", "prefix", "gateway", "a-routes"),
        ("/api/a/sub2", "exact", "gateway", "b-routes"),
        ("/hooks/a", "prefix", "plugin", "b-routes"),
    ]
    assert loaded.registry.records["a-routes"].registrations.routes == ["exact /hooks/a", "prefix /api/a"]
    assert loaded.messages("a-routes") == [
        "http route '/x': auth must be 'gateway' or 'plugin', not 'none'",
        "invalid http route path 'no-slash'",
        "invalid http route path '/a/../etc'",
    ]
    assert loaded.messages("b-routes") == [
        "http route '/hooks/a' (exact) already registered by 'a-routes'",
        "http route '/api/a/sub' (exact, auth=plugin) overlaps '/api/a' (prefix, auth=gateway) of 'a-routes'",
    ]
    route = loaded.registry.route_for("/hooks/a")
    assert route is not None and (route.match, route.plugin_id) == ("exact", "a-routes")
    route = loaded.registry.route_for("/hooks/a/deeper")
    assert route is not None and route.plugin_id == "b-routes"
    route = loaded.registry.route_for("/api/a/sub2")
    assert route is not None and route.match == "exact"
    assert loaded.registry.route_for("/api/abc") is None


def test_commands(tmp_path: Path) -> None:
    with_helpers(
        tmp_path,
        "a-cmd",
        """
api.register_command('weather', handler, description='Forecast')
api.register_command('Bad', handler)
api.register_command('help', handler)
""",
    )
    with_helpers(tmp_path, "b-cmd", "api.register_command('weather', handler)")
    loaded = load(tmp_path, {}, reserved_commands=frozenset({"help"}))
    (cmd,) = loaded.registry.commands.values()
    assert (cmd.name, cmd.description, cmd.plugin_id) == ("weather", "Forecast", "a-cmd")
    assert loaded.messages("a-cmd") == [
        "command registration failed: invalid name 'Bad'",
        "command registration failed: /help is a core command",
    ]
    assert loaded.messages("b-cmd") == ["command registration failed: /weather already registered by 'a-cmd'"]


def test_providers(tmp_path: Path) -> None:
    body = """
class P:
    api = 'openai-completions'
    def stream(self, model, context, options):
        return iter(())
api.register_provider('acme', P(), models=['small', 'large'])
api.register_provider('acme', P())
api.register_provider('homarus', P())
api.register_provider('openai', P())
api.register_provider('broken', object())
"""
    with_helpers(tmp_path, "prov", body)
    cfg = config_with(models={"providers": {"openai": {"api": "openai-completions"}}})
    loaded = load(tmp_path, config=cfg)
    (prov,) = loaded.registry.providers.values()
    assert prov.provider_id == "acme"
    assert prov.models == (
        ModelInfo("acme", "small", "openai-completions"),
        ModelInfo("acme", "large", "openai-completions"),
    )
    assert loaded.messages("prov") == [
        "provider 'acme' already registered by plugin 'prov'",
        "provider 'homarus' already registered by core or the config",
        "provider 'openai' already registered by core or the config",
        "provider 'broken' must have an 'api' string and a stream() method",
    ]


async def test_services_start_and_stop_in_order(tmp_path: Path) -> None:
    code = """
events = []
def make(name, fail=False):
    async def start():
        if fail:
            raise RuntimeError('cannot start')
        events.append(('start', name))
    async def stop():
        events.append(('stop', name))
    return start, stop
def register(api):
    api.register_service('one', *make('one'))
    api.register_service('two', *make('two', fail=True))
    api.register_service('three', *make('three'))
    api.register_service('one', *make('again'))
    api.register_service('sync', lambda: None, lambda: None)
"""
    make_plugin(tmp_path / "extensions", "svc", code)
    loaded = load(tmp_path, {})
    assert list(loaded.registry.services) == ["one", "two", "three"]
    await loaded.registry.start_services()
    await loaded.registry.stop_services()
    events = sys.modules[module_name_for("svc")].events
    assert events == [("start", "one"), ("start", "three"), ("stop", "three"), ("stop", "one")]
    assert loaded.messages("svc") == [
        "service 'one' already registered by 'svc'",
        "service 'sync': start and stop must be async functions",
        "service 'two' failed to start: RuntimeError('cannot start')",
    ]


# -- next-turn injections (hook point for the injection queue) --------------------------------------------
async def test_enqueue_next_turn_injection_stub_and_hook_point(tmp_path: Path) -> None:
    code = """
saved = []
def register(api):
    saved.append(api)
"""
    make_plugin(tmp_path / "extensions", "inj", code)
    make_plugin(tmp_path / "extensions", "noinj", code.replace("saved = []", "saved = []  # other"))
    loaded = load(tmp_path, {"entries": {"noinj": {"hooks": {"allowPromptInjection": False}}}})
    api = sys.modules[module_name_for("inj")].saved[0]
    assert await api.enqueue_next_turn_injection("agent:main:main", "remember X") == {
        "enqueued": False,
        "reason": "unavailable",
    }
    await api.enqueue_next_turn_injection("agent:main:main", "again")
    assert loaded.messages("inj") == ["enqueue_next_turn_injection is not available (no injection queue is wired)"]
    assert await api.enqueue_next_turn_injection("", "x") == {"enqueued": False, "reason": "invalid_input"}

    received: list[NextTurnInjection] = []

    def injector(request: NextTurnInjection) -> dict[str, Any]:
        received.append(request)
        return {"enqueued": True, "id": "i1", "sessionKey": request.session_key}

    loaded.registry.next_turn_injector = injector
    result = await api.enqueue_next_turn_injection(
        "agent:main:main", "hello", idempotency_key="k", placement="append_context"
    )
    assert result == {"enqueued": True, "id": "i1", "sessionKey": "agent:main:main"}
    assert received == [NextTurnInjection("inj", "inj", "agent:main:main", "hello", "k", "append_context", None, None)]
    blocked = sys.modules[module_name_for("noinj")].saved[0]
    assert await blocked.enqueue_next_turn_injection("agent:main:main", "x") == {
        "enqueued": False,
        "reason": "policy_blocked",
    }
    assert len(received) == 1

    async def async_injector(request: NextTurnInjection) -> dict[str, Any]:
        return {"enqueued": True, "id": "i2", "sessionKey": request.session_key}

    loaded.registry.next_turn_injector = async_injector
    assert (await api.enqueue_next_turn_injection("k", "t"))["id"] == "i2"


CHANNEL_BODY = """
from homarus.channels.adapter import ChannelSpec
from homarus.channels.model import ChannelCapabilities
api.register_channel(ChannelSpec(id={cid!r}, label="x", capabilities=ChannelCapabilities(),
                                 factory=lambda ctx: None, config_model={model}))
"""


def test_a_channel_config_model_is_a_subclass_or_its_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from homarus.config import channel_registry

    monkeypatch.setattr(channel_registry, "_REGISTERED", {})
    cases = {
        "named": "'homarus.channels.telegram.config:TelegramConfig'",
        "badname": "'TelegramConfig'",
        "notamodel": "dict",
    }
    for cid, model in cases.items():
        body = CHANNEL_BODY.format(cid=cid, model=model)
        with_helpers(tmp_path, f"p-{cid}", body, contracts={"channels": [cid]})
    loaded = load(tmp_path, {})
    assert "named" in loaded.registry.channels and channel_registry.registered()["named"].endswith(":TelegramConfig")
    assert loaded.messages("p-badname") == ["channel 'badname': config_model 'TelegramConfig' is not 'module:Class'"]
    assert loaded.messages("p-notamodel") == ["channel 'notamodel': config_model must subclass ChannelConfig"]
    assert "badname" not in loaded.registry.channels and "notamodel" not in loaded.registry.channels
