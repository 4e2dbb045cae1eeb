"""`homarus config get|set|unset|validate|path`."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import json5

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
    print("usage: homarus config {get,set,unset,validate,path}", file=sys.stderr)
    return 2


def _reveal(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reveal(v) for k, v in value.items()}
    if hasattr(value, "get_secret_value"):
        return value.get_secret_value()
    return value
