"""Quote-aware POSIX ``sh`` scanner for exec allowlist analysis (security.md §4.2).

:func:`parse_command` splits one command line into chain parts (``&&``, ``||``, ``;``), each a
pipeline of segments (``|``), each a list of :class:`Word`. It never expands anything: the
analysis rebuilds the command with every token quoted, so the words are exactly what runs.

Refused (:class:`ShellSyntaxError`, the message names the token) outside single quotes:
redirections ``<`` ``>`` (including ``<<`` heredocs and ``>>``), process substitution
``<(``/``>(``, command substitution ``$(``/backticks (also inside double quotes), subshells and
grouping ``(`` ``)`` ``{`` ``}``, a single ``&`` (background) and ``|&``, raw newlines, control
characters, unterminated quotes or escapes and empty segments. ``#`` at the start of a word starts
a comment. Space and tab are the only separators (NBSP and other Unicode spaces are word text).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["ChainOp", "ParsedCommand", "ShellSyntaxError", "Word", "parse_command"]

ChainOp = Literal["&&", "||", ";"]
_BLANKS: Final = " \t"
_GROUPING_WORDS: Final = frozenset({"{", "}"})


class ShellSyntaxError(ValueError):
    """The command uses shell syntax the allowlist analysis cannot vouch for."""


@dataclass(frozen=True, slots=True)
class Word:
    """One shell word after quote removal."""

    text: str
    #: index in ``text`` of the first character that came from quoting or an escape (len if none)
    quoted_from: int

    def assignment(self) -> tuple[str, str] | None:
        """``(NAME, value)`` when this word is an unquoted ``NAME=value`` assignment."""
        eq = self.text.find("=")
        if eq <= 0 or eq >= self.quoted_from:
            return None
        name = self.text[:eq]
        if not (name[0].isascii() and (name[0].isalpha() or name[0] == "_")):
            return None
        if not all(c.isascii() and (c.isalnum() or c == "_") for c in name):
            return None
        return name, self.text[eq + 1 :]


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    """``parts[i]`` is a pipeline (list of segments); ``ops[i]`` joins ``parts[i]`` and ``parts[i+1]``."""

    parts: list[list[list[Word]]]
    ops: list[ChainOp]


def _unsupported(token: str) -> ShellSyntaxError:
    return ShellSyntaxError(f"unsupported shell token: {token}")


def _check_char(ch: str) -> None:
    if ch == "\x00":
        raise ShellSyntaxError("the command contains a NUL byte")
    if ch in "\n\r":
        raise _unsupported("newline")
    if (ord(ch) < 0x20 and ch != "\t") or ch == "\x7f":
        raise ShellSyntaxError(f"the command contains a control character ({ch!r})")


class _Scanner:
    def __init__(self, command: str) -> None:
        self.s = command
        self.i = 0
        self.parts: list[list[list[Word]]] = []
        self.ops: list[ChainOp] = []
        self.pipeline: list[list[Word]] = []
        self.segment: list[Word] = []
        self.word: list[str] = []
        self.quoted_from: int | None = None
        self.in_word = False

    # -- word building --------------------------------------------------------------------------
    def _add(self, text: str, *, quoted: bool) -> None:
        if quoted and self.quoted_from is None:
            self.quoted_from = sum(len(w) for w in self.word)
        self.word.append(text)
        self.in_word = True

    def _end_word(self) -> None:
        if not self.in_word:
            return
        text = "".join(self.word)
        if self.quoted_from is None and text in _GROUPING_WORDS:
            raise _unsupported(text)
        self.segment.append(Word(text, len(text) if self.quoted_from is None else self.quoted_from))
        self.word, self.quoted_from, self.in_word = [], None, False

    def _end_segment(self, what: str) -> None:
        self._end_word()
        if not self.segment:
            raise ShellSyntaxError(f"empty command segment before {what}")
        self.pipeline.append(self.segment)
        self.segment = []

    def _end_part(self, what: str) -> None:
        self._end_segment(what)
        self.parts.append(self.pipeline)
        self.pipeline = []

    # -- quoting --------------------------------------------------------------------------------
    def _single(self) -> None:
        end = self.s.find("'", self.i + 1)
        if end < 0:
            raise ShellSyntaxError("unterminated single quote")
        body = self.s[self.i + 1 : end]
        for ch in body:
            if ch not in "\n\r":  # a newline inside single quotes is a literal character
                _check_char(ch)
        self._add(body, quoted=True)
        self.i = end + 1

    def _double(self) -> None:
        s, n = self.s, len(self.s)
        i = self.i + 1
        self._add("", quoted=True)
        while i < n:
            ch = s[i]
            _check_char(ch)
            if ch == '"':
                self.i = i + 1
                return
            if ch == "`":
                raise _unsupported("` (command substitution, also inside double quotes)")
            if ch == "$" and i + 1 < n and s[i + 1] == "(":
                raise _unsupported("$() (command substitution, also inside double quotes)")
            if ch == "\\" and i + 1 < n:
                nxt = s[i + 1]
                if nxt in "\n\r":
                    raise ShellSyntaxError("backslash-newline inside double quotes")
                if nxt in '\\"$`':
                    self._add(nxt, quoted=True)
                    i += 2
                    continue
            self._add(ch, quoted=True)
            i += 1
        raise ShellSyntaxError("unterminated double quote")

    # -- main loop ------------------------------------------------------------------------------
    def run(self) -> ParsedCommand:
        s, n = self.s, len(self.s)
        while self.i < n:
            ch = s[self.i]
            nxt = s[self.i + 1] if self.i + 1 < n else ""
            _check_char(ch)
            if ch in _BLANKS:
                self._end_word()
                self.i += 1
            elif ch == "#" and not self.in_word:
                break  # a comment: sh ignores the rest of the line
            elif ch == "'":
                self._single()
            elif ch == '"':
                self._double()
            elif ch == "\\":
                if not nxt:
                    raise ShellSyntaxError("unterminated escape at the end of the command")
                _check_char(nxt)
                self._add(nxt, quoted=True)
                self.i += 2
            elif ch == "`":
                raise _unsupported("` (command substitution)")
            elif ch == "$" and nxt == "(":
                raise _unsupported("$() (command substitution)")
            elif ch in "<>":
                if nxt == "(":
                    raise _unsupported(f"{ch}( (process substitution)")
                raise _unsupported(f"{ch} (redirection)")
            elif ch in "()":
                raise _unsupported(ch)
            elif ch == "&":
                if nxt == "&":
                    self._end_part("&&")
                    self.ops.append("&&")
                    self.i += 2
                else:
                    raise _unsupported("& (background)" if nxt != ">" else "&> (redirection)")
            elif ch == "|":
                if nxt == "|":
                    self._end_part("||")
                    self.ops.append("||")
                    self.i += 2
                elif nxt == "&":
                    raise _unsupported("|&")
                else:
                    self._end_segment("|")
                    self.i += 1
            elif ch == ";":
                self._end_part(";")
                self.ops.append(";")
                self.i += 1
            else:
                self._add(ch, quoted=False)
                self.i += 1
        self._end_word()
        if self.segment or self.pipeline or self.parts:
            self._end_part("the end of the command")
        if not self.parts:
            raise ShellSyntaxError("empty command")
        return ParsedCommand(self.parts, self.ops)


def parse_command(command: str) -> ParsedCommand:
    """Split ``command`` into chain parts and pipeline segments, or raise :class:`ShellSyntaxError`."""
    return _Scanner(command).run()
