"""The <available_skills> block: bounded, stable, escaped, absent for sub-agents."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from homarus.agents import prompt as agent_prompt
from homarus.agents import setup
from homarus.sessions.keys import parse_session_key
from homarus.skills.catalog import load_view
from homarus.skills.model import Skill
from homarus.skills.prompt import render_skills_prompt
from tests.skills.support import config, write_skill


def _skills(tmp_path: Path, n: int) -> list[Skill]:
    for i in range(n):
        write_skill(tmp_path / "ws" / "skills", f"s{i:03d}", f"Skill number {i} <with> & markup.")
    view = load_view(config(allowBundled=[]), workspace=tmp_path / "ws", state_dir=tmp_path / "st", env={})
    return list(view.eligible())


def test_block_lists_name_description_location_escaped(tmp_path: Path) -> None:
    skills = _skills(tmp_path, 2)
    out = render_skills_prompt(skills, max_count=10, max_chars=10_000)
    assert out.text is not None
    assert "<available_skills>" in out.text and "</available_skills>" in out.text
    assert "<name>s000</name>" in out.text
    assert "Skill number 0 &lt;with&gt; &amp; markup." in out.text
    loc = tmp_path.resolve() / "ws" / "skills" / "s001" / "SKILL.md"
    assert f"<location>{loc}</location>" in out.text
    assert out.read_roots == {str(loc.parent), str(loc.parent.parent / "s000")}
    assert not out.truncated


def test_count_and_char_budgets_truncate_and_report(tmp_path: Path) -> None:
    skills = _skills(tmp_path, 30)
    by_count = render_skills_prompt(skills, max_count=5, max_chars=1_000_000)
    assert by_count.included == tuple(f"s{i:03d}" for i in range(5))
    assert len(by_count.omitted) == 25 and by_count.truncated
    assert by_count.text is not None and "[25 more skills are installed but not listed" in by_count.text
    assert len(by_count.read_roots) == 5
    by_chars = render_skills_prompt(skills, max_count=1000, max_chars=2_000)
    assert by_chars.text is not None and len(by_chars.text) <= 2_000
    assert 0 < len(by_chars.included) < 30 and by_chars.truncated
    none = render_skills_prompt(skills, max_count=1000, max_chars=100)
    assert none.text is None and len(none.omitted) == 30 and not none.read_roots


def test_skills_section_in_full_prompt_not_in_minimal(tmp_path: Path) -> None:
    write_skill(tmp_path / "ws" / "skills", "mine")
    cfg = config()
    main = parse_session_key("agent:main:main")
    sp = setup.skills_prompt(cfg, main, tmp_path / "ws", tmp_path / "st", None, {"read"})
    assert sp is not None and sp.text is not None and "mine" in sp.included
    full = setup.system_prompt(
        cfg, main, tmp_path / "ws", [], "x/y", channel=None, extra=None, thinking=None, files=[], skills=sp.text
    )
    assert "## Skills" in full and full.index("## Safety") < full.index("## Skills") < full.index("## Workspace")
    inputs = agent_prompt.PromptInputs(
        agent_name="a",
        tools=[],
        workspace=tmp_path,
        bootstrap=[],
        timezone=None,
        model_ref="x/y",
        channel=None,
        host="h",
        os_name="Linux",
        skills=sp.text,
    )
    minimal = agent_prompt.build_system_prompt(dataclasses.replace(inputs, mode="minimal"))
    assert "<available_skills>" not in minimal
    sub = parse_session_key("agent:main:subagent:abc")
    assert setup.skills_prompt(cfg, sub, tmp_path / "ws", tmp_path / "st", None, {"read"}) is None
    assert setup.skills_prompt(cfg, main, tmp_path / "ws", tmp_path / "st", None, {"write"}) is None


def test_a_broken_skill_never_breaks_the_prompt(tmp_path: Path) -> None:
    d = tmp_path / "ws" / "skills" / "broken"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_bytes(b"---\nname: broken\ndescription: \xff\xfe\n---\n")
    write_skill(tmp_path / "ws" / "skills", "ok")
    sp = setup.skills_prompt(
        config(), parse_session_key("agent:main:main"), tmp_path / "ws", tmp_path / "s", None, {"read"}
    )
    assert sp is not None and "ok" in sp.included and "broken" not in sp.included


def test_escape_is_the_xml_one() -> None:
    from xml.sax.saxutils import escape as xml_escape

    from homarus.skills.prompt import escape

    for text in ("a&b<c>d\"e'f", "&amp;", "plain", "</skill><x>"):
        assert escape(text) == xml_escape(text)
