"""Sandboxed command execution: bind validation, a seccomp filter, the bubblewrap backend."""

from __future__ import annotations

from homarus.sandbox.bwrap import BwrapBackend, Launch, sandbox_workspace
from homarus.sandbox.output import ExecResult
from homarus.sandbox.validate import BindSpec, SandboxSecurityError, validate_sandbox_options

__all__ = [
    "BindSpec",
    "BwrapBackend",
    "ExecResult",
    "Launch",
    "SandboxSecurityError",
    "sandbox_workspace",
    "validate_sandbox_options",
]
