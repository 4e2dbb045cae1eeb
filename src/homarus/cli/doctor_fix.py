"""What ``homarus doctor --fix`` may change, each change shown before it is made.

Only repairs with one right answer: keys the config has but this version does not know (after an
upgrade or a hand edit) are taken out — values that are merely wrong are left to the user, with
the newest backup that still loads named; loose permissions on the state dir and its secret files
are tightened; locks whose owner is gone are removed. The config is rewritten only after the
whole result validates, and the replaced file is kept as a backup.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from homarus.config.backups import list_backups, write_keeping_backup
from homarus.config.loader import (
    StatePaths,
    apply_env_overrides,
    format_validation_error,
    parse_config_text,
    resolve_config,
    substitute_env,
)
from homarus.config.schema import HomarusConfig
from homarus.config.secrets import SECRETS_FILE, merged_env
from homarus.config.store import delete_path
from homarus.errors import ConfigError

__all__ = ["Fix", "find_fixes", "loadable_backup"]

MAX_ROUNDS = 200


@dataclass
class Fix:
    what: str
    apply: Callable[[], None]
    #: the change to a file, as a unified diff (empty for a permission or a lock)
    diff: str = ""


def find_fixes(paths: StatePaths) -> list[Fix]:
    fixes: list[Fix] = []
    config_fix = _unknown_keys(paths)
    if config_fix is not None:
        fixes.append(config_fix)
    fixes += _permissions(paths)
    fixes += _stale_locks(paths.state_dir)
    return fixes


def _unknown_keys(paths: StatePaths) -> Fix | None:
    from homarus.cli.prompts import unified_diff

    try:
        raw = paths.config_path.read_text(encoding="utf-8")
        data = parse_config_text(raw, path=str(paths.config_path))
    except (OSError, ConfigError):
        return None
    env = _env(paths)
    removed: list[str] = []
    for _ in range(MAX_ROUNDS):
        try:
            resolved = substitute_env(json.loads(json.dumps(data)), env, path=str(paths.config_path))
            HomarusConfig.model_validate(apply_env_overrides(resolved, env)[0])
            break
        except ConfigError:
            return None  # a ${NAME} that is not set: the user decides
        except ValidationError as exc:
            issues, errors = format_validation_error(exc), exc.errors()
            at = next((n for n, e in enumerate(errors) if e["type"] == "extra_forbidden"), None)
            if at is None or not delete_path(data, tuple(errors[at]["loc"])):
                return None  # something other than an unknown key is wrong: the user decides
            removed.append(issues[at].key)
    else:
        return None
    if not removed:
        return None
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"

    def apply() -> None:
        write_keeping_backup(paths.config_path, text)

    what = f"remove {len(removed)} key(s) this version does not know: {', '.join(removed)}"
    return Fix(what, apply, unified_diff(raw, text, str(paths.config_path), "fixed"))


def _env(paths: StatePaths) -> dict[str, str]:
    try:
        return merged_env(paths.state_dir)
    except ConfigError:
        return dict(os.environ)


def _permissions(paths: StatePaths) -> list[Fix]:
    wanted = [(paths.state_dir, 0o700)]
    wanted += [(p, 0o600) for p in (paths.config_path, paths.state_dir / SECRETS_FILE, paths.token_path)]
    fixes = []
    for path, mode in wanted:
        try:
            current = stat.S_IMODE(path.stat().st_mode)
        except OSError:
            continue
        if current & 0o077:
            fixes.append(Fix(f"chmod {mode:o} {path} (now {current:o}: others can read it)", _chmod(path, mode)))
    return fixes


def _chmod(path: Path, mode: int) -> Callable[[], None]:
    return lambda: os.chmod(path, mode)


def _stale_locks(state_dir: Path) -> list[Fix]:
    from homarus.locking import read_lock_info

    fixes = []
    for lock in sorted(state_dir.glob("agents/*/sessions/*.lock")):
        info = read_lock_info(lock)
        if info is not None and not info.owner_alive():
            fixes.append(Fix(f"remove the stale lock {lock} (its owner is gone)", _unlink(lock)))
    return fixes


def _unlink(path: Path) -> Callable[[], None]:
    return lambda: path.unlink(missing_ok=True)


def loadable_backup(paths: StatePaths) -> int | None:
    """The newest backup that validates (to suggest ``homarus config restore N``)."""
    env = _env(paths)
    for backup in list_backups(paths.config_path):
        try:
            data = parse_config_text(backup.path.read_text(encoding="utf-8"), path=str(backup.path))
            resolve_config(data, env, path=str(backup.path))
        except (OSError, ConfigError):
            continue
        return backup.number
    return None
