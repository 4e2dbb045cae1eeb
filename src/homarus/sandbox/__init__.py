"""Sandboxed command execution: bind validation, a seccomp filter, the bubblewrap backend."""

from __future__ import annotations

from homarus.sandbox.bwrap import BwrapBackend, Launch, SandboxExecResult, sandbox_workspace
from homarus.sandbox.validate import BindSpec, SandboxSecurityError, validate_sandbox_options

__all__ = [
    "BindSpec",
    "BwrapBackend",
    "Launch",
    "SandboxExecResult",
    "SandboxSecurityError",
    "sandbox_workspace",
    "validate_sandbox_options",
]
