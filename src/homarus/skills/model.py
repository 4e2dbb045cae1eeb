"""A skill's ``SKILL.md``: YAML front matter between ``---`` lines, then Markdown instructions.

The front matter is parsed with a safe loader that also refuses aliases (``*ref``): a few hundred
bytes of nested aliases expand into billions of nodes for whoever walks the result. The file and
its front matter are size-bounded before parsing, and the fields are validated with pydantic;
any problem is a :class:`SkillError` with a message fit for ``skills status``, never a crash.
Unknown front matter keys are kept out of the model (they are allowed, as other ecosystems add
their own), so nothing unvalidated travels further.
"""

from __future__ import annotations

import functools
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from homarus.config.skills import SKILL_NAME_PATTERN
from homarus.errors import InvalidRequest
from homarus.patterns import Pattern

__all__ = [
    "BUNDLED_INDEX",
    "MAX_DESCRIPTION_CHARS",
    "MAX_FRONT_MATTER_BYTES",
    "MAX_SKILL_MD_BYTES",
    "SKILL_FILE",
    "Skill",
    "SkillError",
    "SkillMeta",
    "SkillRequires",
    "SourceKind",
    "bundled_skill_files",
    "known_meta",
    "parse_skill_text",
    "read_skill_meta",
    "render_bundled_index",
    "write_bundled_index",
]

SKILL_FILE = "SKILL.md"
MAX_SKILL_MD_BYTES = 256 * 1024
MAX_FRONT_MATTER_BYTES = 16 * 1024
MAX_DESCRIPTION_CHARS = 1024
_BIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_CONFIG_KEY = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+){0,15}$")
_OS_ALIASES = {"linux": "linux", "darwin": "darwin", "macos": "darwin", "win32": "win32", "windows": "win32"}

SourceKind = Literal["workspace", "installed", "plugin", "extra", "bundled"]


class SkillError(InvalidRequest):
    """A SKILL.md that cannot be used: unreadable, no front matter, invalid fields."""


