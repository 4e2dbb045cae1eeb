"""After a restart: what becomes of the runs the previous process accepted and did not finish.

A run is *queued* when it never began executing (the journal has it ``accepted``) and *started*
when it did (``running``: its lane slot was taken). Each entry point has one rule for each case
(``docs/recovery.md``):

=================  ======================================  ==========================================
entry point        queued                                  started
=================  ======================================  ==========================================
``agent``          runs after the restart, in order        interrupted, a notice in the session
``chat.send``      runs after the restart, in order        interrupted, a notice in the session
``/hooks/*``       runs after the restart, in order        resumed from its transcript
cron               its job runs it after the restart       its job resumes it from its transcript
heartbeat          dropped: the next one is on schedule    interrupted (no notice: it is background)
``/v1/*``          interrupted: its HTTP caller is gone    interrupted, a notice in the session
chat channels      runs after the restart, in order        resumed from its transcript
=================  ======================================  ==========================================

"Interrupted" also records the run's unanswered tool calls as aborted, so nothing that had started
runs again; "resumed" continues with what the transcript holds (``agents/resume.py``). Queued and
resumed runs are submitted in the order they were accepted, so each session keeps its order. A cron
run goes back to its job (``usecases/cron.py``): the scheduler runs the job again at start, and that
run is this one, continued, so its bookkeeping and delivery happen once.

A run *folded* into another (its message steered into a running run, or merged into a queued
prompt: ``joined_to`` in the journal) follows that run when its message is in the transcript: it
ends when and as that run ends (interrupted with it, without a second notice). When its message
never got there (a steered message still waiting in memory), it is a queued run of its own.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Protocol

from homarus.agents.request import RunRequest
from homarus.agents.resume import ResumePoint, close_interrupted, interrupted_notice, resume_point
from homarus.errors import HomarusError
from homarus.usecases.recovery_rules import RULES, UNKNOWN_KIND, Rule

if TYPE_CHECKING:
    from homarus.queue.dedupe import DedupeCache
    from homarus.queue.journal import Journal, RunRecord
    from homarus.sessions.manager import SessionManager
    from homarus.usecases.chat.ports import ChatRunHost
    from homarus.usecases.webhooks import WebhookHost

    class JournalHost(Protocol):
        """What ending a run as interrupted uses: its record, its session, its callers' cache."""

        journal: Journal
        sessions: SessionManager
        dedupe: DedupeCache

    class RecoveryHost(JournalHost, WebhookHost, ChatRunHost, Protocol):
        """What taking up the runs uses: every entry point's way to run one again (the run
        services, sessions, the heartbeat for webhook replies, the channels for chat replies)."""


__all__ = ["JOURNAL_RETENTION_MS", "RULES", "Recovery", "Rule", "recover_runs", "request_for", "resubmit"]

log = logging.getLogger("homarus.gateway")

#: how long a folded run waits for the run it joined to end (a resumed run is bounded by its timeout)
FOLLOW_TIMEOUT_S: Final = 24 * 3600.0
#: finished runs stay in the journal this long (idempotency keys and ``agent.wait`` answer from it)
JOURNAL_RETENTION_MS: Final = 7 * 24 * 3600 * 1000


