"""The config file's previous versions: ``homarus.json.bak.1`` (the newest) to ``.bak.5``.

Every write of the config (the CLI, the gateway's ``config.*`` methods, the onboarding wizard,
``doctor --fix``) first keeps the file it replaces, so an upgrade, a repair or a slip of the hand
never costs the user their config: ``homarus config restore`` brings one back.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from homarus.fs import atomic_write

__all__ = ["KEEP", "Backup", "keep_backup", "list_backups", "write_keeping_backup"]

#: how many previous versions are kept
KEEP = 5


@dataclass(frozen=True, slots=True)
class Backup:
    number: int
    path: Path
    mtime: float
    size: int

    def describe(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.mtime))
        return f"{self.number}  {when}  {self.size} bytes  {self.path}"


def _name(config: Path, n: int) -> Path:
    return config.with_name(f"{config.name}.bak.{n}")


def keep_backup(config: Path) -> Path | None:
    """Shift ``.bak.1..4`` up one (the fifth falls off) and copy the current file to ``.bak.1``
    (0600, like the config). None when there is no file to keep."""
    try:
        current = config.read_bytes()
    except FileNotFoundError:
        return None
    with contextlib.suppress(FileNotFoundError):
        os.unlink(_name(config, KEEP))
    for n in range(KEEP - 1, 0, -1):
        with contextlib.suppress(FileNotFoundError):
            os.replace(_name(config, n), _name(config, n + 1))
    atomic_write(_name(config, 1), current, mode=0o600)
    return _name(config, 1)


def write_keeping_backup(config: Path, text: str) -> None:
    """Replace the config file with ``text`` (atomically, 0600), the replaced one kept as ``.bak.1``."""
    keep_backup(config)
    atomic_write(config, text, mode=0o600)


def list_backups(config: Path) -> list[Backup]:
    """The kept versions, the newest first."""
    found: list[Backup] = []
    for n in range(1, KEEP + 1):
        path = _name(config, n)
        try:
            st = path.stat()
        except FileNotFoundError:
            continue
        found.append(Backup(n, path, st.st_mtime, st.st_size))
    return found
