"""The ``cron`` config section: whether the scheduler runs, where its store lives, run limits."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr

from homarus.config.base import ConfigModel

__all__ = ["CronConfig", "CronRunLogConfig"]


class CronRunLogConfig(ConfigModel):
    #: a job's run log is cut back to ``keepLines`` once it grows past this
    max_bytes: int = Field(2_000_000, ge=10_000, le=1_000_000_000)
    keep_lines: int = Field(2000, ge=10, le=1_000_000)


class CronConfig(ConfigModel):
    #: false: jobs can still be listed and edited, but nothing runs on its own
    enabled: bool = True
    #: jobs file (default ``$STATE/cron/jobs.json``)
    store: str | None = Field(None, max_length=4096)
    #: jobs running at once (also the ``cron`` lane's concurrency)
    max_concurrent_runs: int = Field(1, ge=1, le=64)
    #: sent as ``Authorization: Bearer`` with webhook deliveries
    webhook_token: SecretStr | None = None
    run_log: CronRunLogConfig = Field(default_factory=CronRunLogConfig)

    def store_path(self, state_dir: Path) -> Path:
        """The jobs file: ``store`` (relative to the state dir), else ``cron/jobs.json`` there."""
        return (state_dir / Path(self.store).expanduser()) if self.store else state_dir / "cron" / "jobs.json"
