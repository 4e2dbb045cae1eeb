"""Which backend `exec` runs on: the bubblewrap sandbox when `agents.defaults.sandbox.mode` asks for it,
else the host under `tools.exec` (deny by default). A sandbox that cannot start disables exec; it never
falls back to the host."""

from __future__ import annotations

import logging
from pathlib import Path

from homarus.config.schema import HomarusConfig
from homarus.plugins.loader import default_workspace
from homarus.sandbox.bwrap import BwrapBackend, sandbox_workspace
from homarus.tools.exec_policy import ExecPolicy
from homarus.tools.process import ExecBackend, HostBackend
from homarus.tools.sandboxed import SandboxExecBackend

__all__ = ["build_exec"]

log = logging.getLogger("homarus.gateway")


def build_exec(cfg: HomarusConfig, state_dir: Path) -> tuple[ExecPolicy, ExecBackend]:
    ex = cfg.tools.exec
    sb = cfg.agents.defaults.sandbox
    host_policy = ExecPolicy(
        ex.security, tuple(ex.allowlist), ex.path, ex.max_timeout_seconds, ex.max_output_bytes, ex.max_background
    )
    if sb.mode == "off":
        return host_policy, HostBackend(max_output_bytes=ex.max_output_bytes, max_background=ex.max_background)
    if sb.mode == "non-main":
        # per-session routing is not built yet: confining every session is the stricter reading
        log.warning("agents.defaults.sandbox.mode 'non-main' confines all sessions (main included) for now")
    agent_ws = default_workspace(cfg, state_dir)
    if sb.workspace_access == "rw":
        agent_ws.mkdir(parents=True, exist_ok=True, mode=0o700)
        workspace = agent_ws
    else:
        workspace = sandbox_workspace(state_dir, f"agent-{cfg.agents.default_id}")
    sandbox = BwrapBackend(
        workspace,
        agent_workspace=agent_ws if sb.workspace_access == "ro" else None,
        network=sb.network == "allow",
        limits=sb.limits,
        max_output_bytes=ex.max_output_bytes,
    )
    if sb.backend == "docker" or not sandbox.available():
        log.error(
            "sandbox requested (mode %s, backend %s) but bubblewrap is unavailable: exec is disabled",
            sb.mode,
            sb.backend,
        )
        denied = ExecPolicy("deny", (), ex.path, ex.max_timeout_seconds, ex.max_output_bytes, ex.max_background)
        return denied, HostBackend(max_output_bytes=ex.max_output_bytes, max_background=ex.max_background)
    # inside the sandbox the command is confined, so it may run as written
    confined = ExecPolicy("full", (), ex.path, ex.max_timeout_seconds, ex.max_output_bytes, ex.max_background)
    backend = SandboxExecBackend(sandbox, max_output_bytes=ex.max_output_bytes, max_background=ex.max_background)
    return confined, backend
