"""The core tools every gateway offers (plugins add theirs through the same registry).

The core tools are built the first time the registry is read (a run lists its tools, ``tools.*``
methods), not when the plugins are loaded: a gateway that only needs its plugins at start (a chat
channel is a plugin) does not load the exec host, the sandbox, the web client and every tool
module before its first agent run. Their names are reserved from the start, so a plugin tool that
takes one is refused at load time exactly as if the core tools were there.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final

from homarus.errors import RegistrationError
from homarus.tools.base import Tool, ToolRegistry

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext

__all__ = ["CORE_TOOL_NAMES", "CoreFirstRegistry", "core_tools", "prepare_tools"]

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
    """A registry whose core tools are built on first read; plugin tools may be added before."""

    def __init__(self, build: Callable[[], Iterable[Tool]], reserved: frozenset[str] = CORE_TOOL_NAMES) -> None:
        super().__init__()
        self._build: Callable[[], Iterable[Tool]] | None = build
        self._reserved = reserved

    def _ready(self) -> None:
        build, self._build = self._build, None
        if build is None:
            return
        added = dict(self._tools)
        self._tools = {}
        for tool in build():
            if tool.name not in self._reserved:
                raise RegistrationError(f"core tool {tool.name!r} is missing from CORE_TOOL_NAMES")
            super().register(tool)
        self._tools.update(added)

    @property
    def built(self) -> bool:
        return self._build is None

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


def core_tools(gateway: GatewayContext) -> CoreFirstRegistry:
    def build() -> list[Tool]:
        from homarus.tools.cron_tool import cron_tool
        from homarus.tools.exec import make_exec_tools
        from homarus.tools.files import file_tools
        from homarus.tools.memory_tools import memory_tools
        from homarus.tools.search import search_tools
        from homarus.tools.session_tools import session_tools
        from homarus.tools.subagents import subagent_tools
        from homarus.tools.web import WebSettings, make_web_tools

        exec_policy, exec_backend = gateway.exec_host
        browser = gateway.config.browser
        if browser.enabled and os.access(browser.executable_path, os.X_OK):  # no Chromium: no browser tool
            from homarus.browser.tool import make_browser_tool

            optional = [make_browser_tool(lambda: gateway.browser)]
        else:
            optional = []
        return [
            *optional,
            *session_tools(),
            *file_tools(),
            *search_tools(),
            *make_web_tools(WebSettings.from_config(gateway.config.tools), lambda: gateway.web_client),
            *make_exec_tools(exec_policy, exec_backend),
            cron_tool(),
            *memory_tools(),
            *subagent_tools(max_spawn_depth=lambda: gateway.tool_access.policy().inputs.max_spawn_depth),
        ]

    return CoreFirstRegistry(build)


async def prepare_tools(gateway: GatewayContext, agent_id: str) -> set[str]:
    """Before any surface lists or calls tools for ``agent_id`` (a run, ``tools.catalog``,
    ``tools.effective``, ``POST /tools/invoke``): the lazy MCP servers it may use are started, so
    their tools are there; returns the MCP tool names this agent must not see."""
    if not gateway.built("mcp") and not gateway.config.present("mcp"):
        return set()  # no MCP section: the MCP client is never imported
    hidden: set[str] = await gateway.mcp.prepare(agent_id)
    return hidden
