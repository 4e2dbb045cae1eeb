"""``openclaw.json`` onto Homarus's config, key by key, every decision written down.

The two configs share their shape where Homarus implements a feature (the same keys, the same
values), so the mapping is: keep the sections Homarus knows, validate the result with Homarus's
own models, and take out exactly the keys they refuse, each with the validator's reason, until
what is left is a valid config. Nothing is guessed: a key is carried as written or left out and
named. A few keys are rewritten on purpose (the workspace moves under Homarus's state directory;
OpenClaw-only switches of a kept section are named with why they do not apply).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Final

from pydantic import ValidationError

from homarus.config.loader import format_validation_error
from homarus.config.schema import SECTIONS, HomarusConfig
from homarus.config.store import delete_path

__all__ = ["PlanItem", "map_config"]

MAX_ROUNDS: Final = 500
#: top-level OpenClaw sections with no Homarus counterpart, and why
NOT_CARRIED: Final = {
    "update": "Homarus is updated with git/pip, not by the gateway",
    "discovery": "Homarus does not advertise itself on the network (no mDNS)",
    "wizard": "onboarding state of the original",
    "meta": "bookkeeping of the original",
    "ui": "the original's UI preferences",
    "talk": "no voice mode",
    "canvasHost": "no canvas host",
    "nodes": "no device nodes",
    "env": "Homarus reads the process environment; put variables there",
    "auth": "auth profiles: give providers their apiKey (or ${ENV}) under models.providers",
    "diagnostics": "Homarus has its own audit trail (logging.audit)",
}


@dataclass(frozen=True, slots=True)
class PlanItem:
    kind: str  # config | file | session | cron | approvals
    what: str
    action: str  # carry | rename | skip | error | keep
    detail: str = ""

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "what": self.what, "action": self.action, "detail": self.detail}


def _leaves(value: Any, prefix: str) -> list[str]:
    if isinstance(value, dict) and value:
        return [leaf for k, v in value.items() for leaf in _leaves(v, f"{prefix}.{k}")]
    return [prefix]


def map_config(source: dict[str, Any], *, workspace_note: str | None) -> tuple[dict[str, Any], list[PlanItem]]:
    """(Homarus config, what happened to every key of ``source``)."""
    items: list[PlanItem] = []
    out: dict[str, Any] = {}
    for key, value in source.items():
        if key in SECTIONS:
            out[key] = copy.deepcopy(value)
        elif key != "$schema":
            reason = NOT_CARRIED.get(key, "Homarus has no such section")
            items.append(PlanItem("config", key, "skip", reason))
    defaults = (out.get("agents") or {}).get("defaults") or {}
    if "workspace" in defaults:
        del defaults["workspace"]
        items.append(PlanItem("config", "agents.defaults.workspace", "rename", workspace_note or "the default"))
    for agent in (out.get("agents") or {}).get("list") or []:
        if isinstance(agent, dict) and "workspace" in agent:
            items.append(
                PlanItem("config", f"agents.list.{agent.get('id')}.workspace", "carry", str(agent["workspace"]))
            )
    for _ in range(MAX_ROUNDS):
        try:
            HomarusConfig.model_validate(out)
            break
        except ValidationError as exc:
            progressed = False
            for issue, err in zip(format_validation_error(exc), exc.errors(), strict=True):
                path = tuple(p for p in err["loc"] if p != "__root__")
                if delete_path(out, path):
                    items.append(PlanItem("config", issue.key, "skip", _reason(issue.message)))
                    progressed = True
                    break
            if not progressed:  # a rule over several keys (e.g. allowlist without ids): drop the section
                section = str(exc.errors()[0]["loc"][0])
                out.pop(section, None)
                items.append(PlanItem("config", section, "skip", format_validation_error(exc)[0].message))
    carried = {i.what for i in items}
    for key, value in out.items():
        for leaf in _leaves(value, key):
            if leaf not in carried:
                items.append(PlanItem("config", leaf, "carry"))
    return out, items


def _reason(message: str) -> str:
    return "Homarus has no such key" if message == "unknown key" else f"not valid in Homarus: {message}"
