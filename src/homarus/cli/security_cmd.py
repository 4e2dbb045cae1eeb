"""`homarus security audit [--json]`: the risky settings of this installation, each with its fix.

Exit 0 when nothing is high, 1 when something is, 2 when the config cannot be read (its error is
printed). The checks live in ``security/config_audit.py``; the gateway runs the same at start and
logs the high ones.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from homarus.config.paths import StatePaths

__all__ = ["add_security_parser", "run_security"]

_MARK = {"high": "!!", "medium": "! ", "low": "- "}


def add_security_parser(sec: argparse.ArgumentParser) -> None:
    ss = sec.add_subparsers(dest="security_command", metavar="COMMAND")
    audit = ss.add_parser("audit", help="list risky settings with the fix for each; exit 1 when one is high")
    audit.add_argument("--json", action="store_true", help="the findings as JSON")


def run_security(args: argparse.Namespace, paths: StatePaths) -> int:
    from homarus.config.loader import load_config
    from homarus.errors import ConfigError
    from homarus.security.config_audit import audit_config, has_high

    try:
        loaded = load_config(paths)
    except ConfigError as exc:
        print(f"homarus: {exc}", file=sys.stderr)
        return 2
    findings = audit_config(loaded.config, paths.state_dir, paths.config_path)
    high = has_high(findings)
    if args.json:
        out = {"ok": not high, "findings": [f.to_json() for f in findings]}
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
        return 1 if high else 0
    if not findings:
        print("no risky settings found")
        return 0
    for f in findings:
        print(f"{_MARK[f.severity]} [{f.severity}] {f.title}  ({f.check})")
        print(f"     {f.detail}")
        print(f"     fix: {f.fix}")
    counts = {s: sum(1 for f in findings if f.severity == s) for s in ("high", "medium", "low")}
    print("\n" + ", ".join(f"{n} {s}" for s, n in counts.items() if n))
    return 1 if high else 0
