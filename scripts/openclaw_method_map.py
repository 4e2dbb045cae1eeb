"""Write the method map of docs/openclaw-compat.md: each method the original (2026.9.6) advertises
in hello-ok (tests/fixtures/openclaw-methods.json, recorded from it) as Homarus has it.

Run: .venv/bin/python scripts/openclaw_method_map.py  (rewrites the section between the markers)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from homarus.gateway.methods import CORE_METHODS  # noqa: E402

EMPTY = "homarus.gateway.methods.control_ui:"
EMPTY_FUNCS = {
    "empty_list",
    "question_list",
    "talk_catalog",
    "progress_card",
    "branches_list",
    "companion_state",
    "tasks_list",
    "board_get",
    "plugins_control_ui",
    "surface_refresh",
    "pull_requests_subscribe",
    "viewers_set",
    "github_options",
    "members_evidence",
    "prefs_get",
    "groups_list",
    "groups_defaults",
    "mentions_list",
    "suggestions_list",
    "discussion_info",
    "catalog_list",
    "observer_visibility",
    "update_status",
    "plugins_catalog_browse",
}
NODES = {"node.list", "node.describe", "node.pair.list"}

#: why Homarus has no such method, or which open issue plans it: the first matching prefix wins
_MACHINES = "later: running on more than one machine (nodes, workers, hand-off; no issue filed yet)"
_SINGLE_OWNER = "not supported: Homarus is a single-owner gateway (no user accounts, members or sharing)"
_BOARDS = "not supported: session boards, questions, tasks and progress cards are not a Homarus feature"
_CODING = "not supported: coding-workspace features (projects, worktrees, terminals, GitHub, desktops)"
_VOICE = "not supported: voice (talk, TTS, voice wake)"
WHY: tuple[tuple[str, str], ...] = (
    ("mcp.", "planned: #21 (MCP servers as tools)"),
    ("browser.", "planned: #21 (a real browser tool)"),
    ("wizard.", "planned: #22 (`homarus onboard`)"),
    ("models.auth", "planned: #22 (models from the command line)"),
    ("models.probe", "planned: #22 (`homarus models test`)"),
    ("environments.", "not supported: cloud/dev environments; sandboxes are configured (#24: the Docker backend)"),
    ("node.", _MACHINES),
    ("worker.", _MACHINES),
    ("gateway.suspend.", _MACHINES),
    ("desktop.", _CODING),
    ("computer.", _CODING),
    ("terminal.", _CODING),
    ("worktrees.", _CODING),
    ("projects.", _CODING),
    ("github.", _CODING),
    ("tools.github.", _CODING),
    ("controlUi.github", _CODING),
    ("sessions.github.", _CODING),
    ("sessions.catalog.", _CODING),
    ("sessions.files.", _CODING),
    ("sessions.diff", _CODING),
    ("users.", _SINGLE_OWNER),
    ("session.", _SINGLE_OWNER),
    ("sessions.assignOwner", _SINGLE_OWNER),
    ("sessions.setInvolvement", _SINGLE_OWNER),
    ("attach.", _SINGLE_OWNER),
    ("board.", _BOARDS),
    ("canvas.", _BOARDS),
    ("portal.", _BOARDS),
    ("progressCard.", _BOARDS),
    ("question.", _BOARDS),
    ("tasks.", _BOARDS),
    ("taskSuggestions.", _BOARDS),
    ("mentions.", _BOARDS),
    ("sessions.groups.", _BOARDS),
    ("sessions.companion.", _BOARDS),
    ("sessions.goal.", _BOARDS),
    ("sessions.activitySummary.", _BOARDS),
    ("talk.", _VOICE),
    ("tts.", _VOICE),
    ("voicewake.", _VOICE),
    ("push.", "not supported: web push notifications (chat channels carry notifications)"),
    ("themes.", "not supported: Homarus's own Control UI has one theme that follows the system"),
    ("skills.", "not supported: skill library, proposals and registry (skills are workspace files)"),
    ("doctor.memory.", "not supported: the original's dreaming memory (Homarus memory is files + search)"),
    ("memory.sessionBackfill.", "not supported: the original's dreaming memory (Homarus memory is files + search)"),
    ("migrations.", "not supported: `homarus migrate openclaw` migrates from the command line"),
    ("openclaw.", "not supported: the original's system-agent setup"),
    ("plugins.", "not supported: plugins are installed and enabled in the config and by the CLI"),
    ("agents.", "not supported: agents are defined in the config (config.patch), their files in the workspace"),
    ("secrets.", "not supported: secrets come from the environment and the 0600 secrets file"),
    ("update.", "not supported: Homarus is updated by its installer, not from the gateway"),
    ("diagnostics.", "not supported: profiling lives in bench/ and `python -X importtime`"),
    ("exec.approval.grants.", "not supported: allow-always decisions persist in the approvals file"),
    ("exec.approvals.", "not supported yet: the approvals file is edited by allow-always decisions and by hand"),
    ("approval.", "not supported: system-agent approvals (exec and plugin approvals are implemented)"),
    ("conversations.", "not supported: the original's conversation API (chat.send and agent cover it)"),
    ("transcripts.", "not supported yet: transcripts are JSONL files; chat.history and sessions.get read them"),
    ("artifacts.", "not supported: run artifacts are files in the workspace"),
    ("audit.", "not supported yet: the audit trail is read with logs.tail and `homarus logs`"),
    ("usage.", "not supported yet: token usage is on each session row and run result"),
    ("cron.", "not supported yet: cron.list/status/runs cover the reads"),
    ("config.schema", "not supported yet: the config is validated on write (config.set/patch/apply)"),
    ("sessions.branches.", "not supported: Homarus transcripts do not branch"),
    ("sessions.fork", "not supported: Homarus transcripts do not branch"),
    ("sessions.rewind", "not supported: Homarus transcripts do not branch"),
    ("sessions.compact", "not supported yet: compaction runs by itself when the context fills"),
    ("gateway.restart.", "not supported: restart with the service manager (SIGTERM drains, runs resume)"),
    ("device.scopes.", "not supported yet: a device's scopes are set when it is approved (device.pair.approve)"),
    ("fs.", "not supported: the gateway's file system is not browsable over the protocol"),
    ("claws.", "not supported: the original's package monitors"),
    ("controlUi.", "not supported: link and session previews of the original's UI"),
    ("ui.", "not supported: the original's UI automation"),
    ("tools.invoke", "not supported yet over WebSocket: `POST /tools/invoke` does it over HTTP"),
    ("message.action", "not supported yet: reactions and edits on chat channels"),
    ("webSearch.", "not supported: Homarus has no gateway-managed web search provider"),
)


def why(name: str) -> str:
    return next((text for prefix, text in WHY if name.startswith(prefix)), "not supported yet")


def kind(state: str) -> str:
    for k in ("implemented", "empty by design", "planned", "later"):
        if state.startswith(k):
            return k
    return "not supported"


def parameters() -> list[str]:
    """Per method, the original's parameters Homarus accepts without effect or refuses unless harmless."""
    import importlib

    from homarus.protocol.compat import inert_of, unsupported_of

    lines = ["| method | parameter | in Homarus |", "| --- | --- | --- |"]
    for m in sorted(CORE_METHODS, key=lambda m: m.name):
        if m.params is None:
            continue
        model = getattr(importlib.import_module(m.target.partition(":")[0]), m.params)
        for wire, why_ in sorted(unsupported_of(model).items()):
            harmless = ", ".join(f"`{json.dumps(v)}`" for v in why_.harmless)
            note = f" (accepted: {harmless})" if harmless else ""
            lines.append(f"| `{m.name}` | `{wire}` | refused unless unset{note}: {why_.reason} |")
        for wire, reason in sorted(inert_of(model).items()):
            lines.append(f"| `{m.name}` | `{wire}` | accepted, no effect: {reason} |")
    return lines


