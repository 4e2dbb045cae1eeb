"""`homarus config get|set|unset|validate|path`."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import json5

from homarus.cli.prompts import confirm, unified_diff
from homarus.config.backups import list_backups
from homarus.config.loader import StatePaths, load_config
from homarus.config.redact import REDACTED, redact
from homarus.config.store import ConfigStore

__all__ = ["run_config"]


def _out(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def _err(message: str) -> None:
    sys.stderr.write(f"homarus: {message}\n")


def run_config(args: argparse.Namespace, paths: StatePaths) -> int:
    sub = args.config_command
    if sub == "path":
        print(paths.config_path)
        return 0
    if sub == "validate":
        loaded = load_config(paths)
        print(f"ok: {paths.config_path}" + ("" if loaded.exists else " (absent: defaults)"))
        return 0
    if sub == "get":
        loaded = load_config(paths)
        data = loaded.config.model_dump(by_alias=True, exclude_none=True)
        data = redact(_reveal(data))
        if args.key:
            for part in args.key.split("."):
                if not isinstance(data, dict) or part not in data:
                    _err(f"no such key: {args.key}")
                    return 1
                data = data[part]
        _out(data)
        return 0
    if sub in ("set", "unset"):
        store = ConfigStore.open(paths)
        value: Any = None
        if sub == "set":
            try:
                value = json5.loads(args.value)
            except ValueError:
                value = args.value
            if value == REDACTED:
                _err("refusing to store the redaction placeholder as a value")
                return 2
        result = store.set_path(args.key, value)
        print(f"{'unchanged' if result.noop else 'updated'}: {paths.config_path}")
        if result.restart_required:
            print(f"restart the gateway to apply: {', '.join(result.restart_required)}")
        return 0
    if sub == "backups":
        rows = list_backups(paths.config_path)
        for row in rows:
            print(row.describe())
        if not rows:
            print(f"no backups of {paths.config_path} yet (one is kept at every write)")
        return 0
    if sub == "restore":
        return _restore(paths, args.number, yes=args.yes)
    print("usage: homarus config {get,set,unset,validate,path,backups,restore}", file=sys.stderr)
    return 2


def _restore(paths: StatePaths, number: int, *, yes: bool) -> int:
    chosen = {b.number: b for b in list_backups(paths.config_path)}.get(number)
    if chosen is None:
        _err(f"no backup {number} of {paths.config_path} (see: homarus config backups)")
        return 1
    current = paths.config_path.read_text(encoding="utf-8") if paths.config_path.exists() else ""
    wanted = chosen.path.read_text(encoding="utf-8")
    if current == wanted:
        print(f"unchanged: backup {number} is the current config")
        return 0
    sys.stdout.write(unified_diff(current, wanted, str(paths.config_path), f"backup {number}"))
    if not yes and not confirm(f"Restore backup {number}?"):
        print("nothing changed")
        return 1
    store = ConfigStore.open(paths)
    result = store.restore(chosen.path)
    print(f"restored backup {number} to {paths.config_path} (the replaced version is now backup 1)")
    if result.restart_required:
        print(f"restart the gateway to apply: {', '.join(result.restart_required)}")
    return 0


def _reveal(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reveal(v) for k, v in value.items()}
    if hasattr(value, "get_secret_value"):
        return value.get_secret_value()
    return value
