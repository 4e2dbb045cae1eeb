"""The ``exec`` and ``process`` tools: run commands in the workspace, manage background ones.

Built by :func:`make_exec_tools` from an :class:`~homarus.tools.exec_policy.ExecPolicy` (what may
run) and an :class:`~homarus.tools.process.ExecBackend` (where it runs: the host, or the
bubblewrap sandbox of :mod:`homarus.tools.sandboxed`)::

    policy = ExecPolicy(security="allowlist", allowlist=("ls", "git"))
    backend = HostBackend(max_output_bytes=policy.max_output_bytes, max_background=policy.max_background)
    for tool in make_exec_tools(policy, backend):
        registry.register(tool)
    ...
    await backend.aclose()  # on shutdown: kills the background processes

The default policy is ``security="deny"``: ``exec`` answers that it is disabled and runs nothing.

Every command runs in the workspace (``workdir`` is bounded to it with
:func:`homarus.tools.paths.resolve`) with a minimal environment: ``PATH`` (the policy's),
``HOME`` (the workspace), ``LANG``, then the model's ``env``, then the variables
``resolve_exec_env`` plugin hooks return (they win over the model's; fired only when the hook
runner is lent to tools as ``ToolContext.services.hooks``). Keys that change how programs load
code, find binaries or reach the network (``PATH``, ``HOME``, ``LD_*``, ``DYLD_*``, ``PYTHON*``,
proxies, ...) are refused from the model and dropped from hook results.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from homarus.errors import InvalidRequest
from homarus.plugins import events as ev
from homarus.tools.base import Tool, ToolContext, ToolResult, tool_from_function
from homarus.tools.exec_doc import exec_description
from homarus.tools.exec_policy import ExecPlan, ExecPolicy, fallback_plan, plan_exec
from homarus.tools.paths import PathError, in_mount, resolve
from homarus.tools.process import Command, ExecBackend, ExecResult, HostBackend, ProcessSession

__all__ = ["DISABLED_MESSAGE", "MAX_RESULT_CHARS", "check_env", "make_exec_tools"]

#: below the agent loop's cap on one tool result (100,000 characters), so the status line survives
MAX_RESULT_CHARS = 90_000
MAX_COMMAND_CHARS = 65_536
MAX_ENV_KEYS = 64
MAX_ENV_VALUE_CHARS = 32_768
MAX_WRITE_CHARS = 1_048_576
LANG = "C.UTF-8"
SANDBOX_MOUNT = "/workspace"

DISABLED_MESSAGE = (
    'exec is disabled: set tools.exec.security to "allowlist" (and list the allowed binaries in '
    'tools.exec.allowlist) or "full" in the config to enable it. Nothing was run (exec denied: security=deny).'
)

_ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_BLOCKED_ENV = re.compile(
    r"(PATH|HOME|SHELL|IFS|ENV|BASH_ENV|SHELLOPTS|BASHOPTS|PS4|CDPATH|LD_.*|DYLD_.*|PYTHON.*|"
    r"NODE_OPTIONS|NODE_PATH|NODE_TLS_REJECT_UNAUTHORIZED|NODE_EXTRA_CA_CERTS|PERL5?LIB|PERL5OPT|RUBYOPT|RUBYLIB|"
    r"GCONV_PATH|LOCPATH|GLIBC_TUNABLES|MALLOC_.*|(HTTPS?|ALL|NO|FTP|SOCKS5?|RSYNC)_PROXY|SSL_CERT_.*|"
    r"SSL_KEYLOG_FILE|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|GIT_SSL_NO_VERIFY|GIT_SSH|GIT_SSH_COMMAND|GIT_EXEC_PATH|"
    r"GIT_CONFIG.*|GIT_ASKPASS|SSH_ASKPASS|SSH_AUTH_SOCK|EDITOR|VISUAL|PAGER|GIT_PAGER|LESSOPEN|LESSCLOSE|HOMARUS_.*)",
    re.IGNORECASE,
)


def check_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """The model's extra variables, or InvalidRequest naming the first key that is not allowed."""
    if not env:
        return {}
    if len(env) > MAX_ENV_KEYS:
        raise InvalidRequest(f"too many env variables ({len(env)}; the limit is {MAX_ENV_KEYS})")
    for key, value in env.items():
        if not _ENV_KEY.fullmatch(key):
            raise InvalidRequest(f"env key {key[:64]!r} is not a valid variable name")
        if _BLOCKED_ENV.fullmatch(key):
            raise InvalidRequest(
                f"env key {key!r} is not allowed: PATH, HOME, loader (LD_*, DYLD_*), interpreter (PYTHON*, "
                "NODE_OPTIONS, ...) and proxy/TLS variables are fixed by the gateway"
            )
        if "\x00" in value or len(value) > MAX_ENV_VALUE_CHARS:
            raise InvalidRequest(f"env value of {key!r} contains a NUL byte or is over {MAX_ENV_VALUE_CHARS} chars")
    return dict(env)