def replace(doc: str, marker: str, text: str, heading: str) -> str:
    block = f"<!-- {marker}:start -->\n{text}\n<!-- {marker}:end -->"
    if f"<!-- {marker}:start -->" in doc:
        return re.sub(rf"<!-- {marker}:start -->.*?<!-- {marker}:end -->", lambda _: block, doc, flags=re.S)
    return doc + f"\n## {heading}\n\n" + block + "\n"


#: methods the original has but leaves out of hello-ok (``advertise: false`` in its scope table)
UNADVERTISED = {"web.login.start", "web.login.wait"}


def main() -> None:
    original = json.loads((ROOT / "tests/fixtures/openclaw-methods.json").read_text())["methods"]
    ours = {m.name: m.target for m in CORE_METHODS}
    rows = []
    counts = {"implemented": 0, "empty by design": 0, "planned": 0, "later": 0, "not supported": 0}
    for name in sorted(original):
        target = ours.get(name)
        if target is None:
            state = why(name)
        elif (target.startswith(EMPTY) and target[len(EMPTY) :] in EMPTY_FUNCS) or name in NODES:
            state = "empty by design"
        else:
            state = "implemented"
        counts[kind(state)] += 1
        rows.append(f"| `{name}` | {state} |")
    unadvertised = sorted(set(ours) & UNADVERTISED)
    extra = sorted(set(ours) - set(original) - UNADVERTISED)
    text = "\n".join(
        [
            f"The original advertises {len(original)} methods. Homarus implements {counts['implemented']}, answers "
            f"{counts['empty by design']} with the original's empty shape (a feature Homarus does not have: the "
            f"original's UI then hides the panel); {counts['planned']} are planned by an open issue, "
            f"{counts['later']} wait for running on several machines, and {counts['not supported']} are not "
            'supported, each with why (an `INVALID_REQUEST` "unknown method", never a dropped socket). '
            "Homarus's own methods the original does not have: "
            f"{', '.join(f'`{m}`' for m in extra)}. Implemented too, the original's methods it does not "
            f"advertise: {', '.join(f'`{m}`' for m in unadvertised)}.",
            "",
            "| method | in Homarus |",
            "| --- | --- |",
            *rows,
        ]
    )
    doc = ROOT / "docs" / "openclaw-compat.md"
    current = replace(doc.read_text(), "method-map", text, "The original's methods")
    current = replace(current, "param-map", "\n".join(parameters()), "The original's parameters, declared")
    doc.write_text(current)
    print(counts)


if __name__ == "__main__":
    main()
