"""Where skills come from, and which one wins when two share a name.

Sources, highest precedence first: the agent workspace's ``skills/``, the state dir's
``skills/`` (installed with ``homarus skills install``), directories plugins declare in their
manifest (``skills``), ``skills.load.extraDirs``, and the bundled skills shipped in this package.
A source is a directory of skill directories (``<dir>/<name>/SKILL.md``); an extra or plugin
directory holding a ``SKILL.md`` itself is one skill.

Every problem becomes a :class:`Problem` row, never an exception: a broken skill must not take the
prompt (and so every run) down with it. Symlinks are followed only while they stay inside their
source (a skill dir) or skill (its SKILL.md); the workspace source must also stay inside the
workspace, because the model can create links there. Parsed front matter is cached by
(path, inode, size, mtime), and a source's whole scan by a fingerprint of one ``lstat`` per entry
(never when a link is involved), so a run's prompt build re-reads only what changed.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from homarus.skills.model import SKILL_FILE, Skill, SkillError, SkillMeta, SourceKind, read_skill_meta

__all__ = [
    "BUNDLED_DIR",
    "MAX_ENTRIES_PER_SOURCE",
    "PRECEDENCE",
    "Discovery",
    "Problem",
    "Shadowed",
    "SkillSource",
    "discover",
    "inside",
    "scan_source",
]

BUNDLED_DIR = Path(__file__).resolve().parent / "bundled"
PRECEDENCE: tuple[SourceKind, ...] = ("workspace", "installed", "plugin", "extra", "bundled")
#: a source with more entries than this is read only this far (reported)
MAX_ENTRIES_PER_SOURCE = 2000


@dataclass(frozen=True, slots=True)
class SkillSource:
    kind: SourceKind
    root: Path
    #: for messages: "workspace", a plugin id, "extraDirs[0]", ...
    origin: str
    #: the real directory the source itself must stay in (the workspace for workspace skills)
    confine: Path | None = None


@dataclass(frozen=True, slots=True)
class Problem:
    level: Literal["error", "warning"]
    source: SourceKind | None
    path: str
    message: str
    skill: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"level": self.level, "source": self.source, "path": self.path, "message": self.message}
        if self.skill:
            out["skill"] = self.skill
        return out


@dataclass(frozen=True, slots=True)
class Shadowed:
    """A skill hidden by one of the same name from a higher-precedence source."""

    skill: Skill
    by: Skill


@dataclass(slots=True)
class Discovery:
    #: name → the winning skill, in precedence-then-name order
    skills: dict[str, Skill] = field(default_factory=dict)
    shadowed: list[Shadowed] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


@functools.lru_cache(maxsize=4096)
def _parse_cached(path: str, ino: int, size: int, mtime_ns: int) -> tuple[SkillMeta, int] | str:
    try:
        return read_skill_meta(Path(path))
    except SkillError as exc:
        return exc.message


def _load_one(src: SkillSource, skill_dir: Path, real_dir: str, problems: list[Problem]) -> Skill | None:
    md = skill_dir / SKILL_FILE
    try:
        st = md.lstat()
    except FileNotFoundError:
        return None  # a directory without SKILL.md is not a skill (docs, assets): nothing to report
    except OSError as exc:
        problems.append(Problem("error", src.kind, str(md), f"cannot read: {exc.strerror or exc}"))
        return None
    real_md = os.path.realpath(md)
    if stat.S_ISLNK(st.st_mode) and not inside(real_md, real_dir):
        problems.append(
            Problem("error", src.kind, str(md), f"{SKILL_FILE} is a symlink leaving its skill dir; ignored")
        )
        return None
    try:
        rst = os.stat(real_md)
    except OSError as exc:
        problems.append(Problem("error", src.kind, str(md), f"cannot read: {exc.strerror or exc}"))
        return None
    if not stat.S_ISREG(rst.st_mode):
        problems.append(Problem("error", src.kind, str(md), f"{SKILL_FILE} is not a regular file; ignored"))
        return None
    parsed = _parse_cached(real_md, rst.st_ino, rst.st_size, rst.st_mtime_ns)
    if isinstance(parsed, str):
        problems.append(Problem("error", src.kind, str(md), parsed, skill=skill_dir.name))
        return None
    meta, body = parsed
    if meta.name != skill_dir.name and skill_dir.resolve() != Path(src.root).resolve():
        problems.append(
            Problem(
                "warning",
                src.kind,
                str(md),
                f"front matter name {meta.name!r} differs from the directory name {skill_dir.name!r}",
                skill=meta.name,
            )
        )
    return Skill(meta, Path(real_md), Path(real_dir), src.kind, src.origin, body)


def scan_source(src: SkillSource) -> tuple[list[Skill], list[Problem]]:
    """The skills of one source, in name order, with what was wrong on the way."""
    problems: list[Problem] = []
    root = src.root
    if not root.is_dir():
        if src.kind in ("extra", "plugin") and not root.exists():
            problems.append(Problem("warning", src.kind, str(root), "skill directory does not exist"))
        return [], problems
    real_root = os.path.realpath(root)
    if src.confine is not None and not inside(real_root, os.path.realpath(src.confine)):
        problems.append(Problem("error", src.kind, str(root), f"resolves outside {src.confine}; ignored"))
        return [], problems
    if (root / SKILL_FILE).exists():  # the directory is itself one skill
        one = _load_one(src, root, real_root, problems)
        return ([one] if one else []), problems
    skills: list[Skill] = []
    seen: dict[str, Skill] = {}
    try:
        names = sorted(e.name for e in os.scandir(root))
    except OSError as exc:
        problems.append(Problem("error", src.kind, str(root), f"cannot list: {exc.strerror or exc}"))
        return [], problems
    if len(names) > MAX_ENTRIES_PER_SOURCE:
        problems.append(
            Problem("warning", src.kind, str(root), f"more than {MAX_ENTRIES_PER_SOURCE} entries; the rest ignored")
        )
        names = names[:MAX_ENTRIES_PER_SOURCE]
    for name in names:
        if name.startswith("."):
            continue  # install staging dirs, editor files
        child = root / name
        real = os.path.realpath(child)
        if child.is_symlink() and not inside(real, real_root):
            if os.path.isdir(real):
                problems.append(Problem("error", src.kind, str(child), "symlink leaving the skills dir; ignored"))
            continue
        if not os.path.isdir(real):
            continue
        skill = _load_one(src, child, real, problems)
        if skill is None:
            continue
        if skill.name in seen:
            problems.append(
                Problem(
                    "warning",
                    src.kind,
                    str(child),
                    f"duplicate skill name {skill.name!r} in the same source; {seen[skill.name].base_dir} kept",
                    skill=skill.name,
                )
            )
            continue
        seen[skill.name] = skill
        skills.append(skill)
    return skills, problems


#: source -> (fingerprint, its scan): every run builds the skills prompt; an unchanged source is
#: not walked again (a scan resolves each entry's real path, a dozen syscalls per skill)
_SCANS: dict[SkillSource, tuple[tuple[Any, ...], tuple[list[Skill], list[Problem]]]] = {}
_SCANS_MAX = 256


def _fingerprint(root: Path) -> tuple[Any, ...] | None:
    """What a scan of ``root`` depends on, from one ``lstat`` per entry: the root, each entry and
    each entry's SKILL.md (inode, mode, times, size). None (scan every time) when a link is
    involved: its target's changes would not show here."""

    def mark(path: Path) -> tuple[Any, ...] | None:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return ()
        if stat.S_ISLNK(st.st_mode):
            raise LookupError
        return (st.st_ino, st.st_mode, st.st_mtime_ns, st.st_ctime_ns, st.st_size)

    try:
        top = mark(root)
        if not top or not stat.S_ISDIR(top[1]):
            return ("absent", top)
        rows: list[Any] = [top, mark(root / SKILL_FILE)]
        with os.scandir(root) as entries:
            names = sorted(e.name for e in entries)
        if len(names) > MAX_ENTRIES_PER_SOURCE:
            return None
        for name in names:
            child = mark(root / name)
            rows.append((name, child, mark(root / name / SKILL_FILE) if child and stat.S_ISDIR(child[1]) else None))
        return tuple(rows)
    except (LookupError, OSError):
        return None