async def _hook_env(ctx: ToolContext, host: str) -> dict[str, str]:
    """Variables from ``resolve_exec_env`` plugin hooks (none when no hook runner is lent to tools)."""
    runner = ctx.services.hooks
    if runner is None or not runner.has("resolve_exec_env"):
        return {}
    hook_ctx = ev.HookContext(
        agent_id=ctx.agent_id, session_key=ctx.session_key, run_id=ctx.run_id, tool_call_id=ctx.tool_call_id
    )
    event = ev.ResolveExecEnvEvent(ctx.session_key, "exec", host, context=hook_ctx)
    outcome = await runner.modify("resolve_exec_env", event, tool_name="exec")
    env = getattr(outcome.result, "env", None) or {}
    return {
        k: v
        for k, v in env.items()
        if isinstance(k, str) and isinstance(v, str) and _ENV_KEY.fullmatch(k) and not _BLOCKED_ENV.fullmatch(k)
    }


def _workdir(workspace: Path, workdir: str | None) -> tuple[str, str]:
    """(real workspace root, real working directory inside it)."""
    wp = resolve(workspace, workdir if workdir and workdir.strip() else ".")
    if not wp.exists:
        raise PathError(f"workdir not found: {wp.shown}")
    if not os.path.isdir(wp.real):
        raise PathError(f"workdir is not a directory: {wp.shown}")
    return wp.root, wp.real


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = max(limit // 2, 1)
    omitted = len(text) - 2 * half
    return f"{text[:half]}\n[... {omitted:,} characters omitted ...]\n{text[-half:]}"


def _status_line(result: ExecResult, timeout: float) -> str:
    if result.error is not None:
        return f"The command did not start: {result.error}"
    if result.timed_out:
        return f"Timed out after {timeout:g} s: the command and every process it started were killed."
    if result.aborted:
        return "Aborted: the command and every process it started were killed."
    code = result.exit_code
    if code is not None and code < 0:
        return f"Killed by signal {-code}."
    return f"Exit code: {code}"


def render(result: ExecResult, timeout: float, budget: int = MAX_RESULT_CHARS) -> str:
    """The model's view of one run: a status line, stdout, then stderr (both clipped to ``budget``)."""
    out, err = result.stdout, result.stderr
    if len(out) + len(err) > budget:
        err_budget = min(len(err), max(budget // 4, budget - len(out)))
        out, err = _clip(out, budget - err_budget), _clip(err, err_budget)
    parts = [_status_line(result, timeout)]
    if out:
        parts.append(out.rstrip("\n"))
    if err:
        parts.append("[stderr]\n" + err.rstrip("\n"))
    if not out and not err and result.error is None:
        parts.append("(no output)")
    return "\n".join(parts)


def _denied(message: str) -> ToolResult:
    return ToolResult.text(message, is_error=True, details={"status": "denied"})


async def _approve(
    ctx: ToolContext, policy: ExecPolicy, plan: ExecPlan, cwd: str, env: dict[str, str]
) -> tuple[ExecPlan, dict[str, Any]]:
    """Ask the operators about ``plan``; the plan to follow and what to record of the approval."""
    approver = ctx.services.exec_approvals
    if approver is None:
        return fallback_plan(plan), {"approval": "no-approval-route"}
    request = {
        "command": plan.command,
        "cwd": cwd,
        "host": "gateway",
        "security": plan.settings.security,
        "ask": plan.settings.ask,
        "agentId": ctx.agent_id,
        "sessionKey": ctx.session_key,
        "runId": ctx.run_id,
        "envKeys": sorted(env) or None,
        "resolvedPath": _resolved_path(plan),
        "allowAlwaysPatterns": plan.patterns,
        "reason": plan.reason,
    }
    outcome = await approver(request, policy.approval_timeout_ms, ctx.abort)
    record = {
        "approvalId": outcome.id,
        "approval": outcome.decision or outcome.reason,
        "approvedBy": outcome.resolved_by,
    }
    if outcome.decision in ("allow-once", "allow-always"):
        return replace(plan, action="run", reason=None), record
    if outcome.decision == "deny":
        who = f" ({outcome.resolved_by})" if outcome.resolved_by else ""
        return replace(plan, action="deny", reason=f"exec denied: an operator{who} denied this command"), record
    if outcome.reason == "no-approval-route":
        return fallback_plan(plan), record
    why = {"timeout": "the approval request timed out", "cancelled": "the run was aborted"}.get(
        outcome.reason or "", f"the approval ended without a decision ({outcome.reason})"
    )
    return replace(plan, action="deny", reason=f"exec denied: {why}"), record


def _resolved_path(plan: ExecPlan) -> str | None:
    segments = plan.analysis.segments if plan.analysis else []
    return segments[0].resolved if len(segments) == 1 else None


async def _exec(
    ctx: ToolContext,
    policy: ExecPolicy,
    backend: ExecBackend,
    command: str,
    workdir: str | None,
    timeout_seconds: int,
    background: bool,
    env: dict[str, str] | None,
) -> ToolResult:
    if ctx.sandbox is not None:  # confined: the sandbox, not the host policy, bounds the command
        if ctx.sandbox.backend is None:
            return ToolResult.text(ctx.sandbox.unavailable or "exec is unavailable", is_error=True)
        policy = replace(policy, security="full", ask="off", host=False, approvals_file=None)
        backend = ctx.sandbox.backend
        workdir = in_mount(workdir, SANDBOX_MOUNT) if workdir else workdir
    if policy.security == "deny":
        return _denied(DISABLED_MESSAGE)
    # checked here too: tool_from_function drops Annotated constraints from the schema and validation
    if not command.strip() or len(command) > MAX_COMMAND_CHARS:
        return ToolResult.text(f"command must be 1 to {MAX_COMMAND_CHARS:,} characters", is_error=True)
    if timeout_seconds < 1:
        return ToolResult.text("timeout_seconds must be at least 1", is_error=True)
    try:
        root, cwd = _workdir(ctx.workspace, workdir)
        extra = check_env(env)
    except InvalidRequest as exc:
        return ToolResult.text(exc.message, is_error=True, details={"status": "invalid"})
    # off the loop: it reads the host's approvals (a file, or the cluster's database) and stats paths
    plan = await asyncio.to_thread(plan_exec, command, policy, cwd)
    approval: dict[str, Any] = {}
    if plan.action == "ask":
        plan, approval = await _approve(ctx, policy, plan, cwd, extra)
    if plan.action != "run":
        return ToolResult.text(plan.reason or "exec denied", is_error=True, details={"status": "denied", **approval})
    argv: Command = plan.command
    full_env = {"PATH": policy.path, "HOME": root, "LANG": LANG, **extra, **await _hook_env(ctx, "gateway")}
    timeout = min(timeout_seconds, policy.max_timeout_seconds)
    if background:
        return await _start(ctx, backend, argv, cwd, full_env, timeout, command)
    result = await backend.run(argv, cwd, full_env, timeout, abort=ctx.abort)
    details = {
        "status": "timeout" if result.timed_out else "aborted" if result.aborted else "completed",
        "exitCode": result.exit_code,
        "durationMs": result.duration_ms,
        "truncated": result.truncated,
        "cwd": cwd,
        **approval,
    }
    failed = result.timed_out or result.aborted or result.error is not None
    return ToolResult.text(render(result, timeout), details=details, is_error=failed)


async def _start(
    ctx: ToolContext, backend: ExecBackend, argv: Command, cwd: str, env: dict[str, str], timeout: float, command: str
) -> ToolResult:
    label = command if len(command) <= 120 else command[:119] + "…"
    try:
        session = await backend.start(argv, cwd, env, timeout, owner=ctx.session_key, label=label)
    except ValueError as exc:
        return ToolResult.text(f"Not started: {exc}", is_error=True, details={"status": "refused"})
    except OSError as exc:
        return ToolResult.text(f"The command did not start: {exc.strerror or exc}", is_error=True)
    text = (
        f"Started background process {session.id} (pid {session.pid}); it is killed after {timeout:g} s. "
        f'Use the process tool with session_id "{session.id}" and action poll, log, write or kill.'
    )
    return ToolResult.text(text, details={"status": "running", "sessionId": session.id, "pid": session.pid})


def _describe(session: ProcessSession) -> str:
    state: str = session.status
    if not session.running and session.exit_code is not None:
        code = session.exit_code
        state += f" (signal {-code})" if code < 0 else f" (exit code {code})"
    return f"{session.id}: {state}, {session.runtime_s():.1f} s, pid {session.pid}: {session.label}"


def _output(header: str, dropped: int, text: str, empty: str) -> ToolResult:
    parts = [header]
    if dropped:
        parts.append(f"[... {dropped:,} earlier bytes were dropped (only the last part is kept) ...]")
    parts.append(_clip(text, MAX_RESULT_CHARS).rstrip("\n") if text else empty)
    return ToolResult.text("\n".join(parts))


async def _process(
    ctx: ToolContext, backend: ExecBackend, action: str, session_id: str | None, data: str | None
) -> ToolResult:
    if ctx.sandbox is not None and ctx.sandbox.backend is not None:
        backend = ctx.sandbox.backend
    registry = backend.processes
    if action == "list":
        sessions = registry.list(ctx.session_key)
        lines = [_describe(s) for s in sessions] or ["No background processes."]
        return ToolResult.text("\n".join(lines), details={"count": len(sessions)})
    if not session_id:
        return ToolResult.text(f"process {action} needs session_id (see action list)", is_error=True)
    session = registry.get(session_id, ctx.session_key)
    if session is None:
        text = f"Unknown session_id {session_id!r}; action list shows this session's processes."
        return ToolResult.text(text, is_error=True)
    details = {"sessionId": session.id, "status": session.status, "exitCode": session.exit_code}
    if action == "poll":
        dropped, text = session.poll()
        result = _output(_describe(session), dropped, text, "(no new output)")
    elif action == "log":
        dropped, text = session.log()
        result = _output(_describe(session), dropped, text, "(no output)")
    elif action == "write":
        if data is not None and len(data) > MAX_WRITE_CHARS:
            return ToolResult.text(f"data is over {MAX_WRITE_CHARS:,} characters", is_error=True)
        try:
            session.write(None if data is None else data.encode("utf-8"))
        except ValueError as exc:
            return ToolResult.text(f"Cannot write to {session.id}: {exc}", is_error=True, details=details)
        what = "closed its stdin" if data is None else f"wrote {len(data):,} characters"
        result = ToolResult.text(f"{session.id}: {what}.")
    else:  # kill
        if session.running:
            session.kill()
            await session.wait()
        result = ToolResult.text(_describe(session))
    result.details = {**details, "status": session.status, "exitCode": session.exit_code}
    return result


def make_exec_tools(policy: ExecPolicy | None = None, backend: ExecBackend | None = None) -> list[Tool]:
    """``exec`` and ``process`` bound to ``policy`` (default: deny) and ``backend`` (default: the host)."""
    pol = policy or ExecPolicy()
    be: ExecBackend = backend or HostBackend(max_output_bytes=pol.max_output_bytes, max_background=pol.max_background)

    async def exec(
        ctx: ToolContext,
        command: Annotated[str, Field(min_length=1, max_length=MAX_COMMAND_CHARS)],
        workdir: str | None = None,
        timeout_seconds: Annotated[int, Field(ge=1, le=86_400)] = 60,
        background: bool = False,
        env: dict[str, str] | None = None,
    ) -> ToolResult:
        return await _exec(ctx, pol, be, command, workdir, timeout_seconds, background, env)

    async def process(
        ctx: ToolContext,
        action: Literal["list", "poll", "log", "write", "kill"],
        session_id: str | None = None,
        data: str | None = None,
    ) -> ToolResult:
        return await _process(ctx, be, action, session_id, data)

    exec_doc = exec_description(pol, host=pol.host)
    process_doc = (
        "Background processes started by exec: list, poll (new output and status), log (all kept output), "
        "write (data to stdin; no data closes it), kill."
    )
    return [
        tool_from_function(
            exec, description=exec_doc, tags=frozenset({"runtime", "dangerous"}), summary="Run shell commands"
        ),
        tool_from_function(
            process,
            description=process_doc,
            tags=frozenset({"runtime"}),
            summary="Manage background commands",
            deferred=True,
        ),
    ]
