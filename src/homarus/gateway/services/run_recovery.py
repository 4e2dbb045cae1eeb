"""After a restart: runs the previous process accepted but never finished.

They are marked interrupted, visibly, on their session and in the idempotency cache (a client
retrying the same key learns it was interrupted). Webhook runs that were accepted but never
started are then run again by :func:`homarus.gateway.hooks_http.resume_hook_runs`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from homarus.errors import HomarusError

if TYPE_CHECKING:
    from homarus.gateway.context import GatewayContext
    from homarus.queue.journal import RunRecord

__all__ = ["recover_runs"]

log = logging.getLogger("homarus.gateway")


def recover_runs(gateway: GatewayContext) -> list[RunRecord]:
    """Mark what the last process left unfinished as interrupted (blocking: run it in a thread)."""
    interrupted = gateway.journal.recover()
    dedupe = gateway.dedupe
    for run in interrupted:
        if run.session_key is None:
            continue
        try:
            key = gateway.sessions.resolve_key(run.session_key)
            gateway.sessions.update_entry(key, {"status": "interrupted", "abortedLastRun": True})
        except HomarusError:
            log.warning("interrupted run %s names an unusable session %s", run.run_id, run.session_key)
        dedupe.put(
            f"{run.kind}:{run.run_id}",
            "interrupted",
            ok=False,
            error={"code": "UNAVAILABLE", "message": "interrupted by a gateway restart"},
        )
    if interrupted:
        log.warning("%d accepted run(s) were interrupted by the last shutdown", len(interrupted))
    return interrupted
