"""Exec allowlist analysis and the run/ask/deny decision (security.md §4.1-§4.3).

:func:`analyze` parses a command (:mod:`homarus.security.exec_shell`), unwraps dispatch wrappers
(``env nice nohup stdbuf timeout`` and their options) to the inner executable, resolves it on
``path`` to its real path and checks every segment against the allowlist or the safe-bin
profiles. ``Analysis.rebuilt`` is the command rebuilt from the parsed plan — resolved real paths
and every token ``shlex.quote``-d — so what runs is exactly what was analysed (or approved); it
is ``""`` when the command could not be parsed. :func:`decide` applies ``security``/``ask``.

Allowlist patterns are globs (``*`` within a path component, ``**`` across, ``?``, ``[..]``;
case-sensitive) on the resolved real path; a pattern without ``/`` matches the bare command
name of a PATH-invoked command. Shells, interpreters-launchers and dispatchers (``sh``, ``bash``,
``xargs``, ``sudo``, ``busybox``...) are never satisfied by the allowlist. Environment
assignments other than ``TERM LANG LC_* COLORTERM NO_COLOR FORCE_COLOR`` force approval.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from homarus.security.exec_safe_bins import DEFAULT_SAFE_BINS, TRUSTED_DIRS, check_safe_bin
from homarus.security.exec_shell import ShellSyntaxError, Word, parse_command

__all__ = [
    "NEVER_ALLOWLISTED",
    "SAFE_ENV_VARS",
    "Analysis",
    "Ask",
    "Decision",
    "Security",
    "Segment",
    "analyze",
    "decide",
    "decide_fallback",
    "glob_match",
    "path_pattern",
]

Security = Literal["deny", "allowlist", "full"]
Ask = Literal["off", "on-miss", "always"]
PREFIX: Final = "exec denied: "
MISS: Final = "exec denied: allowlist miss"
SAFE_ENV_VARS: Final = frozenset({"TERM", "LANG", "COLORTERM", "NO_COLOR", "FORCE_COLOR"})
WRAPPERS: Final = frozenset({"env", "nice", "nohup", "stdbuf", "timeout"})
NEVER_ALLOWLISTED: Final = frozenset(
    {
        *("sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "csh", "tcsh", "ash", "busybox", "toybox"),
        *("env", "nice", "nohup", "stdbuf", "timeout", "setsid", "xargs", "sudo", "doas", "su", "chroot"),
        *("ionice", "taskset", "unshare", "nsenter", "strace", "ltrace", "watch", "flock", "script", "exec"),
    }
)
#: wrapper options: (flags without a value, flags with a value); long ``--x=v`` handled generically
_WRAPPER_OPTS: Final[dict[str, tuple[frozenset[str], frozenset[str]]]] = {
    "env": (frozenset({"-i", "--ignore-environment", "-0", "--null"}), frozenset({"-u", "--unset"})),
    "nice": (frozenset(), frozenset({"-n", "--adjustment"})),
    "nohup": (frozenset(), frozenset()),
    "stdbuf": (frozenset(), frozenset({"-i", "-o", "-e", "--input", "--output", "--error"})),
    "timeout": (
        frozenset({"--preserve-status", "--foreground", "-v", "--verbose"}),
        frozenset({"-s", "--signal", "-k", "--kill-after"}),
    ),
}


@dataclass(frozen=True, slots=True)
class Segment:
    """One simple command of the pipeline/chain, after unwrapping dispatch wrappers."""

    #: the inner command's argv as typed (argv[0] = ``executable``)
    argv: list[str]
    executable: str
    #: real path of the inner executable on ``path`` (None: not found)
    resolved: str | None
    env: tuple[tuple[str, str], ...] = ()
    #: each wrapper's argv, argv[0] already resolved to its real path
    wrappers: tuple[tuple[str, ...], ...] = ()
    #: "allowlist", "safe-bin" or None (a miss)
    satisfied_by: str | None = None

    def shell(self) -> str:
        """This segment as a shell command with every token quoted and executables resolved."""
        words = [f"{name}={shlex.quote(value)}" for name, value in self.env]
        for wrapper in self.wrappers:
            words.extend(shlex.quote(t) for t in wrapper)
        words.append(shlex.quote(self.resolved or self.executable))
        words.extend(shlex.quote(a) for a in self.argv[1:])
        return " ".join(words)


@dataclass(frozen=True, slots=True)
class Analysis:
    ok: bool
    segments: list[Segment]
    reason: str | None
    needs_approval: bool
    rebuilt: str
    #: allow-always patterns (resolved real paths, glob-escaped); empty when not rememberable
    patterns: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Decision:
    action: Literal["run", "ask", "deny"]
    reason: str | None = None


# -- globs and resolution ------------------------------------------------------------------------
def _glob_regex(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "*":
            if pattern.startswith("**", i):
                out.append(".*")
                i += 2
                continue
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = pattern.find("]", i + 2)
            if end < 0:
                out.append(re.escape(ch))
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                out.append(f"[^{body[1:]}]" if body.startswith("!") else f"[{body}]")
                i = end + 1
                continue
        else:
            out.append(re.escape(ch))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def glob_match(pattern: str, text: str) -> bool:
    """Case-sensitive glob: ``*`` and ``?`` stay within a path component, ``**`` crosses ``/``."""
    return _glob_regex(pattern).fullmatch(text) is not None


def path_pattern(real_path: str) -> str:
    """An allowlist pattern matching exactly ``real_path``."""
    return re.sub(r"([*?\[])", r"[\1]", real_path)


def _is_exe(p: str) -> bool:
    return os.path.isfile(p) and os.access(p, os.X_OK)


def _resolve(argv0: str, path: str, cwd: str | None) -> str | None:
    if "/" in argv0:
        full = argv0 if os.path.isabs(argv0) else os.path.join(cwd or os.getcwd(), argv0)
        return os.path.realpath(full) if _is_exe(full) else None
    for entry in path.split(os.pathsep):
        if not os.path.isabs(entry):  # relative PATH entries depend on the cwd: never searched
            continue
        candidate = os.path.join(entry, argv0)
        if _is_exe(candidate):
            return os.path.realpath(candidate)
    return None


def _trusted(real: str) -> bool:
    trusted = {os.path.realpath(d) for d in TRUSTED_DIRS}
    return os.path.dirname(real) in trusted


# -- segments ------------------------------------------------------------------------------------
class _Miss(Exception):
    pass


def _env_check(name: str) -> None:
    if name in SAFE_ENV_VARS or name.startswith("LC_"):
        return
    kind = "dynamic-loader override " if name.startswith(("LD_", "DYLD_")) else "environment override "
    raise _Miss(f"{MISS}: {kind}{name}= requires approval")


def _skip_wrapper_opts(name: str, words: list[str], i: int) -> int:
    """Index of the first word after ``name``'s options (and timeout's duration)."""
    if name == "env":
        for w in words[i:]:
            if w in ("-S", "--split-string") or w.startswith(("-S", "--split-string=")):
                raise _Miss(f"{MISS}: env -S/--split-string is not analysable")
    flags, valued = _WRAPPER_OPTS[name]
    while i < len(words):
        w = words[i]
        if w == "--":
            i += 1
            break
        if not w.startswith("-") or w == "-":
            if name == "env" and w == "-":
                i += 1
                continue
            break
        base = w.split("=", 1)[0]
        if w in flags or (base in valued and "=" in w and base.startswith("--")):
            i += 1
        elif w in valued:
            i += 2
        elif any(w.startswith(v) and not v.startswith("--") for v in valued) or (
            name == "nice" and re.fullmatch(r"-\d+", w)
        ):
            i += 1  # short flag with an attached value (-n5, -oL), or nice's legacy -5
        else:
            raise _Miss(f"{MISS}: unsupported {name} option {w}")
    if name == "timeout":
        if i >= len(words):
            raise _Miss(f"{MISS}: timeout without a duration")
        i += 1
    return i


def _segment(
    words: list[Word], *, path: str, cwd: str | None, allowlist: Sequence[str], safe: Collection[str]
) -> Segment:
    env: list[tuple[str, str]] = []
    i = 0
    while i < len(words) and (assignment := words[i].assignment()) is not None:
        env.append(assignment)
        i += 1
    texts = [w.text for w in words]
    wrappers: list[tuple[str, ...]] = []
    while i < len(texts) and texts[i] in WRAPPERS:
        name = texts[i]
        real = _resolve(name, path, cwd)
        if real is None or not _trusted(real):
            raise _Miss(f"{MISS}: wrapper {name} does not resolve into {', '.join(TRUSTED_DIRS)}")
        end = _skip_wrapper_opts(name, texts, i + 1)
        if name == "env":
            while end < len(texts) and (assignment := Word(texts[end], len(texts[end])).assignment()) is not None:
                end += 1
                env_name = assignment[0]
                _env_check(env_name)
        wrappers.append((real, *texts[i + 1 : end]))
        i = end
    for name, _ in sorted(env, key=lambda kv: not kv[0].startswith(("LD_", "DYLD_"))):
        _env_check(name)
    argv = texts[i:]
    if not argv:
        raise _Miss(f"{MISS}: no command after {'wrappers' if wrappers else 'assignments'}")
    exe = argv[0]
    resolved = _resolve(exe, path, cwd)
    if resolved is None:
        raise _Miss(f"{MISS}: {exe} not found on PATH" if "/" not in exe else f"{MISS}: {exe} is not an executable")
    names = {exe.rsplit("/", 1)[-1], os.path.basename(resolved)}
    if names & NEVER_ALLOWLISTED:
        raise _Miss(f"{MISS}: {exe} ({resolved}) runs other commands and is never allowlisted")
    for pattern in allowlist:
        if glob_match(pattern, resolved) if "/" in pattern else ("/" not in exe and glob_match(pattern, exe)):
            return Segment(argv, exe, resolved, tuple(env), tuple(wrappers), "allowlist")
    base = os.path.basename(resolved)
    if exe.rsplit("/", 1)[-1] in safe and base == exe.rsplit("/", 1)[-1] and _trusted(resolved):
        problem = check_safe_bin(base, argv[1:])
        if problem is None:
            return Segment(argv, exe, resolved, tuple(env), tuple(wrappers), "safe-bin")
        raise _Miss(f"{MISS}: {problem}")
    raise _Miss(f"{MISS}: {exe} ({resolved}) is not in the allowlist")


def _unanalysed(words: list[Word], path: str, cwd: str | None) -> tuple[Segment, str]:
    """A segment that missed: its words, quoted (leading assignments stay assignments)."""
    out: list[str] = []
    i = 0
    while i < len(words) and (assignment := words[i].assignment()) is not None:
        out.append(f"{assignment[0]}={shlex.quote(assignment[1])}")
        i += 1
    texts = [w.text for w in words[i:]]
    out.extend(shlex.quote(t) for t in texts)
    exe = texts[0] if texts else ""
    return Segment(texts, exe, _resolve(exe, path, cwd) if exe else None), " ".join(out)


def analyze(
    command: str,
    *,
    path: str,
    allowlist: Sequence[str],
    safe_bins: bool = True,
    safe_bin_names: Collection[str] = DEFAULT_SAFE_BINS,
    cwd: str | None = None,
) -> Analysis:
    """Analyse ``command`` for allowlist mode; see the module docstring."""
    try:
        parsed = parse_command(command)
    except ShellSyntaxError as exc:
        empty = not command.strip()
        return Analysis(False, [], f"{PREFIX}{exc}", not empty, "")
    safe = frozenset(safe_bin_names) if safe_bins else frozenset()
    segments: list[Segment] = []
    shells: list[str] = []
    reason: str | None = None
    for part_index, pipeline in enumerate(parsed.parts):
        piped: list[str] = []
        for words in pipeline:
            try:
                seg = _segment(words, path=path, cwd=cwd, allowlist=allowlist, safe=safe)
            except _Miss as miss:
                reason = reason or str(miss)
                seg, text = _unanalysed(words, path, cwd)
                piped.append(text)
            else:
                piped.append(seg.shell())
            segments.append(seg)
        shells.append(" | ".join(piped))
        if part_index < len(parsed.ops):
            op = parsed.ops[part_index]
            shells.append(f"{op} " if op == ";" else f" {op} ")
    rebuilt = "".join(shells)
    patterns: list[str] = []
    if all(s.resolved and os.path.basename(s.resolved) not in NEVER_ALLOWLISTED for s in segments):
        patterns = list(dict.fromkeys(path_pattern(s.resolved or "") for s in segments))
    ok = reason is None
    return Analysis(ok, segments, reason, not ok, rebuilt, patterns)


def decide(analysis: Analysis, security: Security, ask: Ask) -> Decision:
    """run / ask / deny for an analysed command under ``security`` and ``ask`` (§4.1)."""
    if security == "deny":
        return Decision("deny", f"{PREFIX}security=deny blocks all host exec")
    if not analysis.segments and not analysis.needs_approval:
        return Decision("deny", analysis.reason or f"{PREFIX}empty command")
    if ask == "always":
        return Decision("ask", "approval required (ask=always)")
    if security == "full":
        return Decision("run")
    if analysis.ok:
        return Decision("run")
    if ask == "on-miss" and analysis.needs_approval:
        return Decision("ask", analysis.reason)
    return Decision("deny", analysis.reason)


def decide_fallback(analysis: Analysis, ask_fallback: Security) -> Decision:
    """What happens when approval is needed but no approver is reachable (``askFallback``)."""
    if ask_fallback == "full":
        return Decision("run")
    if ask_fallback == "allowlist" and analysis.ok:
        return Decision("run")
    return Decision("deny", f"{PREFIX}approval required but no approver is reachable (askFallback={ask_fallback})")
