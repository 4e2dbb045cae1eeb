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
import json
from dataclasses import dataclass
from typing import Any, Final

from pydantic import ValidationError

from homarus.config.loader import format_validation_error
from homarus.config.redact import redact
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


WHATSAPP_SESSION: Final = (
    "the original's WhatsApp Web session (Baileys) is not one Homarus's engine (whatsmeow) can use: "
    "link the number again with homarus channels login whatsapp"
)


def _whatsapp_blocks(out: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """``channels.whatsapp`` and each of its accounts, where they are objects."""
    root = (out.get("channels") or {}).get("whatsapp") if isinstance(out.get("channels"), dict) else None
    if not isinstance(root, dict):
        return []
    blocks = [("channels.whatsapp", root)]
    accounts = root.get("accounts")
    if isinstance(accounts, dict):
        blocks += [(f"channels.whatsapp.accounts.{k}", v) for k, v in accounts.items() if isinstance(v, dict)]
    return blocks


@dataclass(frozen=True, slots=True)
class PlanItem:
    kind: str  # config | file | session | cron | approvals
    what: str
    action: str  # carry | rename | skip | error | keep
    detail: str = ""
    #: why a carried key matters for security (the dry run flags it), or ""
    security: str = ""

    def to_json(self) -> dict[str, str]:
        out = {"kind": self.kind, "what": self.what, "action": self.action, "detail": self.detail}
        if self.security:
            out["security"] = self.security
        return out


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
    for where, block in _whatsapp_blocks(out):
        if "authDir" in block:  # never pointed into the source: Homarus's engine would write there
            del block["authDir"]
            items.append(PlanItem("config", f"{where}.authDir", "skip", WHATSAPP_SESSION))
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
    shown = redact(out)  # values are shown, secrets masked
    for key, value in shown.items():
        for leaf in _leaves(value, key):
            if leaf not in carried:
                leaf_value = _at(shown, leaf)
                items.append(PlanItem("config", leaf, "carry", _show(leaf_value), security_note(leaf, _at(out, leaf))))
    return out, items


def _at(data: Any, dotted: str) -> Any:
    node = data
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 160 else text[:157] + "..."


def security_note(key: str, value: Any) -> str:
    """Why carrying ``key`` = ``value`` deserves a look before it takes effect (or "")."""
    parts = key.split(".")
    if key == "gateway.bind" and str(value) not in ("loopback", "127.0.0.1", "::1", "localhost"):
        return "the gateway will listen beyond this machine"
    if key == "gateway.auth.mode" and value == "none":
        return "no authentication at all"
    if key in ("gateway.auth.token", "gateway.auth.password"):
        return "a credential the source's clients already know keeps working here"
    if key == "tools.exec.security" and value == "full":
        return "host commands run without approval"
    if parts[0] == "mcp" and parts[-1] in ("command", "args") and len(parts) == 4:
        return "runs a program on this machine when an agent first uses the server"
    if key.endswith("sandbox.mode") and value == "off":
        return "tools run on this machine, not in a sandbox"
    if parts[0] == "channels" and parts[-1] == "dmPolicy" and value == "open":
        return "anyone may talk to the assistant"
    if parts[0] == "channels" and parts[-1] in ("allowFrom", "groupAllowFrom") and "*" in (value or ()):
        return "a wildcard sender rule"
    if key == "commands.ownerAllowFrom":
        return "these senders get the owner's session and tools"
    if key.startswith("hooks.") and parts[-1] in ("enabled", "token"):
        return "public webhooks start agent runs"
    if key.startswith("plugins.load"):
        return "loads plugin code from these paths"
    return ""


def _reason(message: str) -> str:
    return "Homarus has no such key" if message == "unknown key" else f"not valid in Homarus: {message}"
