"""The core tools every gateway offers (plugins add theirs through the same registry)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from homarus.tools.base import ToolRegistry
from homarus.tools.cron_tool import cron_tool
from homarus.tools.exec import make_exec_tools
from homarus.tools.files import file_tools
from homarus.tools.memory_tools import memory_tools
from homarus.tools.session_tools import session_tools
from homarus.tools.subagents import subagent_tools
from homarus.tools.web import WebSettings, make_web_tools

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext

__all__ = ["core_tools"]


def core_tools(gateway: GatewayContext) -> ToolRegistry:
    registry = ToolRegistry()
    exec_policy, exec_backend = gateway.exec_host
    for tool in (
        *session_tools(),
        *file_tools(),
        *make_web_tools(WebSettings.from_config(gateway.config.tools), lambda: gateway.web_client),
        *make_exec_tools(exec_policy, exec_backend),
        cron_tool(),
        *memory_tools(),
        *subagent_tools(max_spawn_depth=lambda: gateway.tool_access.policy().inputs.max_spawn_depth),
    ):
        registry.register(tool)
    return registry
