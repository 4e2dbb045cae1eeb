"""MethodRegistry: registration rules and dispatch (role gate, scopes, params validation)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import pytest
from pydantic import Field

from homarus.errors import Forbidden, InvalidRequest, RegistrationError
from homarus.gateway.client import ClientInfo
from homarus.gateway.router import (
    AnyParams,
    EmptyParams,
    MethodCall,
    MethodRegistry,
    MethodSpec,
    Params,
)
from homarus.security.scopes import ADMIN, APPROVALS, PAIRING, READ, WRITE

if TYPE_CHECKING:
    from homarus.gateway.app import Gateway


class EchoParams(Params):
    text: str = Field(min_length=1)
    count: int = 1


class Recorder:
    """A handler that remembers what it was called with."""

    def __init__(self, result: Any = "done") -> None:
        self.calls: list[tuple[MethodCall, Any]] = []
        self.result = result

    async def __call__(self, call: MethodCall, params: Any) -> Any:
        self.calls.append((call, params))
        return self.result


async def noop(call: MethodCall, params: Any) -> None:
    return None


def client(role: str = "operator", scopes: frozenset[str] = frozenset()) -> ClientInfo:
    return ClientInfo(
        conn_id="conn-1",
        ip="127.0.0.1",
        role=role,
        scopes=scopes,
        protocol=3,
        client_id="cli",
        client_mode="cli",
        client_version="1.0.0",
        platform="linux",
    )


def call(method: str, role: str = "operator", scopes: frozenset[str] = frozenset()) -> MethodCall:
    return MethodCall(cast("Gateway", object()), client(role, scopes), "req-1", method)


ADMIN_ONLY = frozenset({ADMIN})
READER = frozenset({READ})
WRITER = frozenset({WRITE})
EVERYTHING_BUT_ADMIN = frozenset({READ, WRITE, APPROVALS, PAIRING})


# --- registration ------------------------------------------------------------------------------


def test_register_returns_spec_with_defaults() -> None:
    registry = MethodRegistry()
    spec = registry.register("status", noop, scope=READ)
    assert spec == MethodSpec("status", READ, noop, EmptyParams, "core", True, ("operator",))
    assert registry.get("status") is spec
    assert "status" in registry
    assert "other" not in registry
    assert registry.get("other") is None


def test_duplicate_registration_names_both_owners() -> None:
    registry = MethodRegistry()
    registry.register("status", noop, scope=READ)
    with pytest.raises(RegistrationError) as info:
        registry.register("status", noop, scope=READ, owner="plugin-weather")
    err = info.value
    assert err.message == "method 'status' is already registered by 'core'; 'plugin-weather' cannot register it again"
    assert err.details == {"method": "status", "owner": "core", "conflictingOwner": "plugin-weather"}
    kept = registry.get("status")
    assert kept is not None and kept.owner == "core"


def test_duplicate_between_plugins() -> None:
    registry = MethodRegistry()
    registry.register("weather.get", noop, scope=READ, owner="plugin-a")
    with pytest.raises(RegistrationError, match="already registered by 'plugin-a'; 'plugin-b' cannot"):
        registry.register("weather.get", noop, scope=WRITE, owner="plugin-b")
    spec = registry.get("weather.get")
    assert spec is not None and (spec.owner, spec.scope) == ("plugin-a", READ)


@pytest.mark.parametrize("name", ["", " status", "status ", "\tx", " "])
def test_invalid_method_names(name: str) -> None:
    with pytest.raises(RegistrationError, match=r"^invalid method name "):
        MethodRegistry().register(name, noop, scope=READ)


@pytest.mark.parametrize("name", ["config.something", "exec.approvals.get", "wizard.start", "update.run"])
def test_plugin_in_reserved_namespace_forced_to_admin(name: str) -> None:
    spec = MethodRegistry().register(name, noop, scope=READ, owner="plugin-x")
    assert spec.scope == ADMIN


def test_plugin_with_no_scope_in_reserved_namespace_forced_to_admin() -> None:
    assert MethodRegistry().register("config.leak", noop, scope=None, owner="p").scope == ADMIN


@pytest.mark.parametrize("name", ["configure", "config", "weather.get", "exec.approval.request"])
def test_plugin_outside_reserved_namespaces_keeps_scope(name: str) -> None:
    assert MethodRegistry().register(name, noop, scope=WRITE, owner="plugin-x").scope == WRITE


def test_core_keeps_declared_scope_in_reserved_namespace() -> None:
    assert MethodRegistry().register("config.get", noop, scope=READ).scope == READ


def test_advertised_is_sorted_and_excludes_hidden() -> None:
    registry = MethodRegistry()
    registry.register("status", noop, scope=READ)
    registry.register("health", noop, scope=None)
    registry.register("secret.hidden", noop, scope=ADMIN, advertised=False)
    registry.register("agents.list", noop, scope=READ)
    assert registry.advertised() == ["agents.list", "health", "status"]


# --- dispatch ------------------------------------------------------------------------------------


@pytest.fixture
def registry() -> MethodRegistry:
    return MethodRegistry()


async def test_dispatch_runs_handler_with_parsed_params(registry: MethodRegistry) -> None:
    handler = Recorder({"echo": True})
    registry.register("echo", handler, scope=WRITE, params=EchoParams)
    c = call("echo", scopes=WRITER)
    assert await registry.dispatch(c, {"text": "hi", "count": 2}) == {"echo": True}
    assert len(handler.calls) == 1
    got_call, got_params = handler.calls[0]
    assert got_call is c
    assert got_params == EchoParams(text="hi", count=2)


async def test_dispatch_none_params_become_empty_object(registry: MethodRegistry) -> None:
    handler = Recorder()
    registry.register("status", handler, scope=READ)
    assert await registry.dispatch(call("status", scopes=READER), None) == "done"
    assert handler.calls[0][1] == EmptyParams()


async def test_any_params_accepts_extra_fields(registry: MethodRegistry) -> None:
    handler = Recorder()
    registry.register("free", handler, scope=READ, params=AnyParams)
    await registry.dispatch(call("free", scopes=READER), {"anything": [1, 2]})
    assert handler.calls[0][1].model_extra == {"anything": [1, 2]}


async def test_unknown_method_for_admin(registry: MethodRegistry) -> None:
    with pytest.raises(InvalidRequest) as info:
        await registry.dispatch(call("no.such.thing", scopes=ADMIN_ONLY), {})
    assert not isinstance(info.value, Forbidden)
    assert info.value.message == "unknown method: no.such.thing"


@pytest.mark.parametrize("scopes", [frozenset(), READER, WRITER, EVERYTHING_BUT_ADMIN])
async def test_unknown_method_for_non_admin_looks_like_missing_scope(
    registry: MethodRegistry, scopes: frozenset[str]
) -> None:
    with pytest.raises(Forbidden) as info:
        await registry.dispatch(call("no.such.thing", scopes=scopes), {})
    assert info.value.message == "missing scope: operator.admin"
    assert info.value.details == {
        "code": "MISSING_SCOPE",
        "missingScope": "operator.admin",
        "requiredScopes": ["operator.admin"],
    }


async def test_missing_declared_scope(registry: MethodRegistry) -> None:
    handler = Recorder()
    registry.register("chat.send", handler, scope=WRITE)
    with pytest.raises(Forbidden, match=r"^missing scope: operator.write$"):
        await registry.dispatch(call("chat.send", scopes=READER), {})
    assert handler.calls == []


async def test_write_satisfies_read(registry: MethodRegistry) -> None:
    registry.register("status", Recorder("ok"), scope=READ)
    assert await registry.dispatch(call("status", scopes=WRITER), {}) == "ok"


async def test_admin_satisfies_any_scope(registry: MethodRegistry) -> None:
    registry.register("device.pair.list", Recorder("ok"), scope=PAIRING)
    assert await registry.dispatch(call("device.pair.list", scopes=ADMIN_ONLY), {}) == "ok"


async def test_plugin_reserved_method_refused_to_reader(registry: MethodRegistry) -> None:
    registry.register("config.something", Recorder("leak"), scope=READ, owner="plugin-x")
    with pytest.raises(Forbidden, match=r"^missing scope: operator.admin$"):
        await registry.dispatch(call("config.something", scopes=READER), {})
    assert await registry.dispatch(call("config.something", scopes=ADMIN_ONLY), {}) == "leak"


async def test_params_unexpected_property(registry: MethodRegistry) -> None:
    handler = Recorder()
    registry.register("status", handler, scope=READ)
    with pytest.raises(InvalidRequest) as info:
        await registry.dispatch(call("status", scopes=READER), {"x": 1})
    assert info.value.message == "invalid status params: at root: unexpected property 'x'"
    assert handler.calls == []


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "invalid echo params: at root: must have required property 'text'"),
        ({"text": ""}, "invalid echo params: at /text: must NOT have fewer than 1 characters"),
        ({"text": "a", "count": "2"}, "invalid echo params: at /count: must be integer"),
        ({"text": 5}, "invalid echo params: at /text: must be string"),
        ([1], "invalid echo params: at root: must be object"),
        ("text", "invalid echo params: at root: must be object"),
        (
            {"count": 1.5, "y": 0},
            "invalid echo params: at root: must have required property 'text'; "
            "at /count: must be integer; at root: unexpected property 'y'",
        ),
    ],
)
async def test_params_validation_messages(registry: MethodRegistry, params: Any, message: str) -> None:
    registry.register("echo", noop, scope=WRITE, params=EchoParams)
    with pytest.raises(InvalidRequest) as info:
        await registry.dispatch(call("echo", scopes=WRITER), params)
    assert info.value.message == message


async def test_scope_checked_before_params(registry: MethodRegistry) -> None:
    registry.register("echo", noop, scope=WRITE, params=EchoParams)
    with pytest.raises(Forbidden, match=r"^missing scope: operator.write$"):
        await registry.dispatch(call("echo", scopes=READER), {"bogus": 1})


async def test_node_calling_operator_method(registry: MethodRegistry) -> None:
    handler = Recorder()
    registry.register("status", handler, scope=READ)
    with pytest.raises(InvalidRequest) as info:
        await registry.dispatch(call("status", role="node", scopes=ADMIN_ONLY), {})
    assert not isinstance(info.value, Forbidden)
    assert info.value.message == "unauthorized role: node"
    assert handler.calls == []


async def test_operator_calling_node_method(registry: MethodRegistry) -> None:
    registry.register("node.event", noop, scope=None, roles=("node",))
    with pytest.raises(InvalidRequest, match=r"^unauthorized role: operator$"):
        await registry.dispatch(call("node.event", scopes=ADMIN_ONLY), {})


async def test_node_methods_are_not_scope_checked(registry: MethodRegistry) -> None:
    registry.register("node.event", Recorder("ack"), scope=ADMIN, roles=("node",))
    assert await registry.dispatch(call("node.event", role="node"), {}) == "ack"


async def test_role_checked_before_params(registry: MethodRegistry) -> None:
    registry.register("echo", noop, scope=WRITE, params=EchoParams)
    with pytest.raises(InvalidRequest, match=r"^unauthorized role: node$"):
        await registry.dispatch(call("echo", role="node"), {"bogus": 1})


@pytest.mark.parametrize(("role", "scopes"), [("operator", frozenset()), ("node", frozenset()), ("odd", READER)])
async def test_health_always_allowed(registry: MethodRegistry, role: str, scopes: frozenset[str]) -> None:
    registry.register("health", Recorder({"ok": True}), scope=ADMIN)
    assert await registry.dispatch(call("health", role=role, scopes=scopes), None) == {"ok": True}


async def test_health_still_validates_params(registry: MethodRegistry) -> None:
    registry.register("health", noop, scope=None)
    with pytest.raises(InvalidRequest, match=r"^invalid health params: at root: unexpected property 'probe'$"):
        await registry.dispatch(call("health"), {"probe": True})


async def test_handler_errors_propagate(registry: MethodRegistry) -> None:
    async def boom(call: MethodCall, params: Any) -> None:
        raise RuntimeError("handler failed")

    registry.register("boom", boom, scope=READ)
    with pytest.raises(RuntimeError, match="handler failed"):
        await registry.dispatch(call("boom", scopes=READER), {})


@pytest.mark.parametrize("scopes", [frozenset(), READER, ADMIN_ONLY])
async def test_an_originals_method_homarus_lacks_says_so_at_any_scope(
    registry: MethodRegistry, scopes: frozenset[str]
) -> None:
    with pytest.raises(InvalidRequest) as info:
        await registry.dispatch(call("tts.speak", scopes=scopes), {})
    assert not isinstance(info.value, Forbidden)
    assert info.value.message.startswith("not supported by Homarus: voice ")
    assert info.value.message.endswith("(tts.speak)")
    assert info.value.details is not None and info.value.details["code"] == "NOT_SUPPORTED"
    assert info.value.details["method"] == "tts.speak"


async def test_a_method_registered_later_under_an_originals_name_is_dispatched(registry: MethodRegistry) -> None:
    handler = Recorder("spoken")
    registry.register("tts.speak", handler, scope=READ, owner="voice-plugin", params=AnyParams)
    assert await registry.dispatch(call("tts.speak", scopes=READER), {}) == "spoken"
