"""Safe bins: stdin-only filters that may run without an allowlist entry (security.md §4.3).

Validation looks only at argv shape (never the filesystem, so there is no existence oracle):
flags must be known for the bin (long options exactly or as an unambiguous GNU abbreviation),
denied flags are refused, value flags take their value (attached or the next arg), and
positionals are limited per profile and may not look like paths. The binary itself must resolve
into a trusted directory (``/bin``, ``/usr/bin``); PATH entries are never trusted automatically.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

__all__ = [
    "DEFAULT_SAFE_BINS",
    "OPT_IN_SAFE_BINS",
    "PROFILES",
    "TRUSTED_DIRS",
    "SafeBinProfile",
    "check_safe_bin",
]

DEFAULT_SAFE_BINS: Final = frozenset({"cut", "uniq", "head", "tail", "tr", "wc"})
OPT_IN_SAFE_BINS: Final = frozenset({"sort", "grep", "jq"})
TRUSTED_DIRS: Final = ("/bin", "/usr/bin")


@dataclass(frozen=True, slots=True)
class SafeBinProfile:
    max_positional: int = 0
    min_positional: int = 0
    #: flags taking one value (short ``-n`` or long ``--lines``); jq's ``--arg`` take two
    value_flags: frozenset[str] = frozenset()
    two_value_flags: frozenset[str] = frozenset()
    #: flags taking no value
    bool_flags: frozenset[str] = frozenset()
    denied: frozenset[str] = frozenset()
    #: words refused inside positionals (jq's ``env`` builtin, module loading)
    denied_words: frozenset[str] = field(default_factory=frozenset)

    def long_flags(self) -> set[str]:
        every = self.value_flags | self.two_value_flags | self.bool_flags | self.denied
        return {f for f in every if f.startswith("--")}


def _f(*flags: str) -> frozenset[str]:
    return frozenset(flags)


PROFILES: Final[dict[str, SafeBinProfile]] = {
    "head": SafeBinProfile(
        value_flags=_f("-n", "-c", "--lines", "--bytes"),
        bool_flags=_f("-q", "-v", "-z", "--quiet", "--silent", "--verbose", "--zero-terminated"),
    ),
    "tail": SafeBinProfile(
        value_flags=_f("-n", "-c", "--lines", "--bytes", "--sleep-interval", "--max-unchanged-stats", "--pid"),
        bool_flags=_f("-q", "-v", "-z", "--quiet", "--silent", "--verbose", "--zero-terminated"),
    ),
    "cut": SafeBinProfile(
        value_flags=_f(
            *("-b", "-c", "-f", "-d", "--bytes", "--characters", "--fields", "--delimiter"),
            "--output-delimiter",
        ),
        bool_flags=_f("-n", "-s", "-z", "--complement", "--only-delimited", "--zero-terminated"),
    ),
    "uniq": SafeBinProfile(
        value_flags=_f("-f", "-s", "-w", "--skip-fields", "--skip-chars", "--check-chars", "--group"),
        bool_flags=_f(
            *("-c", "-d", "-D", "-i", "-u", "-z", "--count", "--repeated", "--ignore-case", "--unique"),
            "--zero-terminated",
        ),
    ),
    "tr": SafeBinProfile(
        min_positional=1,
        max_positional=2,
        bool_flags=_f(
            *("-c", "-C", "-d", "-s", "-t", "--complement", "--delete", "--squeeze-repeats"),
            "--truncate-set1",
        ),
    ),
    "wc": SafeBinProfile(
        bool_flags=_f(
            *("-c", "-m", "-l", "-L", "-w", "--bytes", "--chars", "--lines", "--max-line-length"),
            "--words",
        ),
        denied=_f("--files0-from"),
    ),
    "sort": SafeBinProfile(
        value_flags=_f(
            *("-k", "-t", "-S", "--key", "--field-separator", "--buffer-size", "--parallel"),
            "--batch-size",
        ),
        bool_flags=_f(
            *("-b", "-d", "-f", "-g", "-i", "-M", "-h", "-n", "-R", "-r", "-V", "-c", "-C", "-m", "-s", "-u", "-z"),
            *("--ignore-leading-blanks", "--dictionary-order", "--ignore-case", "--general-numeric-sort"),
            *("--ignore-nonprinting", "--month-sort", "--human-numeric-sort", "--numeric-sort"),
            *("--random-sort", "--reverse", "--version-sort", "--merge", "--stable", "--unique"),
            *("--zero-terminated", "--debug"),
        ),
        denied=_f(
            *("--compress-program", "--files0-from", "--output", "--random-source"),
            *("--temporary-directory", "-T", "-o"),
        ),
    ),
    "grep": SafeBinProfile(
        value_flags=_f(
            *("-e", "-m", "-A", "-B", "-C", "--regexp", "--max-count", "--after-context"),
            *("--before-context", "--context"),
        ),
        bool_flags=_f(
            *("-i", "-v", "-w", "-x", "-c", "-n", "-o", "-q", "-s", "-E", "-F", "-G", "-P", "-z", "-a", "-b"),
            *("--ignore-case", "--invert-match", "--word-regexp", "--line-regexp", "--count"),
            *("--line-number", "--only-matching", "--quiet", "--silent", "--extended-regexp"),
            *("--fixed-strings", "--basic-regexp", "--perl-regexp", "--null-data", "--text", "--byte-offset"),
        ),
        denied=_f(
            *("--file", "--exclude-from", "--dereference-recursive", "--directories", "--recursive"),
            *("-f", "-d", "-r", "-R", "-D", "--devices"),
        ),
    ),
    "jq": SafeBinProfile(
        max_positional=1,
        two_value_flags=_f("--arg", "--argjson", "--argstr"),
        bool_flags=_f(
            *("-n", "-r", "-j", "-c", "-s", "-e", "-S", "-M", "-a", "-R"),
            *("--null-input", "--raw-output", "--join-output", "--compact-output", "--slurp"),
            *("--exit-status", "--sort-keys", "--tab", "--ascii-output", "--raw-input", "--monochrome-output"),
        ),
        denied=_f(
            *("--argfile", "--rawfile", "--slurpfile", "--from-file", "--library-path", "-L", "-f"),
        ),
        denied_words=_f("env", "$ENV", "import", "include", "input_filename", "$__loc__", "getpath"),
    ),
}

_JQ_WORD = re.compile(r"\$?[A-Za-z_][A-Za-z0-9_]*")


def _looks_like_path(arg: str) -> bool:
    return "/" in arg or arg.startswith("~") or arg in (".", "..") or arg == "-"


def _long(profile: SafeBinProfile, arg: str) -> tuple[str, str | None]:
    """(canonical long flag, attached value) — exact match or an unambiguous abbreviation."""
    name, eq, value = arg.partition("=")
    known = profile.long_flags()
    if name in known:
        return name, value if eq else None
    matches = sorted(f for f in known if f.startswith(name))
    if not matches:
        raise ValueError(f"unknown option {name}")
    if len(matches) > 1:
        raise ValueError(f"ambiguous option {name} ({', '.join(matches)})")
    return matches[0], value if eq else None


def check_safe_bin(name: str, args: Sequence[str]) -> str | None:
    """None when ``name args...`` fits its safe-bin profile, else why not."""
    profile = PROFILES.get(name)
    if profile is None:
        return f"{name} has no safe-bin profile"
    positionals: list[str] = []
    i = 0
    try:
        while i < len(args):
            arg = args[i]
            i += 1
            if arg == "--":
                positionals.extend(args[i:])
                break
            if arg.startswith("--"):
                flag, attached = _long(profile, arg)
                if flag in profile.denied:
                    return f"{name}: option {flag} is not allowed"
                if flag in profile.bool_flags:
                    if attached is not None:
                        return f"{name}: option {flag} takes no value"
                    continue
                need = 2 if flag in profile.two_value_flags else 1
                need -= 1 if attached is not None else 0
                if i + need > len(args):
                    return f"{name}: option {flag} needs a value"
                i += need
                continue
            if arg.startswith("-") and arg != "-":
                j = 1
                while j < len(arg):
                    flag = f"-{arg[j]}"
                    j += 1
                    if flag in profile.denied:
                        return f"{name}: option {flag} is not allowed"
                    if flag in profile.value_flags:
                        if j == len(arg):
                            if i >= len(args):
                                return f"{name}: option {flag} needs a value"
                            i += 1
                        break  # the rest of the cluster is the value
                    if flag not in profile.bool_flags:
                        return f"{name}: unknown option {flag}"
                continue
            positionals.append(arg)
    except ValueError as exc:
        return f"{name}: {exc}"
    if len(positionals) > profile.max_positional:
        return f"{name}: file operands are not allowed for a safe bin (got {len(positionals)} positional)"
    if len(positionals) < profile.min_positional:
        return f"{name}: missing operand"
    for arg in positionals:
        if _looks_like_path(arg):
            return f"{name}: path-like operand {arg!r} is not allowed"
        if profile.denied_words and set(_JQ_WORD.findall(arg)) & profile.denied_words:
            return f"{name}: the filter uses a builtin that is not allowed"
    return None