def _scan_cached(src: SkillSource) -> tuple[list[Skill], list[Problem]]:
    if src.kind == "bundled" and src.root == BUNDLED_DIR:
        # files of the installed package: they change with an upgrade, which restarts the process
        cached = _SCANS.get(src)
        if cached is not None:
            return list(cached[1][0]), list(cached[1][1])
    mark = _fingerprint(src.root)
    # the real paths matter only where there is something to scan (an absent root scans to nothing)
    if mark is not None and src.kind != "bundled" and mark[0] != "absent":
        # where the source and its confinement really are: a link above them may be switched
        mark = (os.path.realpath(src.root), os.path.realpath(src.confine) if src.confine else None, mark)
    if mark is None:
        return scan_source(src)
    cached = _SCANS.get(src)
    if cached is not None and cached[0] == mark:
        return list(cached[1][0]), list(cached[1][1])
    found = scan_source(src)
    if len(_SCANS) >= _SCANS_MAX:
        _SCANS.clear()
    _SCANS[src] = (mark, (list(found[0]), list(found[1])))
    return found


def discover(sources: Iterable[SkillSource]) -> Discovery:
    """Scan ``sources`` (already in precedence order) and keep the first skill of each name."""
    out = Discovery()
    for src in sources:
        found, problems = _scan_cached(src)
        out.problems.extend(problems)
        for skill in found:
            winner = out.skills.get(skill.name)
            if winner is None:
                out.skills[skill.name] = skill
                continue
            out.shadowed.append(Shadowed(skill, winner))
            out.problems.append(
                Problem(
                    "warning",
                    skill.source,
                    str(skill.file),
                    f"name clash: {skill.name!r} from {skill.source} ({skill.origin}) is shadowed by "
                    f"{winner.source} ({winner.origin}) at {winner.file}",
                    skill=skill.name,
                )
            )
    return out
