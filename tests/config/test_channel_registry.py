"""A channel's config model may be registered by name: a bundled channel nobody configures then
costs no model until ``channels.<id>`` is read, and a name that leads nowhere is reported, not
fatal."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from homarus.config import channel_registry
from homarus.config.channels import ChannelConfig, channel_schema, channel_schemas

PROBE = """
import json, sys
from pathlib import Path
from homarus.config.paths import StatePaths
from homarus.gateway.app import GatewayOptions
from homarus.gateway.server import build_gateway

state = Path(sys.argv[1])
gateway = build_gateway(StatePaths(state, state / "homarus.json"), GatewayOptions(port=0, token="t" * 32))
channels = sorted(gateway.plugins.channels)  # every plugin loaded, as the first run does
before = sorted(m for m in sys.modules if m.startswith(("homarus.config.channels", "homarus.channels.telegram")))
from homarus.config.channels import channel_schema
print(json.dumps({"channels": channels, "before": before, "model": channel_schema("telegram").__name__}))
"""


def test_bundled_channels_register_without_building_their_config_models(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOMARUS_")}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "telegram" in seen["channels"]
    assert seen["before"] == ["homarus.channels.telegram", "homarus.channels.telegram.plugin"]  # no config model
    assert seen["model"] == "TelegramConfig"  # resolved when read


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    fresh: dict[str, object] = {}
    monkeypatch.setattr(channel_registry, "_REGISTERED", fresh)
    return fresh


class Sample(ChannelConfig):
    token: str | None = None


def test_a_name_is_resolved_once_when_first_read(registry: dict[str, object]) -> None:
    channel_registry.register("sample", f"{__name__}:Sample")
    before = registry["sample"]
    assert before == f"{__name__}:Sample"
    assert channel_schema("sample") is Sample
    after: object = registry["sample"]
    assert after is Sample  # kept resolved
    assert channel_schemas()["sample"] is Sample


@pytest.mark.parametrize("ref", ["nowhere.at.all:Thing", f"{__name__}:Missing", f"{__name__}:registry"])
def test_a_name_that_leads_nowhere_falls_back_and_says_so(
    registry: dict[str, object], ref: str, caplog: pytest.LogCaptureFixture
) -> None:
    channel_registry.register("broken", ref)
    with caplog.at_level(logging.ERROR, logger="homarus.config"):
        assert channel_schema("broken") is ChannelConfig
    assert "channel broken" in caplog.text and ref in caplog.text


def test_the_name_form_is_checked() -> None:
    assert channel_registry.REF.fullmatch("homarus.channels.telegram.config:TelegramConfig")
    for bad in ("TelegramConfig", "a:b:c", "a b:C", ":C", "m:"):
        assert not channel_registry.REF.fullmatch(bad), bad
