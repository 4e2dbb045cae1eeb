"""Memory does not grow with history: the parsed transcripts a SessionManager keeps in memory are
bounded in bytes (``session.transcriptCacheMb``); the least recently used are forgotten and read
again from their files, correctly, when next needed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from homarus.sessions.manager import SessionManager


def _user(text: str) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "user", "content": text}}


def test_the_cached_transcripts_fit_their_byte_budget_newest_kept(tmp_path: Path) -> None:
    mgr = SessionManager(tmp_path / "state", transcript_cache_bytes=20_000)
    refs = []
    for i in range(40):
        ref = mgr.ensure(mgr.resolve_key(f"agent:main:s{i}"))
        t = mgr.transcript_for(ref)
        t.append_many([_user(f"s{i} message {n} " + "x" * 200) for n in range(5)])
        t.read()  # parsed and cached (about 1.5 KB each)
        refs.append(ref)
    handles = [mgr.transcript_for(r) for r in refs]  # in order: the last is the most recent
    assert sum(h.cached_bytes for h in handles) > 20_000  # over budget until trimmed
    kept = mgr.trim_transcript_cache()
    assert kept <= 20_000 and kept == sum(h.cached_bytes for h in handles)
    assert handles[0].cached_bytes == 0 and handles[-1].cached_bytes > 0  # the oldest went first
    # a forgotten transcript reads and appends as before, from its file
    forgotten = handles[0]
    assert [e["message"]["content"][:13] for e in forgotten.read().entries] == [f"s0 message {n} " for n in range(5)]
    forgotten.forget_cache()
    (written,) = forgotten.append_many([_user("after")])
    ids = [e.get("id") for e in forgotten.read().entries]
    assert written["id"] == ids[-1] and len(set(ids)) == len(ids)


def test_the_budget_is_kept_as_sessions_are_used_without_an_explicit_trim(tmp_path: Path) -> None:
    mgr = SessionManager(tmp_path / "state", transcript_cache_bytes=10_000)
    for i in range(300):
        ref = mgr.ensure(mgr.resolve_key(f"agent:main:s{i}"))
        t = mgr.transcript_for(ref)
        t.append_many([_user("y" * 500)])
        t.read()
    cached = mgr.retained()["transcriptCacheBytes"]
    assert cached <= 10_000 + 64 * 2_000  # trimmed every 64 lookups: at most that many added since
    assert mgr.trim_transcript_cache() <= 10_000
