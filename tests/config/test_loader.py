"""Config file resolution, JSON5 parsing, ${ENV} substitution, env overrides, error messages."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from homarus.config.gateway import DEFAULT_PORT
from homarus.config.loader import (
    ConfigIssue,
    StatePaths,
    apply_env_overrides,
    load_config,
    parse_config_text,
    resolve_config,
    substitute_env,
    validate_config,
)
from homarus.errors import ConfigError

TOKEN = "file-token-0123456789"


@pytest.fixture
def paths(tmp_path: Path) -> StatePaths:
    state = tmp_path / "state"
    state.mkdir()
    return StatePaths(state_dir=state, config_path=state / "homarus.json")


def write(paths: StatePaths, text: str) -> None:
    paths.config_path.write_text(text, encoding="utf-8")


def load_error(paths: StatePaths, text: str, env: dict[str, str] | None = None) -> ConfigError:
    write(paths, text)
    with pytest.raises(ConfigError) as info:
        load_config(paths, env={} if env is None else env)
    return info.value


# --- StatePaths --------------------------------------------------------------------------------


def test_state_paths_default_under_home() -> None:
    p = StatePaths.from_env({})
    assert p.state_dir == Path.home() / ".homarus"
    assert p.config_path == Path.home() / ".homarus" / "homarus.json"
    assert p.token_path == Path.home() / ".homarus" / "gateway.token"


def test_state_paths_from_state_dir() -> None:
    p = StatePaths.from_env({"HOMARUS_STATE_DIR": "/srv/homarus"})
    assert p == StatePaths(Path("/srv/homarus"), Path("/srv/homarus/homarus.json"))
    assert p.token_path == Path("/srv/homarus/gateway.token")


def test_state_paths_config_overrides_file_only() -> None:
    p = StatePaths.from_env({"HOMARUS_STATE_DIR": "/srv/h", "HOMARUS_CONFIG": "/etc/homarus.json5"})
    assert p.state_dir == Path("/srv/h")
    assert p.config_path == Path("/etc/homarus.json5")
    assert p.token_path == Path("/srv/h/gateway.token")


def test_state_paths_expand_user() -> None:
    p = StatePaths.from_env({"HOMARUS_STATE_DIR": "~/st", "HOMARUS_CONFIG": "~/c.json"})
    assert p.state_dir == Path.home() / "st"
    assert p.config_path == Path.home() / "c.json"


def test_state_paths_empty_values_mean_unset() -> None:
    assert StatePaths.from_env({"HOMARUS_STATE_DIR": "", "HOMARUS_CONFIG": ""}) == StatePaths.from_env({})


# --- missing file, JSON5 -------------------------------------------------------------------------


def test_missing_file_means_defaults(paths: StatePaths) -> None:
    loaded = load_config(paths, env={})
    assert loaded.exists is False
    assert (loaded.raw, loaded.parsed, loaded.hash) == (None, None, None)
    assert loaded.path == paths.config_path
    assert loaded.env_overrides == ()
    assert loaded.config.gateway.port == DEFAULT_PORT == 18789
    assert loaded.config.gateway.bind == "loopback"
    assert loaded.config.gateway.auth.mode == "token"
    assert loaded.config.gateway.auth.token is None


def test_json5_comments_trailing_commas_unquoted_keys(paths: StatePaths) -> None:
    text = """// Homarus config
{
  /* block comment */
  gateway: {
    port: 19000,   // trailing comma next
    bind: 'lan',
  },
  agents: { list: [ { id: "work", default: true, }, ], },
}
"""
    write(paths, text)
    loaded = load_config(paths, env={})
    assert loaded.exists is True
    assert loaded.raw == text
    assert loaded.hash == hashlib.sha256(text.encode()).hexdigest()
    assert loaded.parsed == {
        "gateway": {"port": 19000, "bind": "lan"},
        "agents": {"list": [{"id": "work", "default": True}]},
    }
    assert loaded.config.gateway.port == 19000
    assert loaded.config.gateway.bind == "lan"
    assert loaded.config.agents.default_id == "work"


def test_empty_object_file(paths: StatePaths) -> None:
    write(paths, "{}")
    loaded = load_config(paths, env={})
    assert loaded.exists is True
    assert loaded.parsed == {}
    assert loaded.config.gateway.port == 18789


@pytest.mark.parametrize("text", ["[1, 2]", '"just a string"', "42", "null"])
def test_top_level_must_be_object(paths: StatePaths, text: str) -> None:
    err = load_error(paths, text)
    assert err.message == f"{paths.config_path}: the top level must be an object"
    assert err.path == str(paths.config_path)


def test_invalid_json5_names_file(paths: StatePaths) -> None:
    err = load_error(paths, "{gateway: ")
    assert err.message.startswith(f"{paths.config_path}: not valid JSON5: ")
    assert err.path == str(paths.config_path)


def test_undecodable_file_names_file(paths: StatePaths) -> None:
    paths.config_path.write_bytes(b"\xff\xfe{}")
    with pytest.raises(ConfigError) as info:
        load_config(paths, env={})
    assert info.value.message.startswith(f"{paths.config_path}: cannot read: ")


def test_parse_config_text_direct() -> None:
    assert parse_config_text("{a: 1, /* c */ b: [1,],}", path="x.json") == {"a": 1, "b": [1]}
    with pytest.raises(ConfigError, match=r"^x\.json: the top level must be an object$"):
        parse_config_text("[]", path="x.json")


# --- validation errors name path and key ---------------------------------------------------------


def test_bad_port_type_names_path_and_dotted_key(paths: StatePaths) -> None:
    err = load_error(paths, '{gateway: {port: "high"}}')
    assert err.key == "gateway.port"
    assert err.path == str(paths.config_path)
    assert err.message.startswith(f"{paths.config_path}: at gateway.port: ")
    assert "integer" in err.message


def test_port_out_of_range(paths: StatePaths) -> None:
    err = load_error(paths, "{gateway: {port: 70000}}")
    assert err.message == f"{paths.config_path}: at gateway.port: Input should be less than or equal to 65535"


def test_unknown_key_rejected(paths: StatePaths) -> None:
    err = load_error(paths, "{gateway: {prot: 1}}")
    assert err.key == "gateway.prot"
    assert err.message == f"{paths.config_path}: at gateway.prot: unknown key"


def test_unknown_top_level_keys_all_reported(paths: StatePaths) -> None:
    err = load_error(paths, "{foo: 1, bar: 2}")
    assert err.key == "foo"
    assert err.message == f"{paths.config_path}: at foo: unknown key (and 1 more: at bar: unknown key)"


def test_nested_aliased_key_path(paths: StatePaths) -> None:
    err = load_error(paths, "{gateway: {auth: {rateLimit: {maxAttempts: 0}}}}")
    assert err.key == "gateway.auth.rateLimit.maxAttempts"
    assert err.message.endswith("at gateway.auth.rateLimit.maxAttempts: Input should be greater than or equal to 1")


def test_list_index_in_key(paths: StatePaths) -> None:
    err = load_error(paths, '{agents: {list: [{id: "ok"}, {id: "Not OK"}]}}')
    assert err.key == "agents.list.1.id"


def test_validator_message_has_no_value_error_prefix(paths: StatePaths) -> None:
    err = load_error(paths, '{gateway: {bind: "everywhere"}}')
    assert err.message == (
        f"{paths.config_path}: at gateway.bind: bind must be 'loopback', 'lan' or an IP address, not 'everywhere'"
    )


def test_short_token_error_does_not_echo_it(paths: StatePaths) -> None:
    err = load_error(paths, '{gateway: {auth: {token: "tiny12"}}}')
    assert err.message == f"{paths.config_path}: at gateway.auth.token: must be at least 8 characters"
    assert "tiny12" not in err.message


@pytest.mark.parametrize("section", ["5", '"ab"', "[]", "null", "true"])
def test_non_object_gateway_section_is_a_config_error(paths: StatePaths, section: str) -> None:
    err = load_error(paths, f"{{gateway: {section}}}")
    assert err.key == "gateway"
    assert err.path == str(paths.config_path)


@pytest.mark.parametrize("env", [{}, {"HOMARUS_GATEWAY_TOKEN": "env-token-0123456789"}])
def test_non_object_auth_section_is_a_config_error(paths: StatePaths, env: dict[str, str]) -> None:
    err = load_error(paths, "{gateway: {auth: 5}}", env)
    assert err.key == "gateway.auth"


def test_validate_config_direct_and_issue_str() -> None:
    with pytest.raises(ConfigError) as info:
        validate_config({"session": {"scope": "everyone"}}, path="p.json")
    assert info.value.key == "session.scope"
    assert info.value.message == "p.json: at session.scope: Input should be 'per-sender' or 'global'"
    assert str(ConfigIssue("a.b", "bad")) == "at a.b: bad"


# --- ${ENV} substitution ---------------------------------------------------------------------------


def test_env_substitution_in_file(paths: StatePaths) -> None:
    write(paths, '{gateway: {auth: {token: "${HOMARUS_TEST_TOKEN}"}}, agents: {defaults: {workspace: "${WS}/x"}}}')
    loaded = load_config(paths, env={"HOMARUS_TEST_TOKEN": TOKEN, "WS": "/home/me"})
    token = loaded.config.gateway.auth.token
    assert token is not None and token.get_secret_value() == TOKEN
    assert loaded.config.agents.defaults.workspace == "/home/me/x"
    # the parsed file keeps the reference, not the secret
    assert loaded.parsed == {
        "gateway": {"auth": {"token": "${HOMARUS_TEST_TOKEN}"}},
        "agents": {"defaults": {"workspace": "${WS}/x"}},
    }


def test_env_escape_gives_literal(paths: StatePaths) -> None:
    write(paths, '{agents: {defaults: {workspace: "$${NOT_A_VAR}/w"}}}')
    assert load_config(paths, env={}).config.agents.defaults.workspace == "${NOT_A_VAR}/w"


def test_missing_env_var_names_key_and_path(paths: StatePaths) -> None:
    err = load_error(paths, '{gateway: {auth: {token: "${MISSING_TOKEN}"}}}')
    assert err.key == "gateway.auth.token"
    assert err.path == str(paths.config_path)
    assert err.message == f"{paths.config_path}: at gateway.auth.token: environment variable MISSING_TOKEN is not set"


def test_substitute_env_shapes() -> None:
    env = {"A": "x", "B_2": "y"}
    value = {"s": "${A}-${B_2}-${A}", "l": ["${A}", {"n": "$${A}"}], "i": 5, "b": True, "z": None}
    assert substitute_env(value, env) == {"s": "x-y-x", "l": ["x", {"n": "${A}"}], "i": 5, "b": True, "z": None}


def test_substitute_env_only_uppercase_braced_names() -> None:
    assert substitute_env("${lower} $A ${A", {"A": "x", "lower": "y"}) == "${lower} $A ${A"


def test_substitute_env_empty_value_is_allowed() -> None:
    assert substitute_env("<${E}>", {"E": ""}) == "<>"


@pytest.mark.parametrize(
    ("value", "key"),
    [("${Q}", "(root)"), (["ok", "${Q}"], "[1]"), ({"a": {"b": ["${Q}"]}}, "a.b[0]")],
)
def test_substitute_env_missing_names_location(value: object, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        substitute_env(value, {})
    assert info.value.key == key
    assert info.value.message == f"at {key}: environment variable Q is not set"


def test_substitute_env_does_not_mutate_input() -> None:
    value = {"a": ["${A}"]}
    substitute_env(value, {"A": "x"})
    assert value == {"a": ["${A}"]}


# --- environment overrides -----------------------------------------------------------------------------


def test_token_and_port_overrides(paths: StatePaths) -> None:
    write(paths, json.dumps({"gateway": {"port": 1234, "auth": {"token": TOKEN}}}))
    env = {"HOMARUS_GATEWAY_TOKEN": "env-token-0123456789", "HOMARUS_GATEWAY_PORT": "20001"}
    loaded = load_config(paths, env=env)
    assert loaded.config.gateway.port == 20001
    token = loaded.config.gateway.auth.token
    assert token is not None and token.get_secret_value() == "env-token-0123456789"
    assert loaded.env_overrides == ("HOMARUS_GATEWAY_TOKEN", "HOMARUS_GATEWAY_PORT")
    # the file content itself is untouched
    assert loaded.parsed == {"gateway": {"port": 1234, "auth": {"token": TOKEN}}}


def test_overrides_apply_without_file(paths: StatePaths) -> None:
    loaded = load_config(paths, env={"HOMARUS_GATEWAY_PORT": "0"})
    assert loaded.exists is False
    assert loaded.config.gateway.port == 0
    assert loaded.env_overrides == ("HOMARUS_GATEWAY_PORT",)


def test_password_override(paths: StatePaths) -> None:
    write(paths, '{gateway: {auth: {mode: "password"}}}')
    loaded = load_config(paths, env={"HOMARUS_GATEWAY_PASSWORD": "env-password-1"})
    password = loaded.config.gateway.auth.password
    assert password is not None and password.get_secret_value() == "env-password-1"
    assert loaded.env_overrides == ("HOMARUS_GATEWAY_PASSWORD",)


def test_empty_override_is_ignored(paths: StatePaths) -> None:
    write(paths, json.dumps({"gateway": {"port": 1234}}))
    loaded = load_config(paths, env={"HOMARUS_GATEWAY_PORT": "", "HOMARUS_GATEWAY_TOKEN": ""})
    assert loaded.config.gateway.port == 1234
    assert loaded.config.gateway.auth.token is None
    assert loaded.env_overrides == ()


def test_non_integer_port_override() -> None:
    with pytest.raises(ConfigError) as info:
        apply_env_overrides({}, {"HOMARUS_GATEWAY_PORT": "eighty"})
    assert info.value.message == "HOMARUS_GATEWAY_PORT must be an integer, not 'eighty'"


def test_out_of_range_port_override_fails_validation(paths: StatePaths) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(paths, env={"HOMARUS_GATEWAY_PORT": "99999"})
    assert info.value.key == "gateway.port"


def test_apply_env_overrides_returns_same_object_when_nothing_applies() -> None:
    data = {"gateway": {"port": 1}}
    out, applied = apply_env_overrides(data, {"UNRELATED": "1"})
    assert out is data
    assert applied == ()


def test_apply_env_overrides_does_not_mutate_input() -> None:
    data = {"gateway": {"port": 1, "auth": {"mode": "token"}}, "session": {}}
    out, applied = apply_env_overrides(data, {"HOMARUS_GATEWAY_TOKEN": "abcdefghij"})
    assert applied == ("HOMARUS_GATEWAY_TOKEN",)
    assert out == {"gateway": {"port": 1, "auth": {"mode": "token", "token": "abcdefghij"}}, "session": {}}
    assert data == {"gateway": {"port": 1, "auth": {"mode": "token"}}, "session": {}}


def test_resolve_config_returns_overrides() -> None:
    config, overrides = resolve_config({"gateway": {"bind": "${BIND}"}}, {"BIND": "::1"}, path="p")
    assert config.gateway.bind == "::1"
    assert overrides == ()


def test_env_is_not_read_from_process(paths: StatePaths, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOMARUS_GATEWAY_PORT", "4242")
    assert load_config(paths, env={}).config.gateway.port == 18789
