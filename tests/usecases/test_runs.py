"""Running an accepted run to its end (usecases/runs.py): the journal's end record of a run that
answered rides in its last trip to the lane, unsynced; a failed run's is synced. A real
gateway object (built-in echo model) on a temp state dir, not started."""

from __future__ import annotations

import asyncio

from homarus.agents.request import RunRequest
from homarus.gateway.app import Gateway
from homarus.group_commit import GroupCommitter
from homarus.queue.journal import RunJournal
from homarus.usecases.runs import run_and_finish, start_run


async def _run(gw: Gateway, run_id: str, model: str | None = None) -> str:
    req = RunRequest(run_id=run_id, session_key=gw.sessions.resolve_key("agent:main:s"), message="hi", model=model)
    await start_run(gw, req, "agent", {}, admit=True)
    outcome = await run_and_finish(gw, req, "agent")
    return outcome.status


def _writer(gw: Gateway) -> GroupCommitter:
    journal = gw.journal
    assert isinstance(journal, RunJournal)  # the embedded one: its group commit is what is measured
    return journal._writer


def test_an_answered_run_ends_in_the_journal_without_a_sync_of_its_own(gw: Gateway) -> None:
    async def main() -> None:
        await _run(gw, "r0")  # opens the stores
        writer = _writer(gw)
        commits, unsynced = writer.commits, writer.unsynced_commits
        assert await _run(gw, "r1") == "ok"
        record = gw.journal.get("r1")
        assert record is not None and record.status == "ok"
        assert record.result is not None and record.result["status"] == "ok"
        # accepted synced; started and ended unsynced: the transcript (synced) shows both
        assert (writer.commits - commits, writer.unsynced_commits - unsynced) == (3, 2)
        assert gw.dedupe.get("agent:r1") is not None

    asyncio.run(main())


def test_a_failed_run_ends_synced(gw: Gateway) -> None:
    async def main() -> None:
        await _run(gw, "r0")
        writer = _writer(gw)
        commits, unsynced = writer.commits, writer.unsynced_commits
        status = await _run(gw, "r2", model="nowhere/none")
        assert status == "error"
        record = gw.journal.get("r2")
        assert record is not None and record.status == "error"
        assert (writer.commits - commits, writer.unsynced_commits - unsynced) == (3, 1)  # only the start

    asyncio.run(main())


def test_an_openai_api_run_is_accepted_without_a_sync(gw: Gateway) -> None:
    """The restart would only mark it interrupted (its HTTP caller is gone): its acceptance is not
    worth an fsync, unlike an ``agent`` run's, which the restart runs."""

    async def main() -> None:
        await _run(gw, "r0")
        writer = _writer(gw)
        for kind, synced in (("openai", False), ("agent", True)):
            unsynced = writer.unsynced_commits
            req = RunRequest(run_id=f"{kind}-1", session_key=gw.sessions.resolve_key("agent:main:s"), message="hi")
            await start_run(gw, req, kind, {}, admit=True)
            assert writer.unsynced_commits - unsynced == (0 if synced else 1)
            assert gw.journal.get(req.run_id) is not None

    asyncio.run(main())
