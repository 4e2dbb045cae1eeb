"""Write the method map of docs/openclaw-compat.md: each method the original (2026.9.6) advertises
in hello-ok (src/homarus/protocol/original_methods.txt, recorded from it) as Homarus has it, with the
reason the gateway itself gives for each one it does not answer.

Run: .venv/bin/python scripts/openclaw_method_map.py  (rewrites the section between the markers)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from homarus.gateway.methods import CORE_METHODS  # noqa: E402
from homarus.protocol.original_methods import GENERIC, not_supported_reason, original_methods  # noqa: E402

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


def why(name: str) -> str:
    """What the gateway itself answers a client calling ``name`` (homarus.protocol.original_methods)."""
    return f"not supported: {not_supported_reason(name) or GENERIC}"


def kind(state: str) -> str:
    for k in ("implemented", "empty by design"):
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
    original = sorted(original_methods())
    ours = {m.name: m.target for m in CORE_METHODS}
    rows = []
    counts = {"implemented": 0, "empty by design": 0, "not supported": 0}
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
            f"original's UI then hides the panel), and {counts['not supported']} are not supported: each "
            'answered at any scope with `INVALID_REQUEST` "not supported by Homarus: <reason>" '
            "(`details.code` `NOT_SUPPORTED`), the reason below. "
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
