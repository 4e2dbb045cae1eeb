"""Where `exec` runs: the gateway host under `tools.exec` (deny by default, allowlist + approvals),
or, for the sessions `agents.defaults.sandbox` confines, that session's sandbox. A sandbox that
cannot start disables exec for its sessions; it never falls back to the host."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from homarus.config.schema import HomarusConfig
from homarus.security.exec_approvals_file import approvals_path
from homarus.sessions.keys import SessionKey
from homarus.tools.exec_policy import ExecPolicy
from homarus.tools.process import HostBackend
from homarus.tools.sandbox_sessions import SandboxSessions, SandboxView

__all__ = ["build_exec", "build_sandboxes", "sandbox_view"]


def build_exec(cfg: HomarusConfig, state_dir: Path) -> tuple[ExecPolicy, HostBackend]:
    ex = cfg.tools.exec
    policy = ExecPolicy(
        security=ex.security,
        allowlist=tuple(ex.allowlist),
        path=ex.path,
        max_timeout_seconds=ex.max_timeout_seconds,
        max_output_bytes=ex.max_output_bytes,
        max_background=ex.max_background,
        ask=ex.ask,
        ask_fallback=ex.ask_fallback,
        safe_bins=ex.safe_bins,
        approval_timeout_ms=ex.approval_timeout_seconds * 1000,
        approvals_file=approvals_path(state_dir),
    )
    return policy, HostBackend(max_output_bytes=ex.max_output_bytes, max_background=ex.max_background)


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
