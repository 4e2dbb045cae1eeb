"""What the model is told about ``exec``: its description under a given policy.

Apart from the tool (``exec.py``) because the gateway offers ``exec`` by this text alone until the
model first calls it (``tools/catalog.py``), without importing the exec host and the sandbox.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["exec_description"]

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


def exec_description(
    *, security: str, host: bool, allowlist: Iterable[str], max_timeout_seconds: int, max_output_bytes: int
) -> str:
    """``exec``'s description for a policy (``host=False``: commands run in the sandbox backend)."""
    mode = security if host or security == "deny" else "sandbox"
    note = _MODE_NOTES[mode].format(allow=", ".join(allowlist) or "(nothing)")
    return (
        "Run a shell command in the workspace (workdir: a subdirectory); returns exit code, stdout and "
        f"stderr. Killed after timeout_seconds (max {max_timeout_seconds}); output capped "
        f"at {max_output_bytes:,} bytes per stream. background=true for servers and "
        f"watchers, then use process. {note}"
    )
