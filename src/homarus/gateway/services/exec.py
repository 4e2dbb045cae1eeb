"""`exec` on the gateway host under `tools.exec` (deny by default, allowlist + approvals). The
sessions `agents.defaults.sandbox` confines run theirs in a sandbox (services/sandboxes.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from homarus.security.exec_approvals_file import ApprovalsSource, approvals_path
from homarus.tools.exec_policy import ExecPolicy
from homarus.tools.process import HostBackend

if TYPE_CHECKING:
    from pathlib import Path

    from homarus.config.schema import HomarusConfig

__all__ = ["build_exec"]


def build_exec(
    cfg: HomarusConfig, state_dir: Path, approvals: ApprovalsSource | None = None
) -> tuple[ExecPolicy, HostBackend]:
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
        approvals_file=approvals if approvals is not None else approvals_path(state_dir),
    )
    return policy, HostBackend(max_output_bytes=ex.max_output_bytes, max_background=ex.max_background)
