from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from homarus.agents.prompt import (
    IDENTITY_LINE,
    SILENT_REPLY_TOKEN,
    PromptInputs,
    build_system_prompt,
    strip_silent,
)
from homarus.agents.workspace import BootstrapFile, ensure_workspace, load_bootstrap_files

TOOLS = ["read", "exec"]


def inputs(tmp_path: Path, **overrides: Any) -> PromptInputs:
    ws = tmp_path / "ws"
    ensure_workspace(ws)
    values: dict[str, Any] = {
        "agent_name": "main",
        "tools": TOOLS,
        "workspace": ws,
        "bootstrap": load_bootstrap_files(ws),
        "timezone": "Europe/Berlin",
        "model_ref": "anthropic/claude-sonnet-4",
        "channel": "telegram",
        "host": "lobster-box",
        "os_name": "Linux 6.8",
        "thinking": "low",
    }
    values.update(overrides)
    return PromptInputs(**values)


def positions(prompt: str, headings: list[str]) -> list[int]:
    found = [prompt.find(h) for h in headings]
    assert all(p >= 0 for p in found), dict(zip(headings, found, strict=True))
    return found


FULL_ORDER = [
    IDENTITY_LINE,
    "## Tooling",
    "## Tool Call Style",
    "## Safety",
    "## Workspace",
    "## Current Date & Time",
    "# Project Context",
    "## AGENTS.md",
    "## SOUL.md",
    "## BOOTSTRAP.md",
    "## Silent Replies",
    "## Runtime",
    "## Additional Context",
]


def test_full_prompt_section_order(tmp_path: Path) -> None:
    prompt = build_system_prompt(inputs(tmp_path, extra_system_prompt="Group: family chat"))
    assert prompt.startswith(IDENTITY_LINE)
    found = positions(prompt, FULL_ORDER)
    assert found == sorted(found)
    assert prompt.rstrip().endswith("Group: family chat")


def test_the_tool_list_names_the_tools_and_leaves_descriptions_to_their_declarations(tmp_path: Path) -> None:
    prompt = build_system_prompt(inputs(tmp_path))
    assert "## Tooling\nTools (call them by these exact names): read, exec.\n" in prompt
    assert "Read a text file" not in prompt and "Large files are paged" not in prompt
    assert "No tools are available" in build_system_prompt(inputs(tmp_path, tools=[]))


def test_workspace_runtime_and_persona(tmp_path: Path) -> None:
    data = inputs(tmp_path)
    prompt = build_system_prompt(data)
    assert str(data.workspace) in prompt
    runtime = next(line for line in prompt.splitlines() if line.startswith("Runtime: "))
    for part in ("host=lobster-box", "os=Linux 6.8", "model=anthropic/claude-sonnet-4", "thinking=low"):
        assert part in runtime
    assert "channel=telegram" in runtime
    assert "persona and tone" in prompt
    no_channel = build_system_prompt(inputs(tmp_path, channel=None, thinking=None))
    assert "channel=" not in no_channel and "thinking=off" in no_channel


def test_timezone_only_no_clock(tmp_path: Path) -> None:
    prompt = build_system_prompt(inputs(tmp_path))
    section = prompt.split("## Current Date & Time\n", 1)[1].split("\n\n", 1)[0]
    assert section == "Time zone: Europe/Berlin"
    assert not re.search(r"\b\d{1,2}:\d{2}\b", prompt)
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", prompt)
    assert build_system_prompt(inputs(tmp_path)) == prompt  # stable between calls
    assert "## Current Date & Time" not in build_system_prompt(inputs(tmp_path, timezone=None))


def test_minimal_mode_drops_optional_sections(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ensure_workspace(ws)
    data = inputs(
        tmp_path, mode="minimal", bootstrap=load_bootstrap_files(ws, subagent=True), extra_system_prompt="Do X."
    )
    prompt = build_system_prompt(data)
    assert "## Silent Replies" not in prompt and SILENT_REPLY_TOKEN not in prompt
    assert "## SOUL.md" not in prompt and "## AGENTS.md" in prompt and "## TOOLS.md" in prompt
    assert "## Subagent Context\nDo X." in prompt
    found = positions(prompt, ["## Tooling", "## Safety", "## Workspace", "# Project Context", "## Runtime"])
    assert found == sorted(found)


def test_none_mode_is_identity_only(tmp_path: Path) -> None:
    assert build_system_prompt(inputs(tmp_path, mode="none", extra_system_prompt="x")) == IDENTITY_LINE


def test_bootstrap_markers(tmp_path: Path) -> None:
    files = [
        BootstrapFile("AGENTS.md", "head [...] tail", truncated=True, missing=False, original_chars=50_000),
        BootstrapFile("SOUL.md", "", truncated=False, missing=True, original_chars=0),
        BootstrapFile("TOOLS.md", "", truncated=True, missing=False, original_chars=900),
    ]
    prompt = build_system_prompt(inputs(tmp_path, bootstrap=files))
    assert "## AGENTS.md\n[truncated: 15 of 50000 characters shown]\nhead [...] tail" in prompt
    assert "## SOUL.md\n[missing: SOUL.md does not exist in the workspace]" in prompt
    assert "## TOOLS.md\n[omitted:" in prompt
    assert "persona and tone" not in prompt
    assert "# Project Context" not in build_system_prompt(inputs(tmp_path, bootstrap=[]))


def test_prompt_stays_compact(tmp_path: Path) -> None:
    prompt = build_system_prompt(inputs(tmp_path, extra_system_prompt="Group chat: family."))
    assert len(prompt) <= 6000, len(prompt)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("NO_REPLY", None),
        ("  NO_REPLY\n", None),
        ("\n\tNO_REPLY  \n\n", None),
        ("NO_REPLY.", "NO_REPLY."),
        ("Sure! NO_REPLY", "Sure! NO_REPLY"),
        ("no_reply", "no_reply"),
        ("Hello", "Hello"),
        ("", ""),
    ],
)
def test_strip_silent(text: str, expected: str | None) -> None:
    assert strip_silent(text) == expected
