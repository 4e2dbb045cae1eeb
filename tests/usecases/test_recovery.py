"""The recovery rule of each entry point, applied to a journal and transcripts left by a crash
(usecases/recovery.py). A real gateway object on a temp state dir, not started."""

from __future__ import annotations

from typing import Any

import pytest

from homarus.gateway.app import Gateway
from homarus.messages import AssistantMessage, TextContent, ToolCall, UserMessage
from homarus.usecases.recovery import RULES, recover_runs


def accept(gw: Gateway, run_id: str, kind: str, session: str = "agent:main:s", **request: Any) -> None:
    req = {"runId": run_id, "sessionKey": session, "message": f"message of {run_id}", "lane": "main", **request}
    gw.journal.accept(run_id, kind, {}, session_key=session, agent_id="main", request=req)


def write(gw: Gateway, session: str, run_id: str, *messages: Any, **extra: Any) -> None:
    key = gw.sessions.resolve_key(session)
    ref = gw.sessions.ensure(key)
    rows = [{"type": "message", "message": m.to_json(), "runId": run_id, **extra} for m in messages]
    gw.sessions.transcript_for(ref).append_many(rows)


def tool_call() -> AssistantMessage:
    return AssistantMessage([ToolCall("c1", "exec", {"command": "true"})], stop_reason="toolUse")


def roles(gw: Gateway, session: str, run_id: str) -> list[str]:
    ref = gw.sessions.get(gw.sessions.resolve_key(session))
    assert ref is not None
    entries = gw.sessions.transcript_for(ref).read().entries
    return [e["message"]["role"] for e in entries if e.get("type") == "message" and e.get("runId") == run_id]


def started(gw: Gateway, run_id: str, session: str = "agent:main:s", *, open_call: bool = True) -> None:
    """A run that began: its message written, a tool call open when the gateway died."""
    gw.journal.mark_started(run_id)
    write(gw, session, run_id, UserMessage(f"message of {run_id}"), *([tool_call()] if open_call else []))


@pytest.mark.parametrize(
    "kind", ["agent", "chat", "hook", "channel", "cron", "openai", "openresponses", "heartbeat", "plugin-x"]
)
def test_a_queued_run_follows_its_rule(gw: Gateway, kind: str) -> None:
    accept(gw, "q1", kind, **({"lane": "cron"} if kind == "cron" else {}))
    recovery = recover_runs(gw)
    record = gw.journal.get("q1")
    assert record is not None
    rule = RULES.get(kind)
    if rule is not None and rule.queued == "run":
        assert [(r.run_id, s) for r, s in recovery.to_run] == [("q1", False)]
        assert (record.status, record.state) == ("accepted", "queued")
        assert gw.dedupe.get(f"{kind}:q1").status == "accepted"  # type: ignore[union-attr]
    elif rule is not None and rule.queued == "job":
        assert [(r.run_id, s) for r, s in recovery.cron] == [("q1", False)] and record.status == "accepted"
    else:  # the HTTP caller is gone, a heartbeat comes again, an unknown kind is never run blindly
        assert [r.run_id for r in recovery.interrupted] == ["q1"] and record.status == "interrupted"
        cached = gw.dedupe.get(f"{kind}:q1")
        assert cached is not None and cached.ok is False and cached.status == "interrupted"


@pytest.mark.parametrize(
    ("kind", "notice"),
    [
        ("agent", "This run"),
        ("chat", "This reply"),
        ("openai", "This reply"),
        ("heartbeat", None),
        ("other", "This run"),
    ],
)
def test_a_started_run_that_is_interrupted_closes_its_tool_call_and_says_so(
    gw: Gateway, kind: str, notice: str | None
) -> None:
    accept(gw, "s1", kind)
    started(gw, "s1")
    recovery = recover_runs(gw)
    assert [r.run_id for r in recovery.interrupted] == ["s1"]
    assert gw.journal.get("s1").status == "interrupted"  # type: ignore[union-attr]
    expected = ["user", "assistant", "toolResult"] + (["assistant"] if notice else [])
    assert roles(gw, "agent:main:s", "s1") == expected
    entry = gw.sessions.get(gw.sessions.resolve_key("agent:main:s"))
    assert entry is not None and entry.entry.status == "interrupted"
    assert recovery.summary() == {"requeued": 0, "resumed": 0, "interrupted": 1}


def test_a_started_webhook_run_is_resumed_and_its_transcript_left_for_the_runtime(gw: Gateway) -> None:
    accept(gw, "h1", "hook", lane="cron")
    started(gw, "h1")
    recovery = recover_runs(gw)
    assert [(r.run_id, s) for r, s in recovery.to_run] == [("h1", True)]
    record = gw.journal.get("h1")
    assert record is not None and (record.status, record.resumes, record.state) == ("accepted", 1, "resumed")
    assert roles(gw, "agent:main:s", "h1") == ["user", "assistant"]  # the runtime closes the call on resume
    assert recovery.summary() == {"requeued": 0, "resumed": 1, "interrupted": 0}


