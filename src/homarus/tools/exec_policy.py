"""What ``exec`` may run: :class:`ExecPolicy` and the allowlist check of one command line.

``security``:

* ``"deny"`` (the default until the sandbox and approvals land): nothing runs.
* ``"allowlist"``: only a *simple command* whose binary matches ``allowlist``. The command line is
  split by a quote-aware scanner (POSIX ``sh`` word rules: single quotes, double quotes,
  backslash escapes, ``#`` comments at a word start) and refused, naming the reason, on any
  shell syntax that could run or redirect something else: ``;`` ``&`` ``|`` ``<`` ``>`` ``(``
  ``)``, backticks, ``$`` (``$(...)``, ``${...}``, ``$VAR``; also inside double quotes), raw
  newlines, unquoted glob characters and ``~``, and a leading ``NAME=value``. The command is then
  executed **as an argv, without a shell**, so nothing in it is expanded; the binary is resolved
  on the policy's ``PATH`` once, and that path is what runs.
* ``"full"``: any command, through ``/bin/sh -c``.

Allowlist entries are binary names (``ls``, ``git``) or globs on the resolved path
(``/usr/bin/*``). A name entry only matches a command typed by bare name and found on the
policy's ``PATH`` (``./ls`` is never ``ls``); a path entry matches the path found on ``PATH``
or its real path. Shells and dispatch wrappers (``sh``, ``bash``, ``env``, ``xargs``, ...) are
refused even when listed: they run other commands the allowlist never sees. Names are compared
exactly (case-sensitive, no Unicode folding, so homoglyphs never match).
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
from dataclasses import dataclass
from typing import Literal

from homarus.errors import InvalidRequest

__all__ = [
    "DEFAULT_PATH",
    "NEVER_ALLOWLISTED",
    "ExecDenied",
    "ExecPolicy",
    "Security",
    "allowlisted_argv",
    "split_simple_command",
]

Security = Literal["deny", "allowlist", "full"]

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"

#: binaries that run other commands: allowlisting them would allowlist everything
NEVER_ALLOWLISTED = frozenset(
    {
        *("sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "csh", "tcsh", "ash", "busybox", "toybox"),
        *("env", "nice", "nohup", "stdbuf", "timeout", "setsid", "xargs", "sudo", "doas", "su", "chroot"),
        *("ionice", "taskset", "unshare", "nsenter", "strace", "ltrace", "watch", "flock", "script", "exec"),
    }
)

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_OPERATORS = {";": ";", "&": "&", "|": "|", "<": "<", ">": ">", "(": "(", ")": ")", "`": "`"}
_GLOB = frozenset("*?[")


class ExecDenied(InvalidRequest):
    """The policy refuses this command; the message says why and is shown to the model."""


@dataclass(frozen=True, slots=True)
class ExecPolicy:
    """How ``exec`` may run commands (built from the proposed ``tools.exec`` config section)."""

    security: Security = "deny"
    #: binary names or globs on the resolved binary path; used when ``security="allowlist"``
    allowlist: tuple[str, ...] = ()
    #: ``PATH`` of every command, and where allowlisted names are looked up
    path: str = DEFAULT_PATH
    #: the largest ``timeout_seconds`` a call may ask for (also the lifetime cap of background processes)
    max_timeout_seconds: int = 1800
    #: bytes kept of stdout and of stderr (each); the rest is counted and dropped
    max_output_bytes: int = 200_000
    #: background processes running at once (per backend)
    max_background: int = 8

    def __post_init__(self) -> None:
        if self.security not in ("deny", "allowlist", "full"):
            raise ValueError(f"invalid exec security {self.security!r}")
        object.__setattr__(self, "allowlist", tuple(self.allowlist))


def _deny(reason: str) -> ExecDenied:
    return ExecDenied(f"exec denied: {reason}")


def _unsupported(token: str) -> ExecDenied:
    return _deny(f"unsupported shell token: {token} (allowlist mode runs one simple command, without a shell)")


def _check_char(ch: str) -> None:
    if ch == "\x00":
        raise _deny("the command contains a NUL byte")
    if ch in "\n\r":
        raise _unsupported("newline")
    if (ord(ch) < 0x20 and ch != "\t") or ch == "\x7f":
        raise _deny(f"the command contains a control character ({ch!r})")


def _double_quoted(command: str, i: int, word: list[str]) -> int:
    """Scan a double-quoted string starting after its opening quote; returns the index after it."""
    n = len(command)
    while i < n:
        ch = command[i]
        _check_char(ch)
        if ch == '"':
            return i + 1
        if ch == "`":
            raise _unsupported("` (command substitution, also inside double quotes)")
        if ch == "$":
            raise _unsupported("$() / $VAR (expansion, also inside double quotes)")
        if ch == "\\" and i + 1 < n and command[i + 1] in '"\\':
            word.append(command[i + 1])
            i += 2
            continue
        if ch == "\\" and i + 1 < n and command[i + 1] in "$`\n":
            raise _unsupported(f"\\{command[i + 1]!r} inside double quotes")
        word.append(ch)
        i += 1
    raise _deny("unterminated double quote")


def split_simple_command(command: str) -> list[str]:
    """The argv of a simple command, or :class:`ExecDenied` naming the shell syntax refused."""
    words: list[str] = []
    word: list[str] = []
    in_word = False
    i, n = 0, len(command)
    while i < n:
        ch = command[i]
        _check_char(ch)
        if ch in " \t":
            if in_word:
                words.append("".join(word))
                word, in_word = [], False
            i += 1
            continue
        if ch == "#" and not in_word:
            break  # a comment: sh ignores the rest of the line
        if ch in _OPERATORS:
            raise _unsupported(_OPERATORS[ch])
        if ch == "$":
            raise _unsupported("$() / $VAR (expansion)")
        if ch in _GLOB:
            raise _deny(f"unquoted glob character {ch!r}: nothing is expanded in allowlist mode; quote it")
        if ch == "~" and not in_word:
            raise _deny("unquoted ~: nothing is expanded in allowlist mode; use a relative path")
        in_word = True
        if ch == "'":
            end = command.find("'", i + 1)
            if end < 0:
                raise _deny("unterminated single quote")
            for inner in command[i + 1 : end]:
                _check_char(inner)
            word.append(command[i + 1 : end])
            i = end + 1
        elif ch == '"':
            i = _double_quoted(command, i + 1, word)
        elif ch == "\\":
            if i + 1 >= n:
                raise _deny("unterminated escape at the end of the command")
            _check_char(command[i + 1])
            word.append(command[i + 1])
            i += 2
        else:
            word.append(ch)
            i += 1
    if in_word:
        words.append("".join(word))
    if not words:
        raise _deny("empty command")
    if _ASSIGNMENT.match(words[0]):
        raise _deny("environment assignments before the command are not allowed; use the env parameter")
    return words


def _resolve(argv0: str, cwd: str, path: str) -> tuple[str, bool]:
    """(the path that will run, typed by bare name)."""
    if "/" in argv0:
        return os.path.normpath(os.path.join(cwd, argv0)), False
    found = shutil.which(argv0, path=path)
    if found is None:
        raise _deny(f"command not found on PATH ({path}): {argv0}")
    return os.path.abspath(found), True


def allowlisted_argv(command: str, policy: ExecPolicy, cwd: str) -> list[str]:
    """The argv to execute for ``command`` under an allowlist policy (argv[0] resolved), or ExecDenied."""
    argv = split_simple_command(command)
    resolved, bare = _resolve(argv[0], cwd, policy.path)
    real = os.path.realpath(resolved)
    for name in {argv[0].rsplit("/", 1)[-1], os.path.basename(resolved), os.path.basename(real)}:
        if name in NEVER_ALLOWLISTED:
            raise _deny(
                f"allowlist miss: {name!r} runs other commands (shells and dispatch wrappers are never allowlisted)"
            )
    for pattern in policy.allowlist:
        if "/" in pattern:
            if fnmatch.fnmatchcase(resolved, pattern):
                return [resolved, *argv[1:]]
            if fnmatch.fnmatchcase(real, pattern):
                return [real, *argv[1:]]  # the checked target, not a link that could be swapped
        elif bare and fnmatch.fnmatchcase(argv[0], pattern):
            return [resolved, *argv[1:]]
    shown = argv[0] if argv[0] == resolved else f"{argv[0]} ({resolved})"
    raise _deny(f"allowlist miss: {shown} is not in tools.exec.allowlist")
