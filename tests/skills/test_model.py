"""The bundled skills' index (``skills/bundled/index.json``): current, the same parse as the YAML
gives, and what lets a gateway with only the bundled skills build its prompt without YAML."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from homarus.skills import model


def test_the_index_is_current_and_says_what_the_yaml_says() -> None:
    files = model.bundled_skill_files()
    assert len(files) >= 3
    assert model.BUNDLED_INDEX.read_text(encoding="utf-8") == model.render_bundled_index(files), (
        "src/homarus/skills/bundled/index.json is out of date: run `make skills-index`"
    )
    for path in files:
        raw = path.read_bytes()
        assert model.known_meta(raw) == model.parse_skill_text(raw.decode("utf-8"))
        assert model.read_skill_meta(path) == model.parse_skill_text(raw.decode("utf-8"))


def test_other_bytes_are_parsed_from_their_yaml(tmp_path: Path) -> None:
    raw = model.bundled_skill_files()[0].read_bytes()
    changed = raw.replace(b"description: ", b"description: Changed. ", 1)
    assert model.known_meta(changed) is None
    path = tmp_path / "SKILL.md"
    path.write_bytes(changed)
    meta, _ = model.read_skill_meta(path)
    assert meta.description.startswith("Changed. ")


def test_the_bundled_skills_are_read_without_yaml() -> None:
    code = (
        "import sys\n"
        "from homarus.skills.discovery import BUNDLED_DIR, SkillSource, discover\n"
        "found = discover([SkillSource('bundled', BUNDLED_DIR, 'bundled')])\n"
        "assert len(found.skills) >= 3 and not found.problems, found\n"
        "assert 'yaml' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
