"""The JSON shapes of ``skills.status`` and ``skills.detail``, shared by the gateway and the CLI.

Values of env vars given in config are never included (only which names are set); the SKILL.md
text in ``detail`` is bounded, and its file list is walked without following symlinks.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from homarus.config.schema import HomarusConfig
from homarus.skills.catalog import SkillsView
from homarus.skills.install import read_record
from homarus.skills.model import MAX_SKILL_MD_BYTES

__all__ = ["MAX_DETAIL_FILES", "detail_json", "status_json"]

MAX_DETAIL_FILES = 200


def status_json(view: SkillsView, cfg: HomarusConfig, *, agent_id: str | None) -> dict[str, Any]:
    prompt = view.prompt(cfg)
    return {
        "agentId": agent_id,
        "workspaceDir": str(view.workspace),
        "managedSkillsDir": str(view.installed),
        "skills": [s.to_json() for s in view.states],
        "diagnostics": [p.to_json() for p in view.problems],
        "prompt": prompt.to_json(),
    }


def _files(base: Path) -> tuple[list[dict[str, Any]], bool]:
    out: list[dict[str, Any]] = []
    stack = [base]
    while stack and len(out) <= MAX_DETAIL_FILES:
        here = stack.pop()
        try:
            entries = sorted(os.scandir(here), key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            st = e.stat(follow_symlinks=False)
            rel = os.path.relpath(e.path, base)
            if e.is_dir(follow_symlinks=False):
                stack.append(Path(e.path))
            else:
                out.append({"path": rel, "bytes": st.st_size, "symlink": e.is_symlink()})
    return out[:MAX_DETAIL_FILES], len(out) > MAX_DETAIL_FILES


def detail_json(view: SkillsView, name: str) -> dict[str, Any] | None:
    state = view.get(name)
    if state is None:
        return None
    skill = state.skill
    try:
        with open(skill.file, "rb") as fh:
            content = fh.read(MAX_SKILL_MD_BYTES).decode("utf-8", "replace")
    except OSError as exc:
        content = f"[cannot read: {exc.strerror or exc}]"
    files, more = _files(skill.base_dir)
    out = state.to_json()
    out.update({"content": content, "files": files, "filesTruncated": more})
    record = read_record(skill.base_dir) if skill.source == "installed" else None
    if record is not None:
        out["install"] = {k: record.get(k) for k in ("contentHash", "source", "installedAtMs", "forced", "findings")}
    return out
