"""Questions on the terminal: rich's prompts on a TTY, plain lines otherwise (a pipe, a script).

Every question has a default or a list of choices; a secret is read without echo and never
printed back. EOF or Ctrl-C raises :class:`Interrupted`, so a wizard stops before writing.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["Interrupted", "Prompter", "confirm", "unified_diff"]


class Interrupted(Exception):
    """The user stopped answering (EOF, Ctrl-C)."""


def unified_diff(old: str, new: str, old_name: str, new_name: str) -> str:
    """The diff of two config texts, every secret of either masked (a diff is printed, and a
    terminal's scrollback or a CI log is no place for a bot token)."""
    import difflib

    from homarus.config.redact import redact_text

    parsed = [_parsed(old), _parsed(new)]
    old, new = redact_text(old, parsed), redact_text(new, parsed)
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=old_name, tofile=new_name
    )
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    return text or "(no difference)\n"


def _parsed(text: str) -> object:
    import json5

    try:
        return json5.loads(text) if text.strip() else None
    except ValueError:
        return None


class Prompter:
    def __init__(self, *, tty: bool | None = None) -> None:
        self.tty = sys.stdin.isatty() and sys.stdout.isatty() if tty is None else tty

    def _line(self, question: str) -> str:
        sys.stdout.write(question)
        sys.stdout.flush()
        line = sys.stdin.readline()
        if not line:
            raise Interrupted
        return line.rstrip("\n")

    def ask(self, question: str, default: str | None = None) -> str:
        while True:
            try:
                if self.tty:
                    from rich.prompt import Prompt

                    answer = Prompt.ask(question, default=default) if default is not None else Prompt.ask(question)
                else:
                    suffix = f" [{default}]" if default else ""
                    answer = self._line(f"{question}{suffix}: ").strip() or (default or "")
            except (EOFError, KeyboardInterrupt):
                raise Interrupted from None
            if answer is not None and str(answer).strip():
                return str(answer).strip()
            if default is not None:
                return default

    def secret(self, question: str) -> str:
        try:
            if self.tty:
                import getpass

                return getpass.getpass(f"{question} (hidden): ").strip()
            return self._line(f"{question}: ").strip()
        except (EOFError, KeyboardInterrupt):
            raise Interrupted from None

    def choose(self, question: str, choices: Sequence[tuple[str, str]], default: str | None = None) -> str:
        """One of ``choices`` (value, label), by number or by value."""
        for n, (_, label) in enumerate(choices, 1):
            sys.stdout.write(f"  {n}) {label}\n")
        values = [v for v, _ in choices]
        while True:
            answer = self.ask(question, default)
            if answer.isdigit() and 1 <= int(answer) <= len(choices):
                return values[int(answer) - 1]
            if answer in values:
                return answer
            sys.stdout.write(f"  choose 1-{len(choices)} or one of: {', '.join(values)}\n")

    def yes(self, question: str, default: bool = False) -> bool:
        hint = "Y/n" if default else "y/N"
        while True:
            answer = self.ask(f"{question} ({hint})", "y" if default else "n").lower()
            if answer in ("y", "yes"):
                return True
            if answer in ("n", "no"):
                return False


def confirm(question: str) -> bool:
    """A yes/no question that says no when nobody can answer (no terminal)."""
    if not sys.stdin.isatty():
        return False
    try:
        return Prompter().yes(question)
    except Interrupted:
        return False
