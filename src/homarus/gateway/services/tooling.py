"""The core tools every gateway offers (plugins add theirs through the same registry).

The core tools are offered the first time the registry is read (a run lists its tools, ``tools.*``
methods), from their cards (``tools/catalog.py``), and built when the first of them is called: a
gateway does not load the exec host, the sandbox, the web client and every tool module before a
tool is used, nor when only its plugins are needed (a chat channel is a plugin). Their names are
reserved from the start, so a plugin tool that takes one is refused at load time exactly as if the
core tools were there.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from homarus.errors import RegistrationError
from homarus.tools.base import Execute, Tool, ToolContext, ToolRegistry, ToolResult

if TYPE_CHECKING:
    from homarus.config.schema import HomarusConfig
    from homarus.gateway.context import GatewayContext

__all__ = ["CORE_TOOL_NAMES", "CoreFirstRegistry", "build_core_tools", "core_tools", "prepare_tools", "write_catalog"]

CORE_TOOL_NAMES: Final = frozenset(
    {
        "apply_patch",
        "browser",
        "cron",
        "edit",
        "exec",
        "find",
        "grep",
        "ls",
        "memory_get",
        "memory_search",
        "process",
        "read",
        "sessions_history",
        "sessions_list",
        "sessions_send",
        "sessions_spawn",
        "web_fetch",
        "web_search",
        "write",
    }
)


class CoreFirstRegistry(ToolRegistry):
    """A registry whose core tools are made on first read; plugin tools may be added before.

    ``offer`` (when given) makes them from their cards (``tools/catalog.py``), each building the real
    tools with ``build`` on its first call; it returns None when the cards cannot stand in (a card
    missing), and then ``build`` makes them at once."""

    def __init__(
        self,
        build: Callable[[], Iterable[Tool]],
        reserved: frozenset[str] = CORE_TOOL_NAMES,
        offer: Callable[[], Iterable[Tool] | None] | None = None,
    ) -> None:
        super().__init__()
        self._build: Callable[[], Iterable[Tool]] | None = build
        self._offer = offer
        self._reserved = reserved

    def _ready(self) -> None:
        build, self._build = self._build, None
        if build is None:
            return
        offered = self._offer() if self._offer is not None else None
        added = dict(self._tools)
        self._tools = {}
        for tool in offered if offered is not None else build():
            if tool.name not in self._reserved:
                raise RegistrationError(f"core tool {tool.name!r} is missing from CORE_TOOL_NAMES")
            super().register(tool)
        self._tools.update(added)

    def register(self, tool: Tool) -> Tool:
        if tool.name in self._reserved:
            raise RegistrationError(f"tool {tool.name!r} is already registered")
        return super().register(tool)

    def get(self, name: str) -> Tool | None:
        self._ready()
        return super().get(name)

    def names(self) -> list[str]:
        self._ready()
        return super().names()

    def tools(self) -> list[Tool]:
        self._ready()
        return super().tools()


def build_core_tools(
    *,
    exec_host: tuple[Any, Any],
    web_settings: Any,
    web_client: Callable[[], Any],
    browser: Callable[[], Any] | None,
    max_spawn_depth: Callable[[], int] | int,
) -> list[Tool]:
    """The core tools themselves (``browser=None``: without the browser tool)."""
    from homarus.tools.cron_tool import cron_tool
    from homarus.tools.exec import make_exec_tools
    from homarus.tools.files import file_tools
    from homarus.tools.memory_tools import memory_tools
    from homarus.tools.search import search_tools
    from homarus.tools.session_tools import session_tools
    from homarus.tools.subagents import subagent_tools
    from homarus.tools.web import make_web_tools

    optional: list[Tool] = []
    if browser is not None:
        from homarus.browser.tool import make_browser_tool

        optional.append(make_browser_tool(browser))
    exec_policy, exec_backend = exec_host
    return [
        *optional,
        *session_tools(),
        *file_tools(),
        *search_tools(),
        *make_web_tools(web_settings, web_client),
        *make_exec_tools(exec_policy, exec_backend),
        cron_tool(),
        *memory_tools(),
        *subagent_tools(max_spawn_depth=max_spawn_depth),
    ]


def core_tools(gateway: GatewayContext) -> CoreFirstRegistry:
    cfg = gateway.config

    def has_browser() -> bool:  # no Chromium: no browser tool
        return cfg.browser.enabled and os.access(cfg.browser.executable_path, os.X_OK)

    def build() -> list[Tool]:
        from homarus.tools.web import WebSettings

        return build_core_tools(
            exec_host=gateway.exec_host,
            web_settings=WebSettings.from_config(cfg.tools),
            web_client=lambda: gateway.web_client,
            browser=(lambda: gateway.browser) if has_browser() else None,
            max_spawn_depth=lambda: gateway.tool_access.policy().inputs.max_spawn_depth,
        )

    built: dict[str, Tool] = {}

    def real(name: str) -> Tool:
        if not built:
            built.update((tool.name, tool) for tool in build())
        return built[name]

    def offer() -> list[Tool] | None:
        from homarus.tools.catalog import load, tool_from_card

        names = CORE_TOOL_NAMES if has_browser() else CORE_TOOL_NAMES - {"browser"}
        cards = load()
        if not names <= cards.keys():
            return None
        return [tool_from_card(n, cards[n], _on_first_call(real, n), description=_described(cfg, n)) for n in names]

    return CoreFirstRegistry(build, offer=offer)


def _on_first_call(real: Callable[[str], Tool], name: str) -> Execute:
    async def execute(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        return await real(name).execute(ctx, args)

    return execute


def _described(cfg: HomarusConfig, name: str) -> str | None:
    """The description of a tool whose text depends on the config (the cards hold the defaults')."""
    if name != "exec" or not cfg.present("tools"):
        return None
    from homarus.tools.exec_doc import exec_description

    return exec_description(cfg.tools.exec)  # the host's exec, as ``build`` makes it


def write_catalog() -> int:
    """``make tool-catalog``: write the cards of every core tool, as built with the default config."""
    from homarus.config.schema import HomarusConfig
    from homarus.gateway.services.exec import build_exec
    from homarus.tools.catalog import CATALOG_PATH, render
    from homarus.tools.web import WebSettings

    cfg = HomarusConfig()
    tools = build_core_tools(
        exec_host=(build_exec(cfg, Path("/nonexistent"))[0], None),
        web_settings=WebSettings.from_config(cfg.tools),
        web_client=_unused,
        browser=_unused,
        max_spawn_depth=1,
    )
    CATALOG_PATH.write_text(render(tools), encoding="utf-8")
    return len(tools)


def _unused() -> Any:  # pragma: no cover - the catalog never runs a tool
    raise RuntimeError("not for running tools")


async def prepare_tools(gateway: GatewayContext, agent_id: str) -> set[str]:
    """Before any surface lists or calls tools for ``agent_id`` (a run, ``tools.catalog``,
    ``tools.effective``, ``POST /tools/invoke``): the lazy MCP servers it may use are started, so
    their tools are there; returns the MCP tool names this agent must not see."""
    if not gateway.built("mcp") and not gateway.config.present("mcp"):
        return set()  # no MCP section: the MCP client is never imported
    hidden: set[str] = await gateway.mcp.prepare(agent_id)
    return hidden
