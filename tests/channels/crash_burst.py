"""The crash test every chat channel passes: a burst of messages in several conversations, the
gateway killed with SIGKILL twice in the middle of it, and every message answered exactly once,
in order per conversation, in the end. A channel's test supplies how its fake platform sends a
person's message and what the bot has posted so far."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from tests.fakes import Reply
from tests.fakes.llm_server import FakeLLM, RecordedRequest
from tests.gateway.crash_harness import Crashable, config, user_texts
from tests.waiting import wait_for

__all__ = ["burst_config", "burst_killed_twice", "echo_slowly"]


def burst_config(llm_url: str, channels: dict[str, Any], **more: Any) -> dict[str, Any]:
    """The crash harness's gateway config with ``channels``: a session per conversation and a
    turn per message (each echoed answer then names exactly its message)."""
    cfg = config(llm_url)
    cfg["channels"] = channels
    cfg["session"] = {"dmScope": "per-channel-peer"}
    cfg["messages"] = {"queue": {"mode": "followup"}, "inbound": {"debounceMs": 0}}
    cfg.update(more)
    return cfg


def echo_slowly(llm: FakeLLM) -> None:
    """The model answers each turn with its last user message, after 0.15 s (runs in flight at a kill)."""

    def respond(request: RecordedRequest) -> Reply | None:
        texts = user_texts(request.json)
        return Reply(texts[-1].strip() if texts else "?", delay_s=0.15)

    llm.respond = respond


async def burst_killed_twice(
    box: Crashable,
    conversations: Sequence[str],
    send: Callable[[str, str], object],
    posted: Callable[[], list[tuple[str, str]]],
    *,
    per_conversation: int = 5,
    restarted: Callable[[], object] | None = None,
) -> None:
    """``send(conversation, text)`` ``per_conversation`` messages to each of ``conversations``
    (round robin), kill the running gateway twice mid-burst, and check the answers ``posted()``
    lists as (conversation, text): each message answered once, in order per conversation.
    ``restarted()`` runs after each restart (a platform that calls the gateway learns its new port)."""
    expected = []
    for i in range(per_conversation):
        for n, conversation in enumerate(conversations):
            text = f"msg-{n:02d}-{i}"
            expected.append(text)
            send(conversation, text)

    def answered() -> Counter[str]:
        return Counter(text for _, text in posted() if text.startswith("msg-"))

    await wait_for(lambda: len(answered()) >= 8, timeout=30, what="the first answers")
    box.kill9()  # mid-burst: runs waiting on the model, pieces in the outbox, updates unconfirmed
    first_kill = sum(answered().values())
    box.start()
    if restarted is not None:
        restarted()
    await wait_for(lambda: sum(answered().values()) >= first_kill + 10, timeout=30, what="more answers")
    box.kill9()
    box.start()
    if restarted is not None:
        restarted()
    await wait_for(lambda: len(answered()) == len(expected), timeout=60, what="every answer")
    await asyncio.sleep(1.0)  # anything sent twice would show up now
    counts = answered()
    assert sorted(counts) == sorted(expected)
    assert {t: n for t, n in counts.items() if n != 1} == {}  # exactly once each
    for n, conversation in enumerate(conversations):  # in the order the messages were sent
        mine = [t for c, t in posted() if c == conversation and t.startswith("msg-")]
        assert mine == [f"msg-{n:02d}-{i}" for i in range(per_conversation)], (conversation, mine)