@pytest.mark.parametrize(("kind", "resumed"), [("agent", False), ("hook", True)])
def test_a_run_whose_start_record_was_lost_is_taken_as_started_from_its_transcript(
    gw: Gateway, kind: str, resumed: bool
) -> None:
    """The start record is not fsynced: after a power cut the journal may say "accepted" of a run
    whose messages are in the transcript. It began, so it follows the rule of a started run."""
    accept(gw, "p1", kind)
    write(gw, "agent:main:s", "p1", UserMessage("message of p1"), tool_call())  # no mark_started
    accept(gw, "p2", kind)  # accepted only, no trace anywhere: still queued
    recovery = recover_runs(gw)
    if resumed:
        assert [(r.run_id, s) for r, s in recovery.to_run] == [("p1", True), ("p2", False)]
    else:
        assert [r.run_id for r in recovery.interrupted] == ["p1"]
        assert [(r.run_id, s) for r, s in recovery.to_run] == [("p2", False)]
        assert roles(gw, "agent:main:s", "p1") == ["user", "assistant", "toolResult", "assistant"]


@pytest.mark.parametrize("kind", ["agent", "chat", "openai", "heartbeat"])
def test_a_running_run_that_had_answered_is_resumed_for_its_bookkeeping_not_interrupted(gw: Gateway, kind: str) -> None:
    """Its end record is not fsynced (its answer is, in the transcript): a power cut may leave it
    running. Resumed, it only records its end; no notice goes into the session."""
    accept(gw, "a1", kind)
    gw.journal.mark_started("a1")
    write(gw, "agent:main:s", "a1", UserMessage("message of a1"), AssistantMessage([TextContent("done")]))
    recovery = recover_runs(gw)
    assert [(r.run_id, s) for r, s in recovery.to_run] == [("a1", True)] and not recovery.interrupted
    assert roles(gw, "agent:main:s", "a1") == ["user", "assistant"]


def test_runs_are_submitted_in_the_order_they_were_accepted(gw: Gateway) -> None:
    for i, kind in enumerate(["hook", "agent", "chat", "hook"]):
        accept(gw, f"r{i}", kind, session=f"agent:main:s{i % 2}")
    assert [r.run_id for r, _ in recover_runs(gw).to_run] == ["r0", "r1", "r2", "r3"]


def test_a_record_without_its_request_is_interrupted_unless_it_is_an_old_webhook_run(gw: Gateway) -> None:
    gw.journal.accept("old-agent", "agent", {"message": "x"}, session_key="agent:main:s")
    params = {"message": "hi", "sessionKey": "agent:main:hook:x", "path": "agent", "deliver": False}
    gw.journal.accept("old-hook", "hook", params, session_key="agent:main:hook:x")
    recovery = recover_runs(gw)
    assert [r.run_id for r in recovery.interrupted] == ["old-agent"]
    assert [r.run_id for r, _ in recovery.to_run] == ["old-hook"]


def test_a_folded_run_follows_its_host_when_its_message_is_written(gw: Gateway) -> None:
    accept(gw, "host", "hook", lane="cron")
    accept(gw, "guest", "hook", lane="cron")
    gw.journal.mark_started("host", ["guest"])
    write(gw, "agent:main:s", "host", UserMessage("host message"))
    write(gw, "agent:main:s", "guest", UserMessage("guest message"))
    recovery = recover_runs(gw)
    assert [(r.run_id, s) for r, s in recovery.to_run] == [("host", True)]
    assert [r.run_id for r in recovery.followers] == ["guest"]
    guest = gw.journal.get("guest")
    assert guest is not None and (guest.status, guest.joined_to, guest.state) == ("running", "host", "resumed")
    assert recovery.summary() == {"requeued": 0, "resumed": 2, "interrupted": 0}


def test_a_folded_run_whose_message_never_got_written_runs_on_its_own(gw: Gateway) -> None:
    accept(gw, "host", "agent")
    accept(gw, "guest", "agent")
    gw.journal.mark_started("host", ["guest"])
    started(gw, "host", open_call=False)
    recovery = recover_runs(gw)
    assert [r.run_id for r in recovery.interrupted] == ["host"]
    assert [(r.run_id, s) for r, s in recovery.to_run] == [("guest", False)]
    guest = gw.journal.get("guest")
    assert guest is not None and (guest.status, guest.joined_to) == ("accepted", None)


def test_a_folded_run_of_an_interrupted_host_is_interrupted_without_a_second_notice(gw: Gateway) -> None:
    accept(gw, "host", "chat")
    accept(gw, "guest", "chat")
    gw.journal.mark_started("host", ["guest"])
    write(gw, "agent:main:s", "host", UserMessage("a\n---\nb"), joined=["guest"])
    recovery = recover_runs(gw)
    assert sorted(r.run_id for r in recovery.interrupted) == ["guest", "host"]
    assert roles(gw, "agent:main:s", "host") == ["user", "assistant"]  # one notice, the host's
    assert gw.dedupe.get("chat:guest").status == "interrupted"  # type: ignore[union-attr]


def test_finished_runs_past_the_retention_are_pruned_at_start(gw: Gateway, monkeypatch: pytest.MonkeyPatch) -> None:
    from homarus.queue import journal as journal_mod

    monkeypatch.setattr(journal_mod, "_now_ms", lambda: 1_000)
    accept(gw, "ancient", "agent")
    gw.journal.finish("ancient", "ok")
    monkeypatch.undo()
    accept(gw, "fresh", "agent")
    gw.journal.finish("fresh", "ok")
    assert recover_runs(gw).pruned == 1
    assert gw.journal.get("ancient") is None and gw.journal.get("fresh") is not None
