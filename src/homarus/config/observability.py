"""The ``logging`` section: the audit trail of runs and the raw model stream log."""

from __future__ import annotations

from pydantic import Field

from homarus.config.base import ConfigModel

__all__ = ["AuditConfig", "LoggingConfig"]


class AuditConfig(ConfigModel):
    #: one JSONL per day in ``$STATE/logs`` recording every run, model call and tool call
    enabled: bool = True
    #: a day's file is rotated (``audit-DAY.N.jsonl``) when it would grow past this
    max_file_mb: int = Field(50, ge=1, le=100_000)


class LoggingConfig(ConfigModel):
    audit: AuditConfig = Field(default_factory=AuditConfig)
    #: every provider stream event to ``logs/raw-stream-DAY.jsonl`` (model output verbatim: debugging only)
    raw_stream: bool = False
