"""Tests for JSONL transcripts: header, validated appends, tool-call pairing, torn tails, failures."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from homarus.errors import InvalidRequest
from homarus.locking import LockTimeout
from homarus.sessions.transcript import Transcript, TranscriptWriteError, iso_now

ISO_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
HEX8 = re.compile(r"^[0-9a-f]{8}$")


def user(text: str = "hi") -> dict[str, Any]:
    return {"type": "message", "message": {"role": "user", "content": text}}


def assistant_text(text: str = "hello") -> dict[str, Any]:
    return {"type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}}


def tool_call(call_id: str, name: str = "read") -> dict[str, Any]:
    return {
        "type": "message",
        "message": {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": call_id, "name": name, "arguments": {"path": "a.txt"}}],
            "stopReason": "toolUse",
        },
    }


def tool_result(call_id: str, name: str = "read") -> dict[str, Any]:
    return {
        "type": "message",
        "message": {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": name,
            "content": [{"type": "text", "text": "contents"}],
            "isError": False,
        },
    }


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


@pytest.fixture
def t(tmp_path: Path) -> Transcript:
    tr = Transcript(tmp_path / "sessions" / "s1.jsonl", lock_timeout=2)
    tr.create("s1", cwd="/work")
    return tr


# -- header -------------------------------------------------------------------------------------


def test_create_writes_version_3_header(tmp_path: Path) -> None:
    tr = Transcript(tmp_path / "sessions" / "abc.jsonl")
    assert not tr.exists()
    assert tr.read().header is None
    tr.create("abc", cwd="/home/me", parent_session="parent.jsonl")
    raw = tr.path.read_bytes()
    assert raw.startswith(b'{"type":"session","version":3,"id":"abc",')
    assert raw.endswith(b"\n")
    assert raw.count(b"\n") == 1
    header = json.loads(raw)
    assert header["cwd"] == "/home/me"
    assert header["parentSession"] == "parent.jsonl"
    assert ISO_RE.match(header["timestamp"])
    assert tr.path.stat().st_mode & 0o777 == 0o600
    assert tr.path.parent.stat().st_mode & 0o777 == 0o700
    view = tr.read()
    assert view.header == header
    assert view.entries == []
    assert view.torn_tail == b""
    assert view.bad_lines == []


def test_create_defaults_cwd_to_empty_and_omits_parent(tmp_path: Path) -> None:
    tr = Transcript(tmp_path / "x.jsonl")
    tr.create("x")
    header = json.loads(tr.path.read_bytes())
    assert set(header) == {"type", "version", "id", "timestamp", "cwd"}
    assert header["cwd"] == ""


def test_create_is_a_noop_when_file_exists(t: Transcript) -> None:
    t.append(user())
    before = t.path.read_bytes()
    t.create("other-id", cwd="/elsewhere")
    assert t.path.read_bytes() == before


def test_append_requires_existing_transcript(tmp_path: Path) -> None:
    tr = Transcript(tmp_path / "missing.jsonl")
    with pytest.raises(InvalidRequest, match=r"transcript missing\.jsonl does not exist; create it first"):
        tr.append(user())
    assert not tr.path.exists()


# -- appends ------------------------------------------------------------------------------------


def test_append_assigns_id_parent_and_timestamp(t: Transcript) -> None:
    first = t.append(user("one"))
    second = t.append(assistant_text("two"))
    third = t.append(user("three"))
    assert HEX8.match(first["id"])
    assert HEX8.match(second["id"])
    assert len({first["id"], second["id"], third["id"]}) == 3
    assert first["parentId"] is None
    assert second["parentId"] == first["id"]
    assert third["parentId"] == second["id"]
    for e in (first, second, third):
        assert ISO_RE.match(e["timestamp"])
        datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00"))
    on_disk = lines(t.path)
    assert on_disk[0]["type"] == "session"
    assert on_disk[1:] == [first, second, third]
    assert t.read().entries == [first, second, third]


def test_append_does_not_mutate_the_callers_dict(t: Transcript) -> None:
    raw = user()
    t.append(raw)
    assert raw == user()


def test_append_keeps_explicit_id_parent_timestamp_and_unknown_fields(t: Transcript) -> None:
    first = t.append({**user(), "id": "0000000a", "timestamp": "2025-01-01T00:00:00.000Z", "extra": [1]})
    assert first == {
        **user(),
        "id": "0000000a",
        "parentId": None,
        "timestamp": "2025-01-01T00:00:00.000Z",
        "extra": [1],
    }
    branch = t.append({**user("branch"), "parentId": None})
    assert branch["parentId"] is None
    child = t.append({**user("child"), "parentId": "0000000a"})
    assert child["parentId"] == "0000000a"


def test_other_entry_types_are_accepted(t: Transcript) -> None:
    m = t.append(user())
    t.append({"type": "model_change", "provider": "openai", "modelId": "gpt-x"})
    t.append({"type": "label", "label": "important", "targetId": m["id"]})
    t.append({"type": "custom", "customType": "note", "data": {"a": 1}})
    t.append({"type": "compaction", "summary": "s", "firstKeptEntryId": m["id"], "tokensBefore": 10})
    t.append({"type": "thinking_level_change", "thinkingLevel": "high"})
    assert [e["type"] for e in t.read().entries] == [
        "message",
        "model_change",
        "label",
        "custom",
        "compaction",
        "thinking_level_change",
    ]


def test_user_content_blocks(t: Transcript) -> None:
    entry = {
        "type": "message",
        "message": {
            "role": "user",
            "content": [{"type": "text", "text": "look"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}],
        },
    }
    assert t.append(entry)["message"] == entry["message"]


@pytest.mark.parametrize(
    ("entry", "where"),
    [
        ({"type": "bogus"}, ": Input tag 'bogus' found using 'type' does not match"),
        ({"message": {"role": "user", "content": "x"}}, ": Unable to extract tag using discriminator 'type'"),
        ({"type": "message", "message": {"role": "system", "content": "x"}}, "message.message: Input tag 'system'"),
        (
            {"type": "message", "message": {"role": "assistant", "content": "plain string"}},
            "message.message.assistant.content",
        ),
        (
            {
                "type": "message",
                "message": {"role": "assistant", "content": [{"type": "toolCall", "name": "read", "arguments": {}}]},
            },
            "message.message.assistant.content.0.toolCall.id",
        ),
        (
            {
                "type": "message",
                "message": {
                    "role": "assistant",
                    "content": [{"type": "toolCall", "id": "c", "name": "read", "arguments": "{}"}],
                },
            },
            "message.message.assistant.content.0.toolCall.arguments",
        ),
        ({"type": "message", "message": {"role": "user", "content": 5}}, "message.message.user.content"),
        ({"type": "message", "message": {"role": "user", "content": "x"}, "id": "NOT-HEX"}, "message.id"),
        (
            {"type": "compaction", "summary": "s", "firstKeptEntryId": "x", "tokensBefore": -1},
            "compaction.tokensBefore",
        ),
        ({"type": "message"}, "message.message: Field required"),
        ({"type": "message", "message": {"role": "user", "content": "x"}, "id": ["a"]}, "message.id"),
        ({"type": "message", "message": {"role": "user", "content": "x"}, "parentId": {"a": 1}}, "message.parentId"),
    ],
)
def test_invalid_entries_are_refused_and_nothing_written(t: Transcript, entry: dict[str, Any], where: str) -> None:
    t.append(user())
    before = t.path.read_bytes()
    with pytest.raises(InvalidRequest, match="invalid transcript entry at") as info:
        t.append(entry)
    assert info.value.message.startswith(f"invalid transcript entry at {where}")
    assert t.path.read_bytes() == before
    # the refusal did not disturb the state: the next append chains to the last good entry
    nxt = t.append(user("after"))
    assert nxt["parentId"] == lines(t.path)[1]["id"]


def test_duplicate_explicit_id_is_refused(t: Transcript) -> None:
    t.append({**user(), "id": "deadbeef"})
    before = t.path.read_bytes()
    with pytest.raises(InvalidRequest, match="duplicate transcript entry id 'deadbeef'"):
        t.append({**user("again"), "id": "deadbeef"})
    assert t.path.read_bytes() == before


def test_duplicate_id_within_one_batch_is_refused(t: Transcript) -> None:
    before = t.path.read_bytes()
    with pytest.raises(InvalidRequest, match="duplicate transcript entry id '0000beef'"):
        t.append_many([{**user(), "id": "0000beef"}, {**user(), "id": "0000beef"}])
    assert t.path.read_bytes() == before


def test_unknown_parent_id_is_refused(t: Transcript) -> None:
    t.append(user())
    before = t.path.read_bytes()
    with pytest.raises(InvalidRequest, match="parentId 'cafebabe' is not an entry of this transcript"):
        t.append({**user(), "parentId": "cafebabe"})
    assert t.path.read_bytes() == before


# -- tool calls and results ---------------------------------------------------------------------


def test_tool_result_without_tool_call_is_refused(t: Transcript) -> None:
    t.append(user())
    before = t.path.read_bytes()
    with pytest.raises(InvalidRequest, match="tool result for 'call-1' has no matching tool call"):
        t.append(tool_result("call-1"))
    assert t.path.read_bytes() == before


def test_tool_result_answering_twice_is_refused(t: Transcript) -> None:
    t.append(tool_call("call-1"))
    t.append(tool_result("call-1"))
    before = t.path.read_bytes()
    with pytest.raises(InvalidRequest, match="tool result for 'call-1' was already answered"):
        t.append(tool_result("call-1"))
    assert t.path.read_bytes() == before


def test_tool_result_answering_twice_detected_after_reload(t: Transcript) -> None:
    t.append(tool_call("call-1"))
    t.append(tool_result("call-1"))
    fresh = Transcript(t.path, lock_timeout=2)
    with pytest.raises(InvalidRequest, match="was already answered"):
        fresh.append(tool_result("call-1"))


def test_tool_call_and_result_in_one_batch(t: Transcript) -> None:
    call, result = t.append_many([tool_call("c1"), tool_result("c1")])
    assert result["parentId"] == call["id"]
    assert [e["message"]["role"] for e in t.read().entries] == ["assistant", "toolResult"]


def test_tool_result_for_call_in_earlier_append(t: Transcript) -> None:
    t.append(tool_call("c1"))
    t.append(user("interleaved"))
    assert t.append(tool_result("c1"))["message"]["toolCallId"] == "c1"


def test_batch_with_one_bad_entry_writes_nothing(t: Transcript) -> None:
    t.append(user())
    before = t.path.read_bytes()
    with pytest.raises(InvalidRequest, match="tool result for 'c9' has no matching tool call"):
        t.append_many([tool_call("c1"), tool_result("c1"), tool_result("c9")])
    assert t.path.read_bytes() == before
    # the half-staged batch did not leak into the cached state: c1 is still unknown
    with pytest.raises(InvalidRequest, match="tool result for 'c1' has no matching tool call"):
        t.append(tool_result("c1"))
    with pytest.raises(InvalidRequest):
        t.append_many([user("fine"), {"type": "bogus"}])
    assert t.path.read_bytes() == before


def test_batch_is_one_write(t: Transcript) -> None:
    out = t.append_many([user("a"), assistant_text("b"), user("c")])
    assert [e["parentId"] for e in out[1:]] == [out[0]["id"], out[1]["id"]]
    assert lines(t.path)[1:] == out


def test_empty_batch_writes_nothing(t: Transcript) -> None:
    before = t.path.read_bytes()
    assert t.append_many([]) == []
    assert t.path.read_bytes() == before


# -- torn tails ---------------------------------------------------------------------------------


def test_torn_last_line_is_ignored_and_set_aside(t: Transcript, monkeypatch: pytest.MonkeyPatch) -> None:
    a = t.append(user("a"))
    b = t.append(user("b"))
    good = t.path.read_bytes()
    torn = b'{"type":"message","message":{"role":"us'
    with open(t.path, "ab") as f:
        f.write(torn)
    view = t.read()
    assert view.entries == [a, b]
    assert view.torn_tail == torn
    assert view.bad_lines == []
    assert view.header is not None

    monkeypatch.setattr("homarus.sessions.transcript.time.time", lambda: 1700000000.123)
    c = t.append(user("c"))
    monkeypatch.undo()
    sidecar = t.path.with_name("s1.jsonl.torn.1700000000123")
    assert sidecar.read_bytes() == torn
    assert sidecar.stat().st_mode & 0o777 == 0o600
    assert c["parentId"] == b["id"]
    raw = t.path.read_bytes()
    assert raw.startswith(good)
    assert raw.endswith(b"\n")
    parsed = lines(t.path)  # every line parses
    assert parsed[1:] == [a, b, c]
    assert t.read().torn_tail == b""


def test_torn_tail_appended_by_another_writer_after_caching(t: Transcript) -> None:
    t.append(user("a"))  # state cached
    with open(t.path, "ab") as f:
        f.write(b'{"half')
    c = t.append(user("c"))
    assert lines(t.path)[-1] == c
    assert len(list(t.path.parent.glob("s1.jsonl.torn.*"))) == 1


def test_bad_complete_line_is_reported(t: Transcript) -> None:
    t.append(user("a"))
    with open(t.path, "ab") as f:
        f.write(b"garbage\n[1,2]\n")
    view = t.read()
    assert view.bad_lines == [3, 4]
    assert len(view.entries) == 1


# -- other writers ------------------------------------------------------------------------------


def test_append_by_another_object_is_picked_up(t: Transcript) -> None:
    a = t.append(user("a"))
    other = Transcript(t.path, lock_timeout=2)
    b = other.append(tool_call("c1"))
    assert b["parentId"] == a["id"]
    c = t.append(tool_result("c1"))  # knows about the call the other object wrote
    assert c["parentId"] == b["id"]
    with pytest.raises(InvalidRequest, match="duplicate transcript entry id"):
        t.append({**user(), "id": b["id"]})
    assert [e["id"] for e in Transcript(t.path).read().entries] == [a["id"], b["id"], c["id"]]


def test_a_lock_held_by_another_process_is_waited_for_and_dropped_when_it_dies(tmp_path: Path) -> None:
    t = Transcript(tmp_path / "s1.jsonl", lock_timeout=0.5)
    t.create("s1")
    a = t.append(user("a"))
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time\n"
            "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\n"
            "time.sleep(60)\n",
            str(t.path),
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        with pytest.raises(LockTimeout, match=r"timed out after 0\.5s waiting for .*s1\.jsonl"):
            t.append(user("b"))
        assert lines(t.path)[1:] == [a]  # nothing written while another process held the file
        holder.kill()  # SIGKILL: the kernel drops its lock, no stale lock file to break
        holder.wait()
        b = t.append(user("b"))
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    assert lines(t.path)[1:] == [a, b]
    assert not list(tmp_path.glob("*.lock"))


# -- write failures -----------------------------------------------------------------------------


def _fail_half_writes_to(monkeypatch: pytest.MonkeyPatch, target: Path) -> list[int]:
    real_write = os.write
    calls: list[int] = []

    def half_then_enospc(fd: int, data: Any) -> int:
        if os.readlink(f"/proc/self/fd/{fd}") == str(target):
            calls.append(len(data))
            real_write(fd, bytes(data[: max(1, len(data) // 2)]))
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr("homarus.sessions.transcript.os.write", half_then_enospc)
    return calls


def test_write_failure_leaves_file_identical(t: Transcript, monkeypatch: pytest.MonkeyPatch) -> None:
    a = t.append(user("a"))
    before = t.path.read_bytes()
    calls = _fail_half_writes_to(monkeypatch, t.path)
    with pytest.raises(TranscriptWriteError, match=r"cannot append to transcript s1\.jsonl: No space left on device"):
        t.append_many([tool_call("c1"), tool_result("c1")])
    assert calls  # the failure really happened mid-write
    assert t.path.read_bytes() == before
    monkeypatch.undo()
    assert not (t.path.parent / "s1.jsonl.lock").exists()
    # nothing of the failed batch is remembered
    with pytest.raises(InvalidRequest, match="has no matching tool call"):
        t.append(tool_result("c1"))
    b = t.append(user("b"))
    assert b["parentId"] == a["id"]
    assert lines(t.path)[1:] == [a, b]


def test_create_failure_removes_partial_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tr = Transcript(tmp_path / "s.jsonl")
    _fail_half_writes_to(monkeypatch, tr.path)
    with pytest.raises(TranscriptWriteError, match=r"cannot create transcript s\.jsonl"):
        tr.create("s")
    assert not tr.path.exists()


def test_iso_now_format() -> None:
    assert ISO_RE.match(iso_now())


def test_an_unsynced_append_is_read_at_once_and_made_durable_by_the_next_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tr = Transcript(tmp_path / "u.jsonl")
    tr.create("u1")
    synced: list[int] = []
    real = os.fsync

    def counting_fsync(fd: int) -> None:
        synced.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)

    def pending() -> bool:
        return tr.unsynced

    tr.append_many([user("a")], synced=False)
    assert synced == [] and pending()
    assert [e["message"]["content"] for e in Transcript(tr.path).read().entries] == ["a"]  # another reader sees it
    tr.sync()
    assert len(synced) == 1 and not pending()
    tr.sync()
    assert len(synced) == 1  # nothing left to make durable
    tr.append_many([assistant_text("b")], synced=False)
    tr.append(user("c"))  # a synced append covers the lines before it
    assert len(synced) == 2 and not pending()
