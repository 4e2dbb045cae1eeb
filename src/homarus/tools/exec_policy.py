"""What ``exec`` may run on the gateway host, decided on the parsed command (security.md §4).

:class:`ExecPolicy` is the config's ``tools.exec`` section; :func:`plan_exec` turns one command
into an :class:`ExecPlan`: ``run`` (with the exact text to hand to ``/bin/sh -c``), ``ask`` (an
operator must approve; the plan carries what to show and what to remember) or ``deny`` (with
the reason shown to the model).

The effective ``security``/``ask``/``askFallback`` is the stricter of the config and the host's
approvals file (``$STATE/exec-approvals.json``); an approvals file that cannot be trusted
(symlinked, hard-linked, malformed) makes the policy ``deny/always/deny``. The allow-always
patterns of that file join the config's allowlist.

In ``allowlist`` mode the command is parsed (:mod:`homarus.security.exec_analysis`): every
segment of a pipeline or ``&&``/``||``/``;`` chain must be allowlisted or a safe bin, and what
runs is the command **rebuilt from the parse**, executables replaced by their resolved real
paths and every token quoted, so the shell expands nothing the analysis did not see. In
``full`` mode (or once an operator approved a command the analysis could not rebuild) the
command text runs as written.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from homarus.errors import HomarusError
from homarus.security.exec_analysis import Analysis, analyze, decide, decide_fallback
from homarus.security.exec_approvals_file import (
    STRICT_POLICY,
    ApprovalsSource,
    ExecPolicySettings,
    effective_policy,
    load,
)

__all__ = ["DEFAULT_PATH", "Ask", "ExecPlan", "ExecPolicy", "Security", "fallback_plan", "plan_exec"]

log = logging.getLogger("homarus.exec")

Security = Literal["deny", "allowlist", "full"]
Ask = Literal["off", "on-miss", "always"]

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True, slots=True)
class ExecPolicy:
    """How ``exec`` may run commands (built from the ``tools.exec`` config section)."""

    security: Security = "deny"
    #: binary names or globs on the resolved real path; used when ``security="allowlist"``
    allowlist: tuple[str, ...] = ()
    #: ``PATH`` of every command, and where allowlisted names are looked up
    path: str = DEFAULT_PATH
    #: the largest ``timeout_seconds`` a call may ask for (also the lifetime cap of background processes)
    max_timeout_seconds: int = 1800
    #: bytes kept of stdout and of stderr (each); the rest is counted and dropped
    max_output_bytes: int = 200_000
    #: background processes running at once (per backend)
    max_background: int = 8
    #: when to ask an operator: never, when the allowlist misses, for every command
    ask: Ask = "off"
    #: what happens when approval is needed but no operator is connected
    ask_fallback: Security = "deny"
    #: stdin-only safe bins (grep, sort, wc, ...) pass without being allowlisted
    safe_bins: bool = True
    #: how long an approval request waits for an operator
    approval_timeout_ms: int = 1_800_000
    #: the host's approvals (a file's path, or the cluster's shared row); None = config only
    approvals_file: Path | ApprovalsSource | None = None
    #: the commands run on the gateway host (False: they are confined by the sandbox backend)
    host: bool = True

    def __post_init__(self) -> None:
        if self.security not in ("deny", "allowlist", "full"):
            raise ValueError(f"invalid exec security {self.security!r}")
        if self.ask not in ("off", "on-miss", "always"):
            raise ValueError(f"invalid exec ask {self.ask!r}")
        object.__setattr__(self, "allowlist", tuple(self.allowlist))


@dataclass(frozen=True, slots=True)
class ExecPlan:
    action: Literal["run", "ask", "deny"]
    #: the text handed to ``/bin/sh -c`` (run) or to run once approved (ask)
    command: str
    reason: str | None
    settings: ExecPolicySettings
    analysis: Analysis | None = None
    #: allow-always patterns an operator may grant (empty: allow-always not offered)
    patterns: list[str] = field(default_factory=list)


def _settings(policy: ExecPolicy) -> tuple[ExecPolicySettings, tuple[str, ...]]:
    """The effective settings and the file's allow-always patterns (the file is read once per call)."""
    configured = ExecPolicySettings(policy.security, policy.ask, policy.ask_fallback)
    if policy.approvals_file is None:
        return configured, ()
    try:
        source = policy.approvals_file
        file = load(source) if isinstance(source, Path) else source.load()
    except HomarusError as exc:
        log.error("exec approvals file cannot be trusted (%s): using deny/always/deny", exc.message)
        return STRICT_POLICY, ()
    return effective_policy(configured, file.policy), file.patterns


def plan_exec(command: str, policy: ExecPolicy, cwd: str) -> ExecPlan:
    """run / ask / deny for ``command`` in ``cwd`` under ``policy`` and the approvals file."""
    settings, remembered = _settings(policy)
    if not policy.host:
        return ExecPlan("run", command, None, settings)
    allowlist = (*policy.allowlist, *remembered)
    analysis = analyze(command, path=policy.path, allowlist=allowlist, safe_bins=policy.safe_bins, cwd=cwd)
    decision = decide(analysis, settings.security, settings.ask)
    # what was analysed is what runs; only an unparseable command an operator saw runs as typed
    runnable = analysis.rebuilt if settings.security == "allowlist" and analysis.rebuilt else command
    return ExecPlan(decision.action, runnable, decision.reason, settings, analysis, analysis.patterns)


def fallback_plan(plan: ExecPlan) -> ExecPlan:
    """What ``askFallback`` makes of a plan that needed an operator none could answer."""
    assert plan.analysis is not None
    decision = decide_fallback(plan.analysis, plan.settings.ask_fallback)
    if decision.action == "run":
        command = plan.analysis.rebuilt if plan.settings.ask_fallback == "allowlist" else plan.command
        return ExecPlan("run", command, None, plan.settings, plan.analysis)
    return ExecPlan("deny", plan.command, decision.reason, plan.settings, plan.analysis)