@dataclass(slots=True)
class Recovery:
    """What the start found, in the order the runs were accepted."""

    #: runs to submit again: (record, whether it resumes a started run)
    to_run: list[tuple[RunRecord, bool]] = field(default_factory=list)
    #: cron runs, for their jobs to take back (``CronRunner.adopt``)
    cron: list[tuple[RunRecord, bool]] = field(default_factory=list)
    #: runs folded into a run that goes on: they end with it
    followers: list[RunRecord] = field(default_factory=list)
    interrupted: list[RunRecord] = field(default_factory=list)
    #: finished runs pruned from the journal (older than the retention)
    pruned: int = 0

    def summary(self) -> dict[str, int]:
        """Counts for ``status`` and the start log."""
        runs = [*self.to_run, *self.cron]
        resumed = sum(1 for _, started in runs if started) + len(self.followers)
        return {
            "requeued": len(runs) + len(self.followers) - resumed,
            "resumed": resumed,
            "interrupted": len(self.interrupted),
        }

    def interrupt(self, host: JournalHost, runs: list[tuple[RunRecord, bool]]) -> None:
        """End each (record, started) by its rule's "interrupt" (also a handed-over run nobody took;
        blocking: run it in a worker thread). ``started`` false: no transcript to close."""
        for record, started in runs:
            rule = RULES.get(record.kind, UNKNOWN_KIND)
            _interrupt(host, record, rule, started)
            self.interrupted.append(host.journal.interrupt(record.run_id, rule.reason) or record)


def recover_runs(host: JournalHost) -> Recovery:
    """Apply each unfinished run's rule (blocking: run it in a worker thread)."""
    recovery = Recovery()
    journal = host.journal
    recovery.pruned = journal.prune(JOURNAL_RETENTION_MS)
    folded: list[RunRecord] = []
    for record in journal.unfinished():
        started = record.status == "running"
        point: ResumePoint | None = None
        if not started and record.joined_to is None and record.session_key is not None:
            # its start record, not synced, died with a power cut: its transcript says it began
            point = _point(host, record)
            started = point.started
        if started and record.joined_to is not None:
            if _message_is_in(host, record):
                folded.append(record)
                continue
            started = False  # its message never reached the run it joined: it is still to do
        _apply_rule(host, recovery, record, started, point)
    for record in folded:  # after the rules: their hosts' fate is known now
        joined = journal.get(record.joined_to or "")
        if joined is None or joined.status == "interrupted":
            recovery.interrupt(host, [(record, False)])  # the host's notice speaks for both
        else:
            recovery.followers.append(journal.requeue(record.run_id, follower=True) or record)
            host.dedupe.put(f"{record.kind}:{record.run_id}", "accepted")
    counts = recovery.summary()
    if any(counts.values()):
        log.warning(
            "runs left unfinished by the last shutdown: %(requeued)d queued again, %(resumed)d resumed, "
            "%(interrupted)d interrupted",
            counts,
        )
    return recovery


def _apply_rule(
    host: JournalHost, recovery: Recovery, record: RunRecord, started: bool, point: ResumePoint | None = None
) -> None:
    """``point``: where the run stands in its transcript, when the caller read it already."""
    rule = RULES.get(record.kind, UNKNOWN_KIND)
    action = rule.started if started else rule.queued
    answered = action == "interrupt" and started and record.kind in RULES
    if answered and (point or _point(host, record)).final is not None:
        # it had answered (its end record, not synced, died with a power cut): resuming it only
        # does the bookkeeping, no model call, so it ends as it did, not as interrupted
        action = "resume"
    if action != "interrupt" and request_for(host, record, resume=started) is not None:
        updated = host.journal.requeue(record.run_id) or record
        host.dedupe.put(f"{record.kind}:{record.run_id}", "accepted")
        (recovery.cron if action == "job" else recovery.to_run).append((updated, started))
        return
    recovery.interrupt(host, [(record, started)])


def _message_is_in(host: JournalHost, record: RunRecord) -> bool:
    """Whether the run's message (a folded run's: in the run it joined) reached its session's transcript."""
    return _point(host, record).started


def _point(host: JournalHost, record: RunRecord) -> ResumePoint:
    """Where the run stands in its session's transcript (nothing: no session, or not in it)."""
    try:
        ref = host.sessions.get(host.sessions.resolve_key(record.session_key))
    except HomarusError:
        return ResumePoint()
    if ref is None:
        return ResumePoint()
    return resume_point(host.sessions.transcript_for(ref).read().entries, record.run_id)


