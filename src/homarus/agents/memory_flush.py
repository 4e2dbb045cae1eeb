"""The silent pre-compaction memory flush: one turn that stores what must survive the summary.

When a session's context nears the compaction threshold (``memoryFlush.softThresholdTokens``
before it), the next turn asks the agent to append durable notes to ``memory/YYYY-MM-DD.md`` and
otherwise answer ``NO_REPLY``. It runs once per compaction cycle: the session entry records the
``compactionCount`` it ran for. The caller queues the turn; this module decides and records.
"""

from __future__ import annotations

import asyncio
import time
from typing import Final

from homarus.agents import compaction
from homarus.config.agents import CompactionConfig
from homarus.sessions.keys import SessionKey
from homarus.sessions.manager import SessionManager

__all__ = ["MEMORY_FLUSH_PROMPT", "MEMORY_FLUSH_TRIGGER", "claim_memory_flush", "flush_prompt"]

MEMORY_FLUSH_TRIGGER: Final = "memory-flush"
#: the silent turn before compaction (the reference's wording: store what must survive, else NO_REPLY)
MEMORY_FLUSH_PROMPT: Final = (
    "Pre-compaction memory flush: the older part of this conversation is about to be summarised. "
    "Store durable memories now — decisions, facts about the user, open tasks — by appending them to "
    "memory/{day}.md in the workspace (create memory/ if needed; keep what is already there). "
    "If nothing needs storing, reply with NO_REPLY only."
)


def flush_prompt() -> str:
    return MEMORY_FLUSH_PROMPT.format(day=time.strftime("%Y-%m-%d", time.localtime()))


async def claim_memory_flush(
    sessions: SessionManager, key: SessionKey, cfg: CompactionConfig, *, tokens: int, window: int, trigger: str
) -> bool:
    """True when the flush turn is due now and not yet run this cycle (the claim is recorded)."""
    flush = cfg.memory_flush
    if not flush.enabled or trigger == MEMORY_FLUSH_TRIGGER or key.subagent_depth:
        return False
    if not compaction.memory_flush_due(tokens, window, cfg.reserve_tokens_floor, flush.soft_threshold_tokens):
        return False
    ref = await asyncio.to_thread(sessions.get, key)
    if ref is None:
        return False
    cycle = ref.entry.compaction_count or 0
    if ref.entry.memory_flush_compaction_count == cycle:
        return False  # already flushed since the last compaction
    changes = {"memoryFlushCompactionCount": cycle, "memoryFlushAt": int(time.time() * 1000)}
    await asyncio.to_thread(sessions.update_entry, key, changes, touch=False)
    return True
