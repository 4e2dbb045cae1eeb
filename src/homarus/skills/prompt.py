"""The ``## Skills`` section of the system prompt and what the ``read`` tool may open because of it.

Skills are listed by name (sorted, so the prompt stays byte-stable and cacheable), one-line
description and the real path of their ``SKILL.md``. The block is bounded twice: at most
``maxSkillsInPrompt`` entries and ``maxPromptChars`` characters; what does not fit is counted in a
closing note (the model learns skills were left out) and in :attr:`SkillsPrompt.omitted` (the
operator learns which). ``read_roots`` holds the real directories of the listed skills only: the
file tools let ``read`` open an absolute path inside one of them, and nothing else outside the
workspace, so a skill that is not offered cannot be read through this door either.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from html import escape as _html_escape
from typing import Any

from homarus.skills.model import Skill

__all__ = ["SkillsPrompt", "render_skills_prompt"]


def escape(text: str) -> str:
    """``&``, ``<`` and ``>`` as XML entities (what ``xml.sax.saxutils.escape`` does, without
    importing the XML package on the first turn: 3 ms)."""
    return _html_escape(text, quote=False)


_HEAD = (
    "## Skills\n"
    "Before a task one of these skills covers, read its SKILL.md (the location exactly as shown) and follow "
    "it; files it mentions sit next to it. Read only the skill you need. Skills never override Safety: ask "
    "before running a command a skill suggests that installs software or needs elevated rights.\n"
    "<available_skills>"
)
_TAIL = "</available_skills>"


@dataclass(frozen=True, slots=True)
class SkillsPrompt:
    #: the section text, or None when no skill is offered
    text: str | None
    included: tuple[str, ...] = ()
    #: skills offered but left out by the limits
    omitted: tuple[str, ...] = ()
    #: real directories of the included skills (what ``read`` may open outside the workspace)
    read_roots: frozenset[str] = field(default_factory=frozenset)

    @property
    def truncated(self) -> bool:
        return bool(self.omitted)

    def to_json(self) -> dict[str, Any]:
        return {
            "included": list(self.included),
            "omitted": list(self.omitted),
            "truncated": self.truncated,
            "chars": len(self.text or ""),
        }


def _entry(skill: Skill) -> str:
    return (
        f"<skill>\n<name>{escape(skill.name)}</name>\n"
        f"<description>{escape(skill.description)}</description>\n"
        f"<location>{escape(str(skill.file))}</location>\n</skill>"
    )


def render_skills_prompt(skills: Iterable[Skill], *, max_count: int, max_chars: int) -> SkillsPrompt:
    ordered = sorted(skills, key=lambda s: s.name)
    if not ordered or max_count <= 0:
        return SkillsPrompt(None, omitted=tuple(s.name for s in ordered))
    # room for the note about left-out skills is kept from the start, so adding it never overflows
    note_room = 120
    used = len(_HEAD) + len(_TAIL) + 2 + note_room
    parts: list[str] = []
    included: list[Skill] = []
    for skill in ordered:
        if len(included) >= max_count:
            break
        entry = _entry(skill)
        if used + len(entry) + 1 > max_chars:
            break
        parts.append(entry)
        included.append(skill)
        used += len(entry) + 1
    omitted = tuple(s.name for s in ordered[len(included) :])
    if not included:
        return SkillsPrompt(None, omitted=omitted)
    text = "\n".join([_HEAD, *parts, _TAIL])
    if omitted:
        text += f"\n[{len(omitted)} more skills are installed but not listed (prompt budget: skills.limits).]"
    return SkillsPrompt(
        text,
        included=tuple(s.name for s in included),
        omitted=omitted,
        read_roots=frozenset(str(s.base_dir) for s in included),
    )
