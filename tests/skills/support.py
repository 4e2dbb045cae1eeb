"""Helpers to lay out skill directories for the skills tests."""

from __future__ import annotations

from pathlib import Path

from homarus.config.schema import HomarusConfig


def write_skill(parent: Path, name: str, description: str = "Does a thing.", extra: str = "", body: str = "") -> Path:
    d = parent / name
    d.mkdir(parents=True, exist_ok=True)
    body = body or f"# {name}\nStep one."
    text = f"---\nname: {name}\ndescription: {description}\n{extra}---\n\n{body}\n"
    (d / "SKILL.md").write_text(text, encoding="utf-8")
    return d


def config(**skills: object) -> HomarusConfig:
    return HomarusConfig.model_validate({"skills": skills} if skills else {})
