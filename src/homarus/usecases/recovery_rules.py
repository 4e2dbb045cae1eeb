"""Each entry point's rule for the runs a restart finds unfinished (the table of
``usecases/recovery.py``, which applies it): apart, so that accepting a run can ask whether a
restart would run it again without importing the recovery itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["RULES", "UNKNOWN_KIND", "Rule", "rerun_when_queued"]


@dataclass(frozen=True, slots=True)
class Rule:
    #: a run that never began: run it now, hand it to its cron job, or end it interrupted
    queued: Literal["run", "job", "interrupt"]
    #: a run that began: continue it from its transcript (itself or through its cron job), or end it
    started: Literal["resume", "job", "interrupt"]
    #: what the visible notice of an interrupted started run names (None: no notice)
    notice: str | None
    #: why it is not run again, for agent.wait and the logs
    reason: str = "interrupted by a gateway restart"


RULES: Final[dict[str, Rule]] = {
    "agent": Rule("run", "interrupt", "This run"),
    "chat": Rule("run", "interrupt", "This reply"),
    "hook": Rule("run", "resume", None),
    "cron": Rule("job", "job", None, "interrupted by a gateway restart; its cron job is gone or disabled"),
    "heartbeat": Rule("interrupt", "interrupt", None, "interrupted by a gateway restart; heartbeats go on"),
    "openai": Rule("interrupt", "interrupt", "This reply", "interrupted: its HTTP caller left with the restart"),
    "openresponses": Rule("interrupt", "interrupt", "This reply", "interrupted: its HTTP caller left with the restart"),
    # the chat channel layer's inbound runs: fire-and-forget like webhooks
    "channel": Rule("run", "resume", None),
}
#: kinds this version does not know (a newer version's, a plugin's): never run blindly
UNKNOWN_KIND: Final = Rule("interrupt", "interrupt", "This run", "interrupted by a gateway restart (unknown kind)")


def rerun_when_queued(kind: str) -> bool:
    """Whether a restart runs (or hands to its job) a run of ``kind`` that had not begun: only then
    is its acceptance worth an fsync."""
    return RULES.get(kind, UNKNOWN_KIND).queued != "interrupt"
