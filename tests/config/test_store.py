"""ConfigStore writes (validate first, atomic 0600 replace, noop, restart keys) and merge_patch."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from homarus.config.paths import StatePaths
from homarus.config.redact import REDACTED
from homarus.config.store import ConfigStore, merge_patch
from homarus.errors import ConfigError, InvalidRequest

TOKEN = "store-token-0123456789"


@pytest.fixture
def paths(tmp_path: Path) -> StatePaths:
    state = tmp_path / "state"
    return StatePaths(state_dir=state, config_path=state / "homarus.json")


def seed(paths: StatePaths, text: str, mode: int = 0o600) -> ConfigStore:
    paths.state_dir.mkdir(parents=True, exist_ok=True)
    paths.config_path.write_text(text, encoding="utf-8")
    paths.config_path.chmod(mode)
    return ConfigStore.open(paths, env={})


def file_mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


SEED = """// hand-written, with comments
{
  gateway: { port: 18789, auth: { token: "store-token-0123456789" } },
}
"""


# --- open / base hash -----------------------------------------------------------------------------


def test_open_missing_file(paths: StatePaths) -> None:
    store = ConfigStore.open(paths, env={})
    assert store.current.exists is False
    assert store.current.parsed is None
    store.check_base_hash(None)  # nothing to protect yet
    store.check_base_hash("anything")


def test_open_bad_file_raises(paths: StatePaths) -> None:
    with pytest.raises(ConfigError) as info:
        seed(paths, "{gateway: {port: -5}}")
    assert info.value.key == "gateway.port"


def test_base_hash_rules(paths: StatePaths) -> None:
    store = seed(paths, SEED)
    assert store.current.hash == hashlib.sha256(SEED.encode()).hexdigest() == ConfigStore.text_hash(SEED)
    with pytest.raises(InvalidRequest, match=r"^config base hash required; re-run config.get and retry$"):
        store.check_base_hash(None)
    with pytest.raises(InvalidRequest, match=r"^config changed since last load; re-run config.get and retry$"):
        store.check_base_hash("0" * 64)
    store.check_base_hash(store.current.hash)


# --- replace ------------------------------------------------------------------------------------------


def test_replace_creates_file_0600_in_private_dir(paths: StatePaths) -> None:
    store = ConfigStore.open(paths, env={})
    data = {"gateway": {"port": 19001, "auth": {"token": TOKEN}}}
    result = store.replace(data)
    assert result.noop is False
    assert result.restart_required == ("gateway.port",)
    text = paths.config_path.read_text(encoding="utf-8")
    assert text == json.dumps(data, indent=2) + "\n"
    assert file_mode(paths.config_path) == 0o600
    assert file_mode(paths.state_dir) == 0o700
    assert sorted(os.listdir(paths.state_dir)) == ["homarus.json"]  # no temp file left behind
    assert result.loaded.exists is True
    assert result.loaded.parsed == data
    assert result.loaded.hash == hashlib.sha256(text.encode()).hexdigest()
    assert result.loaded.config.gateway.port == 19001
    assert store.current is result.loaded


def test_replace_tightens_loose_file_mode(paths: StatePaths) -> None:
    store = seed(paths, SEED, mode=0o644)
    store.replace({"gateway": {"port": 18789, "auth": {"token": TOKEN}, "bind": "loopback"}})
    assert file_mode(paths.config_path) == 0o600


def test_replace_keeps_non_ascii_text(paths: StatePaths) -> None:
    store = ConfigStore.open(paths, env={})
    store.replace({"agents": {"list": [{"id": "main", "name": "Ünïcode ✓"}]}})
    assert '"name": "Ünïcode ✓"' in paths.config_path.read_text(encoding="utf-8")


def test_rejected_replace_leaves_file_byte_identical(paths: StatePaths) -> None:
    store = seed(paths, SEED)
    before_bytes = paths.config_path.read_bytes()
    before_loaded = store.current
    with pytest.raises(ConfigError) as info:
        store.replace({"gateway": {"port": "not a port"}})
    assert info.value.key == "gateway.port"
    assert info.value.path == str(paths.config_path)
    assert paths.config_path.read_bytes() == before_bytes
    assert store.current is before_loaded
    assert sorted(os.listdir(paths.state_dir)) == ["homarus.json"]


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"gateway": {"nope": 1}}, "gateway.nope"),
        ({"gateway": {"auth": {"mode": "password"}}}, "gateway.auth"),
        ({"gateway": {"bind": "everywhere"}}, "gateway.bind"),
        ({"agents": {"list": [{"id": "a"}, {"id": "a"}]}}, "agents.list"),
        ({"gateway": {"auth": {"token": "${UNSET_VAR}"}}}, "gateway.auth.token"),
    ],
)
def test_invalid_replacements_never_write(paths: StatePaths, data: dict[str, Any], key: str) -> None:
    store = seed(paths, SEED)
    before = paths.config_path.read_bytes()
    with pytest.raises(ConfigError) as info:
        store.replace(data)
    assert info.value.key == key
    assert paths.config_path.read_bytes() == before


def test_rejected_write_to_missing_file_creates_nothing(paths: StatePaths) -> None:
    store = ConfigStore.open(paths, env={})
    with pytest.raises(ConfigError):
        store.replace({"bogus": True})
    assert not paths.config_path.exists()


def test_replace_same_data_is_noop(paths: StatePaths) -> None:
    store = seed(paths, SEED)
    before = paths.config_path.read_bytes()
    inode = paths.config_path.stat().st_ino
    current = store.current
    result = store.replace({"gateway": {"port": 18789, "auth": {"token": TOKEN}}})
    assert result.noop is True
    assert result.restart_required == ()
    assert result.loaded is current
    assert paths.config_path.read_bytes() == before  # comments survive: nothing was written
    assert paths.config_path.stat().st_ino == inode


def test_replace_restores_redacted_secret(paths: StatePaths) -> None:
    store = seed(paths, SEED)
    result = store.replace({"gateway": {"port": 18789, "auth": {"token": REDACTED}}})
    assert result.noop is True
    result = store.replace({"gateway": {"port": 18789, "bind": "lan", "auth": {"token": REDACTED}}})
    assert result.noop is False
    text = paths.config_path.read_text(encoding="utf-8")
    assert REDACTED not in text
    assert json.loads(text)["gateway"]["auth"]["token"] == TOKEN


def test_replace_validates_with_store_env(paths: StatePaths) -> None:
    store = ConfigStore.open(paths, env={"MY_TOKEN": TOKEN})
    result = store.replace({"gateway": {"auth": {"token": "${MY_TOKEN}"}}})
    token = result.loaded.config.gateway.auth.token
    assert token is not None and token.get_secret_value() == TOKEN
    assert json.loads(paths.config_path.read_text())["gateway"]["auth"]["token"] == "${MY_TOKEN}"


@pytest.mark.parametrize(
    ("change", "restart"),
    [
        ({"port": 20000}, ("gateway.port",)),
        ({"bind": "lan"}, ("gateway.bind",)),
        ({"port": 20000, "bind": "::1"}, ("gateway.port", "gateway.bind")),
        ({"auth": {"mode": "none"}}, ()),
    ],
)
def test_restart_required_keys(paths: StatePaths, change: dict[str, Any], restart: tuple[str, ...]) -> None:
    store = seed(paths, '{gateway: {port: 18789, bind: "loopback"}}')
    result = store.replace({"gateway": {"port": 18789, "bind": "loopback", **change}})
    assert result.noop is False
    assert result.restart_required == restart


def test_changing_the_storage_needs_a_restart(paths: StatePaths) -> None:
    store = seed(paths, "{gateway: {port: 18789}}")
    url = "postgresql://u:p@db.example/assistant"
    result = store.replace({"gateway": {"port": 18789}, "storage": {"backend": "postgres", "postgres": {"url": url}}})
    assert result.restart_required == ("storage",)


def test_restart_required_when_port_removed(paths: StatePaths) -> None:
    store = seed(paths, "{gateway: {port: 1234}}")
    assert store.set_path("gateway.port", None).restart_required == ("gateway.port",)


def test_restart_not_required_for_other_sections(paths: StatePaths) -> None:
    store = seed(paths, "{gateway: {port: 1234}}")
    result = store.patch({"session": {"scope": "global"}})
    assert result.noop is False
    assert result.restart_required == ()


def test_replace_text(paths: StatePaths) -> None:
    store = seed(paths, SEED)
    result = store.replace_text('{gateway: {port: 18790, auth: {token: "store-token-0123456789"}}, // c\n}')
    assert result.restart_required == ("gateway.port",)
    assert json.loads(paths.config_path.read_text()) == {"gateway": {"port": 18790, "auth": {"token": TOKEN}}}


def test_replace_text_rejects_bad_json5_without_writing(paths: StatePaths) -> None:
    store = seed(paths, SEED)
    before = paths.config_path.read_bytes()
    with pytest.raises(ConfigError) as info:
        store.replace_text("{gateway: ")
    assert info.value.message.startswith(f"{paths.config_path}: not valid JSON5: ")
    with pytest.raises(ConfigError, match="the top level must be an object"):
        store.replace_text("[1]")
    assert paths.config_path.read_bytes() == before


# --- patch ---------------------------------------------------------------------------------------------


def test_patch_merges_and_writes(paths: StatePaths) -> None:
    store = seed(paths, SEED)
    result = store.patch({"gateway": {"bind": "lan"}, "session": {"mainKey": "home"}})
    assert result.restart_required == ("gateway.bind",)
    assert store.current.parsed == {
        "gateway": {"port": 18789, "auth": {"token": TOKEN}, "bind": "lan"},
        "session": {"mainKey": "home"},
    }
    assert file_mode(paths.config_path) == 0o600


def test_patch_null_deletes(paths: StatePaths) -> None:
    store = seed(paths, SEED)
    result = store.patch({"gateway": {"port": None}})
    assert result.restart_required == ("gateway.port",)
    assert store.current.parsed == {"gateway": {"auth": {"token": TOKEN}}}
    assert store.current.config.gateway.port == 18789


def test_patch_with_redacted_token_is_noop(paths: StatePaths) -> None:
    store = seed(paths, SEED)
    before = paths.config_path.read_bytes()
    assert store.patch({"gateway": {"auth": {"token": REDACTED}}}).noop is True
    assert paths.config_path.read_bytes() == before


def test_patch_agents_merged_by_id(paths: StatePaths) -> None:
    store = seed(paths, '{agents: {list: [{id: "a", name: "A"}, {id: "b", workspace: "/w"}]}}')
    store.patch({"agents": {"list": [{"id": "b", "name": "B"}, {"id": "c"}]}})
    assert store.current.parsed == {
        "agents": {"list": [{"id": "a", "name": "A"}, {"id": "b", "workspace": "/w", "name": "B"}, {"id": "c"}]}
    }
    store.patch({"agents": {"list": [{"id": "a", "name": None}]}})
    assert store.current.parsed is not None
    assert store.current.parsed["agents"]["list"][0] == {"id": "a"}


@pytest.mark.parametrize("bad", [[1], "x", 5, None])
def test_patch_must_be_object(paths: StatePaths, bad: Any) -> None:
    store = seed(paths, SEED)
    with pytest.raises(InvalidRequest, match=r"^config.patch raw must be an object$"):
        store.patch(bad)


def test_patch_with_object_id_is_rejected_cleanly(paths: StatePaths) -> None:
    store = seed(paths, '{agents: {list: [{id: "a"}]}}')
    before = paths.config_path.read_bytes()
    with pytest.raises(ConfigError) as info:
        store.patch({"agents": {"list": [{"id": {"x": 1}}]}})
    assert info.value.key == "agents.list.0.id"
    assert paths.config_path.read_bytes() == before


def test_rejected_patch_leaves_file_byte_identical(paths: StatePaths) -> None:
    store = seed(paths, SEED)
    before = paths.config_path.read_bytes()
    with pytest.raises(ConfigError) as info:
        store.patch({"gateway": {"auth": {"mode": "password"}}})
    assert info.value.message == (
        f"{paths.config_path}: at gateway.auth: auth.mode 'password' needs gateway.auth.password"
    )
    assert paths.config_path.read_bytes() == before


# --- set_path --------------------------------------------------------------------------------------------


def test_set_path_creates_intermediate_objects(paths: StatePaths) -> None:
    store = ConfigStore.open(paths, env={})
    result = store.set_path("gateway.auth.rateLimit.maxAttempts", 5)
    assert result.restart_required == ()
    assert store.current.parsed == {"gateway": {"auth": {"rateLimit": {"maxAttempts": 5}}}}
    assert store.current.config.gateway.auth.rate_limit.max_attempts == 5


def test_set_path_replaces_value_and_deletes_with_none(paths: StatePaths) -> None:
    store = seed(paths, SEED)
    assert store.set_path("gateway.port", 20000).restart_required == ("gateway.port",)
    assert store.current.config.gateway.port == 20000
    store.set_path("gateway.auth.token", None)
    assert store.current.parsed == {"gateway": {"port": 20000, "auth": {}}}


def test_set_path_ignores_empty_segments(paths: StatePaths) -> None:
    store = ConfigStore.open(paths, env={})
    store.set_path(".gateway..bind.", "lan")
    assert store.current.parsed == {"gateway": {"bind": "lan"}}


@pytest.mark.parametrize("dotted", ["", ".", "..."])
def test_set_path_empty_key(paths: StatePaths, dotted: str) -> None:
    store = ConfigStore.open(paths, env={})
    with pytest.raises(ConfigError, match=r"^empty config key$"):
        store.set_path(dotted, 1)


def test_set_path_invalid_value_never_writes(paths: StatePaths) -> None:
    store = seed(paths, SEED)
    before = paths.config_path.read_bytes()
    with pytest.raises(ConfigError) as info:
        store.set_path("gateway.port", "x")
    assert info.value.key == "gateway.port"
    with pytest.raises(ConfigError) as info2:
        store.set_path("gateway.port.deeper", 1)
    assert info2.value.key == "gateway.port"
    assert paths.config_path.read_bytes() == before


def test_set_path_does_not_touch_current_parsed(paths: StatePaths) -> None:
    store = seed(paths, SEED)
    parsed = store.current.parsed
    with pytest.raises(ConfigError):
        store.set_path("gateway.auth.mode", "password")
    assert parsed == {"gateway": {"port": 18789, "auth": {"token": TOKEN}}}


# --- merge_patch (RFC 7386 Appendix A, plus arrays merged by id) -----------------------------------------


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        (["a", "b"], ["c", "d"], ["c", "d"]),
        ({"a": "b"}, ["c"], ["c"]),
        ({"a": "foo"}, None, None),
        ({"a": "foo"}, "bar", "bar"),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ],
)
def test_merge_patch_rfc7386_examples(target: Any, patch: Any, expected: Any) -> None:
    assert merge_patch(target, patch) == expected


def test_merge_patch_arrays_of_objects_by_id() -> None:
    target = {"list": [{"id": "a", "x": 1, "y": {"k": 1}}, {"id": "b", "x": 2}]}
    patch = {"list": [{"id": "b", "x": None, "z": 3}, {"id": "new", "v": None, "w": 1}, {"id": "a", "y": {"k": 2}}]}
    assert merge_patch(target, patch) == {
        "list": [{"id": "a", "x": 1, "y": {"k": 2}}, {"id": "b", "z": 3}, {"id": "new", "w": 1}]
    }


def test_merge_patch_by_integer_id() -> None:
    assert merge_patch([{"id": 1, "a": 1}], [{"id": 1, "a": 2}, {"id": 2}]) == [{"id": 1, "a": 2}, {"id": 2}]


@pytest.mark.parametrize(
    ("target", "patch"),
    [
        ([{"id": "a"}], []),  # empty patch array replaces
        ([{"id": "a"}], [{"id": "a"}, {"name": "no id"}]),  # not every patch item has an id
        ([{"id": "a"}, "plain"], [{"id": "a", "x": 1}]),  # not every target item has an id
        ([{"id": "a"}], [{"id": {"nested": 1}}]),  # unhashable id: replace, never crash
        ([{"id": "a"}], [{"id": ["x"]}]),
    ],
)
def test_merge_patch_arrays_replaced_when_not_all_have_ids(target: list[Any], patch: list[Any]) -> None:
    assert merge_patch(target, patch) == patch


def test_merge_patch_does_not_mutate_inputs() -> None:
    target = {"a": {"b": 1}, "list": [{"id": "x", "v": 1}]}
    patch = {"a": {"b": None, "c": 2}, "list": [{"id": "x", "v": 2}]}
    snapshot_target = json.loads(json.dumps(target))
    snapshot_patch = json.loads(json.dumps(patch))
    merge_patch(target, patch)
    assert target == snapshot_target
    assert patch == snapshot_patch
