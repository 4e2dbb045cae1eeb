"""What every hook handler is told besides its event: whose plugin it is and which run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["HookContext"]


@dataclass(frozen=True, slots=True)
class HookContext:
    """Who the hook runs for: this handler's plugin and config, and the run it observes."""

    plugin_id: str = ""
    plugin_config: dict[str, Any] = field(default_factory=dict)
    agent_id: str | None = None
    session_key: str | None = None
    session_id: str | None = None
    run_id: str | None = None
    tool_call_id: str | None = None
    trigger: str | None = None
