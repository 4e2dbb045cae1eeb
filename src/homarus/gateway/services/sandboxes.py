"""Which sessions run `exec` in a sandbox (`agents.defaults.sandbox`: mode, scope, backend) and the
sandbox view their tools get. A sandbox that cannot start disables exec for its sessions; it never
falls back to the host."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from homarus.tools.sandbox_sessions import SandboxSessions, SandboxView

if TYPE_CHECKING:
    from homarus.config.schema import HomarusConfig
    from homarus.sessions.keys import SessionKey

__all__ = ["build_sandboxes", "sandbox_view"]


def build_sandboxes(cfg: HomarusConfig, state_dir: Path, agent_workspace: Callable[[str], Path]) -> SandboxSessions:
    ex = cfg.tools.exec
    return SandboxSessions(
        cfg.agents.defaults.sandbox,
        state_dir=state_dir,
        agent_workspace=agent_workspace,
        max_output_bytes=ex.max_output_bytes,
        max_background=ex.max_background,
        max_timeout_s=ex.max_timeout_seconds,
    )


def sandbox_view(sandboxes: SandboxSessions, key: SessionKey, main_key: str) -> SandboxView | None:
    """The sandbox of the session ``key`` (None: it runs unsandboxed)."""
    if not sandboxes.enabled or not sandboxes.applies_to(key.agent_id, key.rest, main_key):
        return None
    return sandboxes.view_for(key.canonical, key.agent_id)
