"""The core tools' cards: what the model is offered of each tool, kept as data.

Offering a tool needs only its card (name, description, summary, tags, parameters). Building the
tools imports the exec host, the sandbox, the web client with its address guard and the browser
driver, and derives each parameter schema with pydantic: about 30 ms and 3 MiB of a gateway's
first turn, paid even when the model calls no tool (``bench/RESULTS.md``). So the gateway offers
the cards and builds the tools when the first one is called (``gateway/services/tooling.py``).

The cards are written from the tools themselves into ``catalog.json`` beside this module
(``make tool-catalog``), never by hand, and a test fails when the file no longer says what the
tools would. A card missing from the file makes the gateway build the tools at once, as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

from homarus.tools.base import Execute, Tool

__all__ = ["CATALOG_PATH", "card_of", "load", "render", "tool_from_card"]

CATALOG_PATH: Final = Path(__file__).with_name("catalog.json")


def card_of(tool: Tool) -> dict[str, Any]:
    """What a card keeps of ``tool``: everything but its code."""
    return {
        "description": tool.description,
        "label": tool.label,
        "summary": tool.summary,
        "tags": sorted(tool.tags),
        "deferred": tool.deferred,
        "parameters": tool.parameters,
    }


def render(tools: Iterable[Tool]) -> str:
    """The file's text for ``tools`` (stable: sorted keys, one line per value)."""
    cards = {tool.name: card_of(tool) for tool in tools}
    return json.dumps(cards, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def load(path: Path = CATALOG_PATH) -> dict[str, dict[str, Any]]:
    """The cards by tool name; empty when the file is missing or unreadable (then tools are built)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def tool_from_card(name: str, card: dict[str, Any], execute: Execute, *, description: str | None = None) -> Tool:
    """A tool that is ``card`` to whoever lists it and runs ``execute`` when called."""
    return Tool(
        name,
        description if description is not None else card["description"],
        card["parameters"],
        execute,
        label=card["label"],
        tags=frozenset(card["tags"]),
        summary=card["summary"],
        deferred=card["deferred"],
    )
