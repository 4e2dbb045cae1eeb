"""What the model is told about ``exec``: its description under a given policy.

Apart from the tool (``exec.py``) because the gateway offers ``exec`` by this text alone until the
model first calls it (``tools/catalog.py``), without importing the exec host and the sandbox.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

__all__ = ["ExecLimits", "exec_description"]


class ExecLimits(Protocol):
    """What the description says: the same names on ``tools.exec`` (the config) and on the
    ``ExecPolicy`` built from it, so either can be described."""

    @property
    def security(self) -> str: ...
    @property
    def allowlist(self) -> Iterable[str]: ...
    @property
    def max_timeout_seconds(self) -> int: ...
    @property
    def max_output_bytes(self) -> int: ...


_MODE_NOTES = {
    "deny": "Currently disabled by this gateway's config (tools.exec.security: deny).",
    "allowlist": (
        "Only allowlisted programs (and read-only filters such as grep, sort, wc reading stdin) run "
        "without approval; pipes and &&, ||, ; chains are fine when every part is allowed, while $(...), "
        "backticks, redirections, background & and newlines are not. Anything else is refused or waits for "
        "an operator's approval. Allowed: {allow}."
    ),
    "full": "The command runs through /bin/sh -c on the gateway host.",
    "sandbox": (
        "The command runs through /bin/sh -c inside an isolated sandbox: its workspace is /workspace, "
        "system directories are read-only, the network is off unless the operator allowed it, and no "
        "process outlives its timeout."
    ),
}


def exec_description(limits: ExecLimits, *, host: bool = True) -> str:
    """``exec``'s description under ``limits`` (``host=False``: commands run in the sandbox backend)."""
    mode = limits.security if host or limits.security == "deny" else "sandbox"
    note = _MODE_NOTES[mode].format(allow=", ".join(limits.allowlist) or "(nothing)")
    return (
        "Run a shell command in the workspace (workdir: a subdirectory); returns exit code, stdout and "
        f"stderr. Killed after timeout_seconds (max {limits.max_timeout_seconds}); output capped "
        f"at {limits.max_output_bytes:,} bytes per stream. background=true for servers and "
        f"watchers, then use process. {note}"
    )
