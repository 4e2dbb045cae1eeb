"""The config model tree: defaults, bind/auth/agent validation, secret masking."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from homarus.config.agents import DEFAULT_AGENT_ID, AgentsConfig
from homarus.config.gateway import AuthConfig, GatewayConfig
from homarus.config.schema import HomarusConfig
from homarus.config.session import SessionConfig
from homarus.config.values import is_loopback_host, resolve_bind_host

TOKEN = "tok-5f0c1e9a7b3d4e21"
PASSWORD = "pw-9d8c7b6a5f4e"


def errors(model: type[BaseModel] | type[HomarusConfig], data: Any) -> list[tuple[tuple[int | str, ...], str]]:
    with pytest.raises(ValidationError) as info:
        model.model_validate(data)
    return [(tuple(e["loc"]), e["msg"]) for e in info.value.errors()]


# --- defaults -----------------------------------------------------------------------------------


def test_defaults() -> None:
    c = HomarusConfig()
    assert c.schema_ is None
    assert (c.gateway.port, c.gateway.bind) == (18789, "loopback")
    auth = c.gateway.auth
    assert (auth.mode, auth.token, auth.password) == ("token", None, None)
    rl = auth.rate_limit
    assert (rl.max_attempts, rl.window_ms, rl.lockout_ms, rl.exempt_loopback) == (10, 60_000, 300_000, False)
    assert (c.session.main_key, c.session.scope) == ("main", "per-sender")
    assert c.agents.list == ()
    assert c.agents.defaults.workspace is None


def test_camel_case_keys_and_schema_alias() -> None:
    c = HomarusConfig.model_validate(
        {
            "$schema": "https://example.invalid/homarus.schema.json",
            "gateway": {"auth": {"rateLimit": {"maxAttempts": 3, "windowMs": 1000, "lockoutMs": 0}}},
            "session": {"mainKey": "home", "scope": "global"},
        }
    )
    assert c.schema_ == "https://example.invalid/homarus.schema.json"
    rl = c.gateway.auth.rate_limit
    assert (rl.max_attempts, rl.window_ms, rl.lockout_ms) == (3, 1000, 0)
    assert (c.session.main_key, c.session.scope) == ("home", "global")


def test_dump_by_alias_is_camel_case() -> None:
    dumped = HomarusConfig().model_dump(by_alias=True, mode="json")
    assert dumped["gateway"]["auth"]["rateLimit"]["maxAttempts"] == 10
    assert dumped["session"]["mainKey"] == "main"
    assert "$schema" in dumped


def test_models_are_frozen() -> None:
    c = HomarusConfig()
    with pytest.raises(ValidationError):
        c.gateway.port = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    ("data", "loc"),
    [
        ({"nope": 1}, ("nope",)),
        ({"gateway": {"nope": 1}}, ("gateway", "nope")),
        ({"gateway": {"auth": {"nope": 1}}}, ("gateway", "auth", "nope")),
        ({"gateway": {"auth": {"rateLimit": {"nope": 1}}}}, ("gateway", "auth", "rateLimit", "nope")),
        ({"session": {"nope": 1}}, ("session", "nope")),
        ({"agents": {"nope": 1}}, ("agents", "nope")),
        ({"agents": {"defaults": {"nope": 1}}}, ("agents", "defaults", "nope")),
        ({"agents": {"list": [{"id": "a", "nope": 1}]}}, ("agents", "list", 0, "nope")),
    ],
)
def test_unknown_keys_rejected_everywhere(data: dict[str, Any], loc: tuple[Any, ...]) -> None:
    assert errors(HomarusConfig, data) == [(loc, "Extra inputs are not permitted")]


# --- port and bind ------------------------------------------------------------------------------


@pytest.mark.parametrize("port", [0, 1, 18789, 65535])
def test_port_range_ok(port: int) -> None:
    assert GatewayConfig(port=port).port == port


@pytest.mark.parametrize("port", [-1, 65536])
def test_port_range_bad(port: int) -> None:
    assert errors(GatewayConfig, {"port": port})[0][0] == ("port",)


@pytest.mark.parametrize("bind", ["loopback", "lan", "127.0.0.1", "0.0.0.0", "192.168.1.20", "::1", "::"])
def test_bind_ok(bind: str) -> None:
    assert GatewayConfig(bind=bind).bind == bind


@pytest.mark.parametrize("bind", ["localhost", "auto", "tailnet", "", "LAN", "256.1.1.1", "example.com"])
def test_bind_bad(bind: str) -> None:
    assert errors(GatewayConfig, {"bind": bind}) == [
        (("bind",), f"Value error, bind must be 'loopback', 'lan' or an IP address, not {bind!r}")
    ]


@pytest.mark.parametrize(
    ("bind", "host"),
    [("loopback", "127.0.0.1"), ("lan", "0.0.0.0"), ("10.1.2.3", "10.1.2.3"), ("::1", "::1"), ("0:0::1", "::1")],
)
def test_resolve_bind_host(bind: str, host: str) -> None:
    assert resolve_bind_host(bind) == host


def test_resolve_bind_host_rejects() -> None:
    with pytest.raises(ValueError, match="bind must be 'loopback', 'lan' or an IP address, not 'custom'"):
        resolve_bind_host("custom")


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("10.0.0.1", False),
        ("::", False),
        ("example.com", False),
        ("localhost.example.com", False),
    ],
)
def test_is_loopback_host(host: str, expected: bool) -> None:
    assert is_loopback_host(host) is expected


# --- auth ----------------------------------------------------------------------------------------


def test_auth_modes() -> None:
    assert AuthConfig(mode="none").mode == "none"
    assert errors(AuthConfig, {"mode": "trusted-proxy"})[0][0] == ("mode",)


def test_password_mode_requires_password() -> None:
    assert errors(AuthConfig, {"mode": "password"}) == [
        ((), "Value error, auth.mode 'password' needs gateway.auth.password")
    ]
    ok = AuthConfig.model_validate({"mode": "password", "password": PASSWORD})
    assert ok.password is not None and ok.password.get_secret_value() == PASSWORD


def test_token_mode_does_not_require_token() -> None:
    assert AuthConfig(mode="token").token is None


@pytest.mark.parametrize("field", ["token", "password"])
@pytest.mark.parametrize("value", ["", "1234567", "   abc   ", "        "])
def test_secrets_need_eight_non_blank_characters(field: str, value: str) -> None:
    assert errors(AuthConfig, {field: value}) == [((field,), "Value error, must be at least 8 characters")]


def test_secret_of_exactly_eight_is_kept_verbatim() -> None:
    auth = AuthConfig.model_validate({"token": " 12345678 "})
    assert auth.token is not None and auth.token.get_secret_value() == " 12345678 "


def test_rate_limit_bounds() -> None:
    assert errors(AuthConfig, {"rateLimit": {"maxAttempts": 0}})[0][0] == ("rateLimit", "maxAttempts")
    assert errors(AuthConfig, {"rateLimit": {"windowMs": 999}})[0][0] == ("rateLimit", "windowMs")
    assert errors(AuthConfig, {"rateLimit": {"lockoutMs": -1}})[0][0] == ("rateLimit", "lockoutMs")


# --- secrets masked --------------------------------------------------------------------------------


def test_secrets_masked_in_repr_and_str() -> None:
    c = HomarusConfig.model_validate({"gateway": {"auth": {"mode": "password", "token": TOKEN, "password": PASSWORD}}})
    for text in (repr(c), str(c), repr(c.gateway), str(c.gateway.auth), repr(c.gateway.auth)):
        assert TOKEN not in text
        assert PASSWORD not in text
    assert "**********" in repr(c)
    assert c.gateway.auth.token is not None and c.gateway.auth.token.get_secret_value() == TOKEN


def test_secrets_masked_in_default_dumps() -> None:
    c = HomarusConfig.model_validate({"gateway": {"auth": {"token": TOKEN}}})
    assert TOKEN not in str(c.model_dump())
    assert TOKEN not in c.model_dump_json()
    assert c.model_dump(mode="json")["gateway"]["auth"]["token"] == "**********"


# --- session and agents -----------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["Main", "", "-x", "a b", "x" * 65])
def test_session_main_key_pattern(key: str) -> None:
    assert errors(SessionConfig, {"mainKey": key})[0][0] == ("mainKey",)


def test_session_scope_values() -> None:
    assert SessionConfig(scope="global").scope == "global"
    assert errors(SessionConfig, {"scope": "per-peer"})[0][0] == ("scope",)


def test_agent_ids_and_default() -> None:
    agents = AgentsConfig.model_validate({"list": [{"id": "a"}, {"id": "b", "default": True}, {"id": "c_1-x"}]})
    assert agents.ids == ("a", "b", "c_1-x")
    assert agents.default_id == "b"


def test_first_agent_is_default_when_none_marked() -> None:
    assert AgentsConfig.model_validate({"list": [{"id": "first"}, {"id": "second"}]}).default_id == "first"


def test_no_agents_means_main() -> None:
    assert AgentsConfig().default_id == DEFAULT_AGENT_ID == "main"
    assert AgentsConfig().ids == ("main",)


def test_duplicate_agent_ids_rejected() -> None:
    assert errors(AgentsConfig, {"list": [{"id": "a"}, {"id": "b"}, {"id": "a"}]}) == [
        (("list",), "Value error, duplicate agent id 'a'")
    ]


def test_two_defaults_rejected() -> None:
    assert errors(AgentsConfig, {"list": [{"id": "a", "default": True}, {"id": "b", "default": True}]}) == [
        (("list",), "Value error, more than one agent is marked default")
    ]


@pytest.mark.parametrize("agent_id", ["", "Work", "-a", "a.b", "a" * 65])
def test_bad_agent_ids(agent_id: str) -> None:
    assert errors(AgentsConfig, {"list": [{"id": agent_id}]})[0][0] == ("list", 0, "id")


def test_agent_id_is_required() -> None:
    assert errors(AgentsConfig, {"list": [{"name": "x"}]}) == [(("list", 0, "id"), "Field required")]


def test_memory_paths_without_the_section_are_the_sections_defaults() -> None:
    """The run path reads ``memory_paths`` without building ``memorySearch``: what it answers for an
    absent section must be what the section's defaults say."""
    from homarus.config.base import DEFAULTS
    from homarus.config.memory import MemorySearchConfig

    absent = AgentsConfig().defaults
    assert absent.memory_search_ is DEFAULTS
    built = MemorySearchConfig()
    assert absent.memory_paths == (built.extra_paths if built.enabled else None) == ()
    assert absent.memory_search_ is DEFAULTS  # still not built

    off = AgentsConfig.model_validate({"defaults": {"memorySearch": {"enabled": False}}}).defaults
    assert off.memory_paths is None
    extra = AgentsConfig.model_validate({"defaults": {"memorySearch": {"extraPaths": ["notes"]}}}).defaults
    assert extra.memory_paths == ("notes",)
