"""Manifests (read without running code), the ``plugins`` config section, config vs configSchema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from homarus.config.plugins import PluginsConfig
from homarus.config.schema import HomarusConfig
from homarus.plugins.manifest import (
    ManifestError,
    parse_manifest,
    parse_manifest_text,
    read_manifest,
    validate_plugin_config,
)
from tests.plugins.helpers import load, make_plugin

SCHEMA: dict[str, Any] = {"type": "object", "additionalProperties": False}


# -- manifest ---------------------------------------------------------------------------------------
def test_minimal_manifest_defaults() -> None:
    m = parse_manifest({"id": "my-plugin", "configSchema": SCHEMA}, source="x")
    assert (m.id, m.entry, m.contracts.tools, m.name, m.display_name) == (
        "my-plugin",
        "plugin.py",
        (),
        None,
        "my-plugin",
    )


def test_full_manifest_json5() -> None:
    text = """
    // comments and trailing commas are fine: JSON5
    {
      id: 'weather.tools', name: 'Weather', description: 'd', version: '1.2.3', entry: 'main.py',
      configSchema: { type: 'object', properties: { units: { enum: ['si', 'us'] } } },
      contracts: { tools: ['forecast'], },
      future: true,
    }
    """
    m, unknown = parse_manifest_text(text, source="mem")
    assert (m.id, m.version, m.entry, m.contracts.tools) == ("weather.tools", "1.2.3", "main.py", ("forecast",))
    assert unknown == ["future"]
    assert m.to_json()["configSchema"]["properties"]["units"]["enum"] == ["si", "us"]


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"configSchema": SCHEMA}, "id: required"),
        ({"id": "x"}, "configSchema: required"),
        ({"id": "Bad Id", "configSchema": SCHEMA}, "id: String should match pattern"),
        ({"id": "-x", "configSchema": SCHEMA}, "id: String should match pattern"),
        ({"id": "x", "configSchema": "object"}, "configSchema"),
        ({"id": "x", "configSchema": {"type": "no-such-type"}}, "not a valid JSON Schema"),
        ({"id": "x", "configSchema": SCHEMA, "contracts": {"tools": "one"}}, "contracts.tools"),
        (["not", "an", "object"], "must be a JSON object"),
    ],
)
def test_invalid_manifests(data: Any, needle: str) -> None:
    with pytest.raises(ManifestError) as info:
        parse_manifest(data, source="src/homarus.plugin.json")
    assert needle in info.value.message
    assert info.value.message.startswith("src/homarus.plugin.json: ")


def test_bad_json5_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "homarus.plugin.json"
    path.write_text("{ id: 'x', configSchema: {", encoding="utf-8")
    with pytest.raises(ManifestError, match="not valid JSON5"):
        read_manifest(path)
    with pytest.raises(ManifestError, match=r"missing homarus\.plugin\.json"):
        read_manifest(tmp_path / "nope" / "homarus.plugin.json")


@pytest.mark.parametrize(
    ("manifest", "needle"),
    [
        ('{"configSchema": {}}', "id: required"),
        ('{"id": "broken"}', "configSchema: required"),
        ("{id: 'broken', configSchema: {", "not valid JSON5"),
    ],
)
def test_broken_manifest_is_an_error_and_never_runs_code(tmp_path: Path, manifest: str, needle: str) -> None:
    marker = tmp_path / "ran"
    make_plugin(tmp_path / "ext", "broken", f"open({str(marker)!r}, 'w').close()\n", manifest=manifest)
    make_plugin(tmp_path / "ext", "fine")
    loaded = load(tmp_path, {"load": {"paths": [str(tmp_path / "ext")]}})
    assert loaded.status("broken") == "error"  # id from the directory name
    assert any(needle in m for m in loaded.messages("broken", "error"))
    assert not marker.exists()
    assert loaded.status("fine") == "loaded"


def test_unknown_manifest_key_is_a_warning(tmp_path: Path) -> None:
    make_plugin(tmp_path / "ext", "p", hooks=["x"])
    loaded = load(tmp_path, {"load": {"paths": [str(tmp_path / "ext")]}})
    assert loaded.status("p") == "loaded"
    assert loaded.messages("p", "warn") == ["manifest: unknown key(s) ignored: hooks"]


# -- plugin config vs configSchema -----------------------------------------------------------------------
def test_validate_plugin_config_messages() -> None:
    m = parse_manifest(
        {
            "id": "x",
            "configSchema": {
                "type": "object",
                "additionalProperties": False,
                "required": ["path"],
                "properties": {"path": {"type": "string"}, "n": {"type": "integer", "minimum": 1}},
            },
        },
        source="x",
    )
    assert validate_plugin_config(m, {"path": "a", "n": 2}) == []
    problems = validate_plugin_config(m, {"n": 0, "extra": 1})
    assert any("'path' is a required property" in p for p in problems)
    assert any(p.startswith("n: 0 is less than the minimum") for p in problems)
    assert any("'extra' was unexpected" in p for p in problems)


def test_invalid_plugin_config_blocks_loading(tmp_path: Path) -> None:
    marker = tmp_path / "imported"
    make_plugin(
        tmp_path / "ext",
        "strict",
        f"open({str(marker)!r}, 'w').close()\ndef register(api):\n    pass\n",
        configSchema={"type": "object", "properties": {"level": {"enum": ["low", "high"]}}},
    )
    base = {"load": {"paths": [str(tmp_path / "ext")]}}
    bad = load(tmp_path, {**base, "entries": {"strict": {"config": {"level": "max"}}}})
    assert bad.status("strict") == "error"
    assert bad.messages("strict", "error") == [
        "invalid plugins.entries.strict.config: level: 'max' is not one of ['low', 'high']"
    ]
    assert not marker.exists()
    good = load(tmp_path, {**base, "entries": {"strict": {"config": {"level": "high"}}}})
    assert good.status("strict") == "loaded"
    assert marker.exists()


# -- the plugins config section --------------------------------------------------------------------------
def test_plugins_section_defaults_and_aliases() -> None:
    c = HomarusConfig()
    assert (c.plugins.enabled, c.plugins.allow, c.plugins.workspace.enabled) == (True, (), False)
    entry = c.plugins.entry("anything")
    assert (entry.enabled, entry.path, entry.config) == (True, None, {})
    assert (entry.hooks.allow_conversation_access, entry.hooks.allow_prompt_injection) == (None, True)
    p = PluginsConfig.model_validate(
        {
            "allow": ["a"],
            "load": {"paths": ["~/x"]},
            "entries": {
                "a": {
                    "config": {"anyKey": {"nested": [1]}},
                    "hooks": {"timeoutMs": 5, "timeouts": {"before_tool_call": 7}, "allowConversationAccess": True},
                }
            },
        }
    )
    hooks = p.entry("a").hooks
    assert (hooks.timeout_ms, hooks.timeouts, hooks.allow_conversation_access) == (5, {"before_tool_call": 7}, True)
    assert p.entry("a").config == {"anyKey": {"nested": [1]}}


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"enabeld": True}, "extra"),
        ({"entries": {"a": {"hooks": {"timeoutMs": 0}}}}, "greater than or equal to 1"),
        ({"entries": {"a": {"hooks": {"timeoutMs": 600_001}}}}, "less than or equal to 600000"),
        ({"entries": {"a": {"hooks": {"timeouts": {"agent_end": 0}}}}}, "timeouts.agent_end must be"),
        ({"entries": {"a": {"hooks": {"allowPromptInjection": True, "bogus": 1}}}}, "extra"),
        ({"entries": {"a": {"unknown": 1}}}, "extra"),
        ({"entries": {"Not An Id": {}}}, "not a valid plugin id"),
        ({"allow": ["UPPER"]}, "not a valid plugin id"),
        ({"workspace": {"enabled": True, "x": 1}}, "extra"),
        ({"load": {"path": []}}, "extra"),
    ],
)
def test_plugins_section_rejects(data: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValidationError) as info:
        HomarusConfig.model_validate({"plugins": data})
    assert needle in str(info.value)