@functools.cache
def _loader() -> Any:
    """``yaml.SafeLoader`` without aliases (anchors alone are harmless and ignored); built on the
    first front matter read: the bundled skills are known without YAML (``bundled/index.json``)."""
    import yaml

    class NoAliasLoader(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                raise yaml.YAMLError("YAML aliases (*name) are not allowed in skill front matter")
            return super().compose_node(parent, index)

    return NoAliasLoader


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", alias_generator=to_camel, populate_by_name=True, frozen=True)


class SkillRequires(_Model):
    """What must be present for the skill to be offered; any gap hides it (and status says which)."""

    bins: tuple[str, ...] = Field(default=(), max_length=32)
    env: tuple[str, ...] = Field(default=(), max_length=32)
    config: tuple[str, ...] = Field(default=(), max_length=32)
    os: tuple[str, ...] = Field(default=(), max_length=8)

    @field_validator("bins")
    @classmethod
    def _bins(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for b in v:
            if not _BIN.fullmatch(b):  # a bare program name, never a path or a command line
                raise ValueError(f"not a program name: {b[:80]!r}")
        return v

    @field_validator("env")
    @classmethod
    def _env(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for e in v:
            if not _ENV.fullmatch(e):
                raise ValueError(f"not an environment variable name: {e[:80]!r}")
        return v

    @field_validator("config")
    @classmethod
    def _config(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for c in v:
            if not _CONFIG_KEY.fullmatch(c):
                raise ValueError(f"not a dotted config key: {c[:80]!r}")
        return v

    @field_validator("os")
    @classmethod
    def _os(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        out = []
        for o in v:
            if o.lower() not in _OS_ALIASES:
                raise ValueError(f"unknown OS {o[:40]!r} (use linux, darwin/macos or win32/windows)")
            out.append(_OS_ALIASES[o.lower()])
        return tuple(out)


class SkillMeta(_Model):
    name: Annotated[str, Pattern(SKILL_NAME_PATTERN)]
    description: str = Field(min_length=1, max_length=MAX_DESCRIPTION_CHARS)
    requires: SkillRequires = Field(default_factory=SkillRequires)
    homepage: Annotated[str, Field(max_length=2048), Pattern(r"^https?://\S+$")] | None = None
    version: str | None = Field(default=None, max_length=64)
    emoji: str | None = Field(default=None, max_length=16)

    @field_validator("description")
    @classmethod
    def _one_line(cls, v: str) -> str:
        text = " ".join(v.split())  # the prompt shows it on one line
        if not text:
            raise ValueError("description is blank")
        return text


@dataclass(frozen=True, slots=True)
class Skill:
    meta: SkillMeta
    #: real path of the SKILL.md
    file: Path
    #: real path of the skill directory (the only place ``read`` may open for this skill)
    base_dir: Path
    source: SourceKind
    #: where it came from, for messages (a plugin id, a config entry, a directory)
    origin: str
    #: characters of instructions after the front matter
    body_chars: int

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def description(self) -> str:
        return self.meta.description


def _split(text: str) -> tuple[str, str]:
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise SkillError("SKILL.md must start with YAML front matter between '---' lines")
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            return "\n".join(lines[1:i]), "\n".join(lines[i + 1 :])
    raise SkillError("SKILL.md front matter is not closed by a '---' line")


def _problems(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "(front matter)"
        msg = "required" if err["type"] == "missing" else err["msg"]
        parts.append(f"{loc}: {msg}")
    return "; ".join(parts)


def parse_skill_text(text: str) -> tuple[SkillMeta, int]:
    """(validated front matter, characters of the body); SkillError says what is wrong."""
    front, body = _split(text)
    if len(front.encode("utf-8")) > MAX_FRONT_MATTER_BYTES:
        raise SkillError(f"front matter larger than {MAX_FRONT_MATTER_BYTES} bytes")
    import yaml

    try:
        data = yaml.load(front, Loader=_loader())  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 2})" if where is not None else ""
        raise SkillError(f"front matter is not valid YAML{line}: {getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(data, dict):
        raise SkillError("front matter must be a YAML mapping (name: ..., description: ...)")
    try:
        meta = SkillMeta.model_validate(data)
    except ValidationError as exc:
        raise SkillError(f"invalid front matter: {_problems(exc)}") from None
    return meta, len(body.strip())


def read_skill_meta(path: Path) -> tuple[SkillMeta, int]:
    """Read a SKILL.md (regular file, bounded, UTF-8) and parse it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise SkillError(f"cannot open {SKILL_FILE}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise SkillError(f"{SKILL_FILE} is not a regular file")
        if st.st_size > MAX_SKILL_MD_BYTES:
            raise SkillError(f"{SKILL_FILE} is larger than {MAX_SKILL_MD_BYTES} bytes ({st.st_size})")
        raw = fh.read(MAX_SKILL_MD_BYTES + 1)
    known = known_meta(raw)
    if known is not None:
        return known
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SkillError(f"{SKILL_FILE} is not UTF-8 text") from None
    return parse_skill_text(text)


#: the bundled skills' parsed front matter by the SHA-256 of their SKILL.md (``make skills-index``)
BUNDLED_INDEX = Path(__file__).resolve().parent / "bundled" / "index.json"


@functools.cache
def _bundled_index() -> dict[str, Any]:
    import json

    try:
        data = json.loads(BUNDLED_INDEX.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _digest(raw: bytes) -> str:
    import hashlib

    return hashlib.sha256(raw).hexdigest()


def known_meta(raw: bytes) -> tuple[SkillMeta, int] | None:
    """The parse of a SKILL.md whose exact bytes are a bundled skill's, from the index (the same
    bytes parse the same way; the index is package data, checked by a test); else None."""
    found = _bundled_index().get(_digest(raw))
    if not isinstance(found, dict):
        return None
    return SkillMeta.model_validate(found["meta"]), int(found["body"])


def bundled_skill_files() -> list[Path]:
    return sorted(BUNDLED_INDEX.parent.glob(f"*/{SKILL_FILE}"))


def write_bundled_index() -> int:
    """``make skills-index``: write the index of the bundled skills; returns how many."""
    files = bundled_skill_files()
    BUNDLED_INDEX.write_text(render_bundled_index(files), encoding="utf-8")
    return len(files)


def render_bundled_index(files: list[Path]) -> str:
    """The index's text for the SKILL.md ``files`` (parsed from their YAML)."""
    import json

    out = {}
    for path in files:
        raw = path.read_bytes()
        meta, body = parse_skill_text(raw.decode("utf-8"))
        out[_digest(raw)] = {
            "file": path.parent.name,
            "meta": meta.model_dump(mode="json", exclude_defaults=True),
            "body": body,
        }
    return json.dumps(out, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
