"""Install and remove skills in ``$STATE/skills/<name>``; nothing from a bundle is ever executed.

Pipeline: stage (copy or extract into ``$STATE/skills/.staging-*``, see :mod:`.archive`) → find
and validate ``SKILL.md`` → static scan (:mod:`.scan`) → the ``before_install`` plugin gate
(fail-closed: a failing hook blocks) → refuse on critical findings unless forced → content hash
→ move into place. Staging sits in the same directory as the target so the final step is a
``rename``: a reader sees the old skill or the new one, never a half-copied one (a replaced
skill is swapped out first, then removed). The staging directory is always removed. Installs
of the same name are serialised with a file lock so two processes cannot interleave the swap.

``.homarus-install.json`` in the installed directory records the source, the content hash and
the findings; ``skills info`` shows it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from homarus.errors import Forbidden, InvalidRequest, NotFound
from homarus.locking import file_lock
from homarus.plugins import events as ev
from homarus.plugins.runner import HookRunner
from homarus.skills.archive import ArchiveLimits, BundleRefused, Member, stage_bundle
from homarus.skills.catalog import installed_dir
from homarus.skills.model import SKILL_FILE, SkillError, SkillMeta, read_skill_meta
from homarus.skills.scan import Finding, has_critical, scan_bundle

__all__ = ["INSTALL_RECORD", "InstallResult", "content_hash", "install_skill", "read_record", "remove_skill"]

INSTALL_RECORD = ".homarus-install.json"


@dataclass(slots=True)
class InstallResult:
    ok: bool
    name: str | None
    path: Path | None = None
    content_hash: str | None = None
    findings: list[Finding] = field(default_factory=list)
    #: why it was refused (None when installed)
    refused: str | None = None
    replaced: bool = False
    unchanged: bool = False
    blocked_by: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "name": self.name,
            "path": str(self.path) if self.path else None,
            "contentHash": self.content_hash,
            "findings": [f.to_json() for f in self.findings],
            "refused": self.refused,
            "replaced": self.replaced,
            "unchanged": self.unchanged,
            "blockedBy": self.blocked_by,
        }


def content_hash(root: Path, members: list[Member]) -> str:
    """sha256 over (path, sha256 of content) of every file, in path order."""
    outer = hashlib.sha256()
    for m in sorted(members, key=lambda m: m.path):
        inner = hashlib.sha256()
        with open(root / m.path, "rb") as fh:
            while chunk := fh.read(1 << 16):
                inner.update(chunk)
        outer.update(m.path.encode("utf-8") + b"\0" + inner.hexdigest().encode("ascii") + b"\n")
    return "sha256:" + outer.hexdigest()


def _bundle_root(staged: Path, members: list[Member]) -> tuple[Path, list[Member]]:
    """The directory holding SKILL.md: the bundle root, or its single top-level folder."""
    if (staged / SKILL_FILE).is_file():
        return staged, members
    tops = {m.path.split("/", 1)[0] for m in members}
    if len(tops) == 1:
        top = next(iter(tops))
        if (staged / top / SKILL_FILE).is_file():
            inner = [Member(m.path.split("/", 1)[1], m.size, m.executable) for m in members if "/" in m.path]
            return staged / top, inner
    raise BundleRefused(f"no {SKILL_FILE} at the top of the bundle (or in its single top-level folder)")


def read_record(skill_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((skill_dir / INSTALL_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


async def _gate(hooks: HookRunner | None, name: str, root: Path) -> tuple[bool, str | None, list[Finding], str | None]:
    if hooks is None or not hooks.has("before_install"):
        return False, None, [], None
    outcome = await hooks.modify("before_install", ev.BeforeInstallEvent("skill", name, str(root)))
    result: ev.BeforeInstallResult = outcome.result
    findings = []
    for f in result.findings[:100]:
        sev = f.get("severity") if isinstance(f, dict) else None
        findings.append(
            Finding(
                sev if sev in ("critical", "warn", "info") else "warn",
                str(f.get("code", "hook")) if isinstance(f, dict) else "hook",
                str(f.get("file", SKILL_FILE)) if isinstance(f, dict) else SKILL_FILE,
                str(f.get("message", f)) if isinstance(f, dict) else str(f),
            )
        )
    return bool(result.block), result.reason, findings, outcome.decided_by


@dataclass(slots=True)
class _Staged:
    root: Path
    members: list[Member]
    name: str
    findings: list[Finding]


def _prepare(source: Path, stage: Path, limits: ArchiveLimits | None) -> _Staged | InstallResult:
    bundle = stage / "bundle"
    bundle.mkdir()
    try:
        members = stage_bundle(source, bundle, limits)
        root, members = _bundle_root(bundle, members)
        meta: SkillMeta = read_skill_meta(root / SKILL_FILE)[0]
    except (BundleRefused, SkillError) as exc:
        return InstallResult(False, None, refused=exc.message)
    except OSError as exc:
        return InstallResult(False, None, refused=f"cannot stage the bundle: {exc.strerror or exc}")
    return _Staged(root, members, meta.name, scan_bundle(root, members))


def _commit(staged: _Staged, source: Path, base: Path, stage: Path, force: bool) -> InstallResult:
    name, root, findings = staged.name, staged.root, staged.findings
    digest = content_hash(root, staged.members)
    dest = base / name
    with file_lock(base / f".{name}"):
        old = read_record(dest) if dest.exists() else None
        if old is not None and old.get("contentHash") == digest:
            return InstallResult(True, name, dest, digest, findings, unchanged=True)
        if dest.exists() and old is None and not force:
            why = f"{dest} exists and was not installed by homarus skills install (use --force to replace it)"
            return InstallResult(False, name, findings=findings, refused=why)
        record = {
            "name": name,
            "contentHash": digest,
            "source": str(source),
            "installedAtMs": int(time.time() * 1000),
            "forced": force and has_critical(findings),
            "findings": [f.to_json() for f in findings],
        }
        (root / INSTALL_RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        os.chmod(root, 0o755)  # noqa: S103 - readable like any installed package; nothing in it is executable
        replaced = dest.exists()
        if replaced:
            os.rename(dest, stage / "old")  # swapped out first; removed with the staging dir
        os.rename(root, dest)
    return InstallResult(True, name, dest, digest, findings, replaced=replaced)


async def install_skill(
    source: Path,
    state_dir: Path,
    *,
    hooks: HookRunner | None = None,
    force: bool = False,
    limits: ArchiveLimits | None = None,
) -> InstallResult:
    """Install ``source`` (directory, .zip, .tar.gz). Refusals come back as ``ok=False``, not raised."""
    base = installed_dir(state_dir)
    stage = await asyncio.to_thread(_new_stage, base)
    try:
        staged = await asyncio.to_thread(_prepare, source, stage, limits)
        if isinstance(staged, InstallResult):
            return staged
        blocked, reason, hook_findings, by = await _gate(hooks, staged.name, staged.root)
        staged.findings.extend(hook_findings)
        if blocked:
            why = f"blocked by the before_install hook{f' ({by})' if by else ''}: {reason or 'no reason given'}"
            return InstallResult(False, staged.name, findings=staged.findings, refused=why, blocked_by=by)
        if has_critical(staged.findings) and not force:
            n = sum(f.severity == "critical" for f in staged.findings)
            why = f"{n} critical findings (use --force to install anyway)"
            return InstallResult(False, staged.name, findings=staged.findings, refused=why)
        return await asyncio.to_thread(_commit, staged, source, base, stage, force)
    finally:
        await asyncio.to_thread(shutil.rmtree, stage, True)


def _new_stage(base: Path) -> Path:
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    return Path(tempfile.mkdtemp(prefix=".staging-", dir=base))


def remove_skill(state_dir: Path, name: str) -> Path:
    """Remove an installed skill (only from the state dir; workspace/bundled skills are not touched)."""
    base = installed_dir(state_dir)
    dest = base / name
    if "/" in name or name.startswith(".") or not name:
        raise InvalidRequest(f"not a skill name: {name!r}")
    if dest.is_symlink():
        raise Forbidden(f"{dest} is a symlink; remove it by hand")
    if not dest.is_dir():
        raise NotFound(f"no installed skill named {name!r} in {base}")
    with file_lock(base / f".{name}"):
        trash = Path(tempfile.mkdtemp(prefix=".removing-", dir=base))
        os.rename(dest, trash / name)
        shutil.rmtree(trash, ignore_errors=True)
    return dest
