"""Sandboxed command execution: bind validation, a seccomp filter, the bubblewrap and Docker backends."""

from __future__ import annotations

from homarus.sandbox.bwrap import BwrapBackend, Launch, sandbox_workspace
from homarus.sandbox.docker import DockerSandbox, engine_available
from homarus.sandbox.output import ExecResult
from homarus.sandbox.validate import BindSpec, SandboxSecurityError, validate_sandbox_options

__all__ = [
    "BindSpec",
    "BwrapBackend",
    "DockerSandbox",
    "ExecResult",
    "Launch",
    "SandboxSecurityError",
    "engine_available",
    "sandbox_workspace",
    "validate_sandbox_options",
]
