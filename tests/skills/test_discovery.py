"""Discovery: precedence, name clashes, broken skills and symlinks reported, never raised."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from homarus.skills.catalog import PluginSkillDir, load_view
from homarus.skills.discovery import BUNDLED_DIR
from tests.skills.support import config, write_skill


def test_bundled_skills_ship_with_the_package(tmp_path: Path) -> None:
    view = load_view(config(), workspace=tmp_path / "ws", state_dir=tmp_path / "state", env={})
    names = {s.skill.name for s in view.states}
    assert {"daily-memory-note", "summarize-url", "cron-scheduling"} <= names
    assert all(s.skill.source == "bundled" and s.gate.eligible for s in view.states)
    assert view.problems == []
    assert (BUNDLED_DIR / "summarize-url" / "SKILL.md").is_file()


def test_precedence_workspace_then_installed_then_plugin_then_extra_then_bundled(tmp_path: Path) -> None:
    ws, state, extra, plugin = tmp_path / "ws", tmp_path / "state", tmp_path / "extra", tmp_path / "plug"
    write_skill(ws / "skills", "summarize-url", "Workspace version.")
    write_skill(state / "skills", "summarize-url", "Installed version.")
    write_skill(state / "skills", "two", "Installed two.")
    write_skill(plugin / "skills", "two", "Plugin two.")
    write_skill(plugin / "skills", "three", "Plugin three.")
    write_skill(extra, "three", "Extra three.")
    write_skill(extra, "four", "Extra four.")
    cfg = config(load={"extraDirs": [str(extra)]})
    view = load_view(cfg, workspace=ws, state_dir=state, env={}, plugin_dirs=[PluginSkillDir("p", plugin, "skills")])
    by = {s.skill.name: s for s in view.states}
    assert by["summarize-url"].skill.source == "workspace"
    assert by["summarize-url"].skill.description == "Workspace version."
    assert [s.source for s in by["summarize-url"].shadows] == ["installed", "bundled"]
    assert by["two"].skill.source == "installed"
    assert by["three"].skill.source == "plugin" and by["three"].skill.origin == "plugin:p"
    assert by["four"].skill.source == "extra"
    clashes = [p for p in view.problems if "name clash" in p.message]
    assert len(clashes) == 4 and all(p.level == "warning" for p in clashes)
    assert any("summarize-url" in p.message and "workspace" in p.message for p in clashes)


def test_broken_yaml_huge_description_and_missing_front_matter_are_reported(tmp_path: Path) -> None:
    skills = tmp_path / "ws" / "skills"
    bad = skills / "bad-yaml"
    bad.mkdir(parents=True)
    (bad / "SKILL.md").write_text("---\nname: bad-yaml\ndescription: [unclosed\n---\nbody\n")
    write_skill(skills, "huge", "x" * 5000)
    plain = skills / "plain"
    plain.mkdir()
    (plain / "SKILL.md").write_text("# no front matter\n")
    bomb = skills / "bomb"
    bomb.mkdir()
    (bomb / "SKILL.md").write_text('---\na: &a ["x","x"]\nb: [*a,*a]\nname: bomb\ndescription: d\n---\n')
    notdict = skills / "list"
    notdict.mkdir()
    (notdict / "SKILL.md").write_text("---\n- a\n- b\n---\n")
    badname = skills / "bad-name"
    badname.mkdir()
    (badname / "SKILL.md").write_text("---\nname: ../../etc\ndescription: d\n---\n")
    write_skill(skills, "fine")
    view = load_view(config(), workspace=tmp_path / "ws", state_dir=tmp_path / "state", env={})
    names = {s.skill.name for s in view.states}
    assert "fine" in names and not names & {"bad-yaml", "huge", "plain", "bomb", "list", "bad-name"}
    msgs = {Path(p.path).parent.name: p.message for p in view.problems if p.level == "error"}
    assert "not valid YAML" in msgs["bad-yaml"]
    assert "description" in msgs["huge"] and "1024" in msgs["huge"]
    assert "front matter" in msgs["plain"]
    assert "aliases" in msgs["bomb"]
    assert "mapping" in msgs["list"]
    assert "name" in msgs["bad-name"]


def test_oversize_skill_md_is_refused(tmp_path: Path) -> None:
    d = write_skill(tmp_path / "ws" / "skills", "big", body="y" * 300_000)
    view = load_view(config(), workspace=tmp_path / "ws", state_dir=tmp_path / "state", env={})
    assert view.get("big") is None
    assert any("larger than" in p.message and str(d) in p.path for p in view.problems)


def test_symlinks_leaving_the_skill_dir_are_ignored_and_reported(tmp_path: Path) -> None:
    outside = write_skill(tmp_path / "outside", "evil", "Outside skill.")
    secret = tmp_path / "secret.md"
    secret.write_text("---\nname: leak\ndescription: leaked\n---\n")
    skills = tmp_path / "state" / "skills"
    skills.mkdir(parents=True)
    os.symlink(outside, skills / "evil")  # a skill dir that is a link out of the source
    linked = skills / "leak"
    linked.mkdir()
    os.symlink(secret, linked / "SKILL.md")  # a SKILL.md that is a link out of its skill
    inner = write_skill(skills, "real")
    os.symlink(inner, skills / "alias")  # a link inside the source is fine (same skill, reported once)
    view = load_view(config(), workspace=tmp_path / "ws", state_dir=tmp_path / "state", env={})
    names = {s.skill.name for s in view.states}
    assert "evil" not in names and "leak" not in names and "real" in names
    msgs = [p.message for p in view.problems]
    assert any("symlink leaving the skills dir" in m for m in msgs)
    assert any("symlink leaving its skill dir" in m for m in msgs)


def test_workspace_skills_dir_linked_outside_the_workspace_is_ignored(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    write_skill(tmp_path / "elsewhere", "sneaky")
    os.symlink(tmp_path / "elsewhere", ws / "skills")
    view = load_view(config(), workspace=ws, state_dir=tmp_path / "state", env={})
    assert view.get("sneaky") is None
    assert any("resolves outside" in p.message for p in view.problems)


def test_plugin_skill_dir_leaving_the_plugin_is_refused(tmp_path: Path) -> None:
    write_skill(tmp_path / "other", "x")
    plugin = tmp_path / "plug"
    plugin.mkdir()
    view = load_view(
        config(),
        workspace=tmp_path / "ws",
        state_dir=tmp_path / "state",
        env={},
        plugin_dirs=[PluginSkillDir("p", plugin, "../other"), PluginSkillDir("p", plugin, "/etc")],
    )
    assert view.get("x") is None
    assert sum("leaves the plugin" in p.message for p in view.problems) == 2


def test_extra_dir_that_is_itself_a_skill_and_a_missing_extra_dir(tmp_path: Path) -> None:
    one = write_skill(tmp_path, "solo")
    cfg = config(load={"extraDirs": [str(one), str(tmp_path / "nope")]})
    view = load_view(cfg, workspace=tmp_path / "ws", state_dir=tmp_path / "state", env={})
    assert view.get("solo") is not None
    assert any("does not exist" in p.message for p in view.problems)


def test_edits_are_picked_up_on_the_next_load(tmp_path: Path) -> None:
    skills = tmp_path / "ws" / "skills"
    d = write_skill(skills, "note", "First.")
    assert load_view(config(), workspace=tmp_path / "ws", state_dir=tmp_path / "s", env={}).get("note")
    (d / "SKILL.md").write_text("---\nname: note\ndescription: Second version, longer.\n---\nbody\n")
    state = load_view(config(), workspace=tmp_path / "ws", state_dir=tmp_path / "s", env={}).get("note")
    assert state is not None and state.skill.description == "Second version, longer."


def test_a_cached_source_sees_new_removed_and_relinked_skills(tmp_path: Path) -> None:
    """A source's scan is reused while it is unchanged; every change below is seen at once."""
    ws = tmp_path / "ws"
    skills = ws / "skills"
    write_skill(skills, "one")

    def names() -> set[str]:
        view = load_view(config(), workspace=ws, state_dir=tmp_path / "s", env={})
        return {s.skill.name for s in view.states if s.skill.source == "workspace"}

    assert names() == {"one"}
    assert names() == {"one"}  # from the cache
    write_skill(skills, "two")
    assert names() == {"one", "two"}
    (skills / "two" / "SKILL.md").unlink()
    assert names() == {"one"}
    write_skill(tmp_path / "elsewhere", "sneaky")
    shutil.rmtree(skills / "one")
    os.symlink(tmp_path / "elsewhere" / "sneaky", skills / "one")  # a cached dir swapped for a link out
    assert names() == set()
    os.unlink(skills / "one")
    shutil.rmtree(skills)
    os.symlink(tmp_path / "elsewhere", skills)  # the cached source itself becomes a link out
    assert names() == set()