def _interrupt(host: JournalHost, record: RunRecord, rule: Rule, started: bool) -> None:
    """Close the run's transcript (aborted tool calls, the notice) and tell its session and callers."""
    if record.session_key is not None:
        try:
            key = host.sessions.resolve_key(record.session_key)
            ref = host.sessions.get(key)
            if ref is not None and started:
                notice = interrupted_notice(rule.notice) if rule.notice else None
                close_interrupted(host.sessions.transcript_for(ref), record.run_id, notice)
                host.sessions.update_entry(key, {"status": "interrupted", "abortedLastRun": True})
        except HomarusError:
            log.warning("interrupted run %s names an unusable session %s", record.run_id, record.session_key)
    host.dedupe.put(
        f"{record.kind}:{record.run_id}",
        "interrupted",
        ok=False,
        error={"code": "UNAVAILABLE", "message": rule.reason},
    )


def request_for(host: JournalHost, record: RunRecord, *, resume: bool) -> RunRequest | None:
    """The run request to submit ``record`` again, or None when the record cannot give one."""
    try:
        key = host.sessions.resolve_key(record.session_key)
        if record.request is not None:
            return RunRequest.from_json(record.request, key, resume=resume)
        if record.kind == "hook":  # accepted by a version that kept only the webhook's params
            from homarus.usecases.webhooks import request_of

            req = request_of(host.sessions, record.run_id, record.params)
            req.resume = resume
            return req
    except (HomarusError, KeyError, TypeError, ValueError) as exc:
        log.error("run %s cannot be submitted again: %s", record.run_id, exc)
    return None


async def resubmit(host: RecoveryHost, recovery: Recovery) -> None:
    """Submit the queued and resumed runs, in the order they were accepted (each session's lane is
    FIFO, so a session's runs keep their order); folded runs wait for the run they joined."""
    from homarus.usecases.runs import run_and_finish
    from homarus.usecases.webhooks import run_and_deliver

    for record, started in recovery.to_run:
        req = request_for(host, record, resume=started)
        if req is None:  # checked in recover_runs; a session removed since then lands here
            continue
        if started:
            log.warning("resuming run %s (%s) from its transcript", record.run_id, record.kind)
        if record.kind == "hook":
            _ = host.spawn(run_and_deliver(host, req, record.params))
        elif record.kind == "channel":
            from homarus.usecases.chat import runs as channel_runs

            _ = host.spawn(channel_runs.run_and_deliver(host, req))
        else:
            _ = host.spawn(run_and_finish(host, req, record.kind))
    for record in recovery.followers:
        _ = host.spawn(_follow(host, record))


async def _follow(host: RecoveryHost, record: RunRecord) -> None:
    """End a folded run as the run it joined ends."""
    from homarus.agents.runs import RunOutcome
    from homarus.usecases.runs import record_end

    joined_id = record.joined_to or ""
    joined = host.journal.get(joined_id)
    if joined is not None and not joined.terminal:
        await host.run_events.wait_recorded(joined_id, FOLLOW_TIMEOUT_S)  # its end stored, not only announced
        joined = host.journal.get(joined_id)
    if joined is None or not joined.terminal:
        log.error("run %s: the run it joined (%s) did not end; it stays unfinished", record.run_id, joined_id)
        return
    error = (joined.error.get("message") or joined.error.get("reason")) if isinstance(joined.error, dict) else None
    status = joined.status if joined.status in ("ok", "error", "timeout", "aborted") else "error"
    outcome = RunOutcome(
        record.run_id,
        record.session_key or "",
        status,  # type: ignore[arg-type]  # narrowed by the check above
        started_at=record.started_at or joined.started_at or 0,
        ended_at=joined.ended_at or 0,
        error=error if status != "ok" else None,
    )
    payload = {**joined.result, "runId": record.run_id} if isinstance(joined.result, dict) else {"runId": record.run_id}
    await record_end(host, record.kind, record.run_id, status, payload, outcome)
