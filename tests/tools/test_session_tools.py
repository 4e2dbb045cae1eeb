"""``sessions_list`` / ``sessions_history`` on a real session store: an owner's run reads any
session of its agent; a run sent by someone else sees and reads its own session only."""

from __future__ import annotations

from pathlib import Path

import pytest

from homarus.errors import Forbidden
from homarus.messages import TextContent
from homarus.sessions.keys import parse_session_key
from homarus.sessions.manager import SessionManager
from homarus.tools.base import ToolContext, ToolServices
from homarus.tools.session_tools import session_tools

TOOLS = {t.name: t for t in session_tools()}
MINE = "agent:main:telegram:direct:222"


def store(tmp_path: Path) -> SessionManager:
    mgr = SessionManager(tmp_path / "state")
    for key, text in (("agent:main:main", "my bank PIN is 4321"), (MINE, "hello from 222")):
        ref = mgr.ensure(parse_session_key(key))
        mgr.transcript_for(ref).append_many([{"type": "message", "message": {"role": "user", "content": text}}])
    return mgr


async def call(mgr: SessionManager, tool: str, *, trusted: bool, **args: object) -> str:
    ctx = ToolContext(
        MINE, "main", "r", "c", Path("/nonexistent"), services=ToolServices(sessions=mgr), trusted=trusted
    )
    result = await TOOLS[tool].execute(ctx, dict(args))
    return "".join(c.text for c in result.content if isinstance(c, TextContent))


async def test_an_owner_run_reads_every_session(tmp_path: Path) -> None:
    mgr = store(tmp_path)
    listed = await call(mgr, "sessions_list", trusted=True)
    assert "agent:main:main" in listed and MINE in listed
    assert "4321" in await call(mgr, "sessions_history", trusted=True, session_key="agent:main:main")


async def test_a_non_owner_run_sees_and_reads_only_its_own_session(tmp_path: Path) -> None:
    mgr = store(tmp_path)
    assert (await call(mgr, "sessions_list", trusted=False)).split() == [MINE]
    assert "hello from 222" in await call(mgr, "sessions_history", trusted=False, session_key=MINE)
    for other in ("agent:main:main", "main"):
        with pytest.raises(Forbidden):
            await call(mgr, "sessions_history", trusted=False, session_key=other)
