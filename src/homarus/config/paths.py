"""Where Homarus keeps its state and which config file it reads (no config parsing here: the CLI
imports this at ``--help`` time)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["StatePaths"]


@dataclass(frozen=True, slots=True)
class StatePaths:
    """Where Homarus keeps its state and which config file it reads."""

    state_dir: Path
    config_path: Path

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> StatePaths:
        env = os.environ if env is None else env
        state = Path(env.get("HOMARUS_STATE_DIR") or Path.home() / ".homarus").expanduser()
        config = env.get("HOMARUS_CONFIG")
        return cls(state_dir=state, config_path=Path(config).expanduser() if config else state / "homarus.json")

    @property
    def token_path(self) -> Path:
        return self.state_dir / "gateway.token"
