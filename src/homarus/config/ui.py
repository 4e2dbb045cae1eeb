"""The ``ui`` section: the Control UI's preferences, synced across a user's browsers through the
gateway (the original's keys and values, so its own Control UI can store them here).

``ui.prefs`` is written last-writer-wins: ``config.patch`` takes a patch that touches only this
subtree without a base hash (a theme picked in one tab must not fail because another tab saved
something a second earlier), as the original does."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from homarus.config.base import ConfigModel
from homarus.patterns import Pattern

__all__ = ["UiConfig", "UiPrefs", "only_ui_prefs"]

_HEX = Pattern(r"^#?[0-9a-fA-F]{6}$")

Theme = Literal[
    "claw", "knot", "dash", "absolutely", "tide", "beacon", "phosphor", "crt", "manuscript", "rose", "miami", "custom"
]


class UiPrefs(ConfigModel):
    theme: Theme | None = None
    theme_mode: Literal["light", "dark", "system"] | None = None
    accent: Literal["theme"] | Annotated[str, Pattern(r"^#[0-9a-fA-F]{6}$")] | None = None
    locale: str | None = Field(default=None, max_length=20)
    chat_show_thinking: bool | None = None
    chat_show_tool_calls: bool | None = None
    chat_persist_commentary: bool | None = None
    chat_send_shortcut: Literal["enter", "modifier-enter"] | None = None
    chat_follow_up_mode: Literal["steer", "queue"] | None = None
    sidebar_entries: list[Annotated[str, Field(max_length=200)]] | None = Field(default=None, max_length=100)


class UiConfig(ConfigModel):
    seam_color: Annotated[str, _HEX] | None = None
    prefs: UiPrefs = Field(default_factory=UiPrefs)


def only_ui_prefs(patch: object) -> bool:
    """A merge patch that can change nothing outside ``ui.prefs``."""
    if not isinstance(patch, dict) or set(patch) != {"ui"}:
        return False
    ui = patch["ui"]
    return isinstance(ui, dict) and set(ui) == {"prefs"} and isinstance(ui["prefs"], dict)
