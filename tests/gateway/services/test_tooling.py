"""The core tools offered from their cards (``tools/catalog.json``) and built on the first call:
the cards say exactly what the tools would, under the default config and under one that changes a
description; a call runs the real tool; a missing card builds the tools at once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from homarus.config.schema import HomarusConfig
from homarus.config.store import ConfigStore
from homarus.errors import InvalidRequest
from homarus.gateway.app import Gateway, GatewayOptions
from homarus.gateway.services import tooling
from homarus.gateway.services.exec import build_exec
from homarus.messages import TextContent
from homarus.tools import catalog
from homarus.tools.base import Tool, ToolContext
from homarus.tools.web import WebSettings
from tests.conftest import make_paths

EXEC_CONFIG = {"tools": {"exec": {"security": "allowlist", "allowlist": ["/usr/bin/git"], "maxTimeoutSeconds": 90}}}


def default_tools() -> list[Tool]:
    cfg = HomarusConfig()
    return tooling.build_core_tools(
        exec_host=(build_exec(cfg, Path("/nonexistent"))[0], None),
        web_settings=WebSettings.from_config(cfg.tools),
        web_client=lambda: None,
        browser=lambda: None,
        max_spawn_depth=1,
    )


def test_the_catalog_file_says_what_the_tools_would() -> None:
    assert catalog.CATALOG_PATH.read_text(encoding="utf-8") == catalog.render(default_tools()), (
        "src/homarus/tools/catalog.json is out of date: run `make tool-catalog`"
    )
    assert set(catalog.load()) == tooling.CORE_TOOL_NAMES


def make_gateway(root: Path, config: dict[str, Any] | None = None) -> Gateway:
    paths = make_paths(root, config)
    return Gateway(paths, ConfigStore.open(paths, env={}), GatewayOptions())


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    yield make_gateway(tmp_path)


def listed(tools: list[Tool]) -> dict[str, dict[str, Any]]:
    return {t.name: catalog.card_of(t) for t in tools}


class Builds:
    """``build_core_tools`` counted, keeping what each build returned."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.made: list[list[Tool]] = []
        real = tooling.build_core_tools

        def counting(**kwargs: Any) -> list[Tool]:
            self.made.append(real(**kwargs))
            return self.made[-1]

        monkeypatch.setattr(tooling, "build_core_tools", counting)


def context(tmp_path: Path) -> ToolContext:
    (tmp_path / "ws").mkdir(exist_ok=True)
    return ToolContext("agent:main:main", "main", "r", "c", tmp_path / "ws")


@pytest.mark.parametrize("config", [None, EXEC_CONFIG], ids=["defaults", "exec-config"])
async def test_offered_cards_are_the_real_tools_and_nothing_is_built_until_a_call(
    config: dict[str, Any] | None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    gateway = make_gateway(tmp_path, config)
    builds = Builds(monkeypatch)
    registry = tooling.core_tools(gateway)
    offered = registry.tools()
    assert builds.made == []  # listed from the cards: no tool module needed
    tool = registry.get("read")
    assert tool is not None
    with pytest.raises(InvalidRequest, match="invalid arguments for read"):  # the real tool validates
        await tool.execute(context(tmp_path), {"bogus": 1})
    assert len(builds.made) == 1
    assert listed(offered) == listed(builds.made[0])
    if config is not None:
        assert "Allowed: /usr/bin/git" in listed(offered)["exec"]["description"]


async def test_a_call_builds_the_tools_once_and_runs_the_real_one(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    builds = Builds(monkeypatch)
    registry = tooling.core_tools(gateway)
    ctx = context(tmp_path)
    (tmp_path / "ws" / "note.txt").write_text("x")
    for name, args in (("ls", {}), ("find", {"pattern": "*.txt"})):
        tool = registry.get(name)
        assert tool is not None
        result = await tool.execute(ctx, args)
        assert "note.txt" in "".join(c.text for c in result.content if isinstance(c, TextContent))
    assert len(builds.made) == 1


def test_a_missing_card_builds_the_tools_at_once(gateway: Gateway, monkeypatch: pytest.MonkeyPatch) -> None:
    cards = catalog.load()
    del cards["grep"]
    monkeypatch.setattr(catalog, "load", lambda: cards)
    builds = Builds(monkeypatch)
    registry = tooling.core_tools(gateway)
    names = registry.names()
    assert len(builds.made) == 1 and names == sorted(t.name for t in builds.made[0])
