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


def main() -> None:
    original = json.loads((ROOT / "tests/fixtures/openclaw-methods.json").read_text())["methods"]
    ours = {m.name: m.target for m in CORE_METHODS}
    rows = []
    counts = {"implemented": 0, "empty by design": 0, "not supported": 0}
    for name in sorted(original):
        target = ours.get(name)
        if target is None:
            state = "not supported"
        elif (target.startswith(EMPTY) and target[len(EMPTY) :] in EMPTY_FUNCS) or name in NODES:
            state = "empty by design"
        else:
            state = "implemented"
        counts[state] += 1
        rows.append(f"| `{name}` | {state} |")
    extra = sorted(set(ours) - set(original))
    text = "\n".join(
        [
            "<!-- method-map:start -->",
            f"The original advertises {len(original)} methods; Homarus implements {counts['implemented']}, answers "
            f"{counts['empty by design']} with the original's empty shape (a feature Homarus does not have: the "
            f"original's UI then hides the panel), and does not have the other {counts['not supported']} "
            '(an `INVALID_REQUEST` "unknown method", never a dropped socket). Homarus\'s own methods the original '
            f"does not have: {', '.join(f'`{m}`' for m in extra)}.",
            "",
            "| method | in Homarus |",
            "| --- | --- |",
            *rows,
            "<!-- method-map:end -->",
        ]
    )
    doc = ROOT / "docs" / "openclaw-compat.md"
    current = doc.read_text()
    if "<!-- method-map:start -->" in current:
        current = re.sub(r"<!-- method-map:start -->.*<!-- method-map:end -->", text, current, flags=re.S)
    else:
        current += "\n## The original's methods\n\n" + text + "\n"
    doc.write_text(current)
    print(counts)


if __name__ == "__main__":
    main()
