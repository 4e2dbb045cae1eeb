"""A real gateway process to kill with SIGKILL and start again on the same state directory.

The gateway runs as ``python -m homarus gateway run`` in its own process group (so a test can
also reap what its tools left running), against a fake LLM in this process. What survives a
crash is read straight from the files: the run journal and the session transcripts.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.gateway_process import GatewayProcess, scrubbed_env
from tests.wsclient import Client, open_client

TOKEN = "crash-test-token-0123456789abcdef"
HOOK_TOKEN = "crash-hook-token-0123456789abcdef"


def config(llm_url: str, **agents_defaults: Any) -> dict[str, Any]:
    return {
        "models": {
            "providers": {
                "fake": {
                    "api": "openai-completions",
                    "baseUrl": llm_url,
                    "apiKey": "sk-test",
                    "models": [{"id": "fake-model", "contextWindow": 128000}],
                }
            }
        },
        "agents": {
            "defaults": {
                "model": {"primary": "fake/fake-model"},
                "retry": {"baseDelayMs": 10},
                "heartbeat": {"every": "0m"},
                **agents_defaults,
            }
        },
        "hooks": {"enabled": True, "token": HOOK_TOKEN},
        "tools": {"exec": {"security": "full", "ask": "off"}},
    }


@dataclass
class Crashable:
    """One state directory and the gateway process currently serving it."""

    state: Path
    gw: GatewayProcess | None = None
    _dead: list[GatewayProcess] = field(default_factory=list)

    @property
    def proc(self) -> GatewayProcess:
        assert self.gw is not None, "the gateway is not running"
        return self.gw

    def start(self) -> GatewayProcess:
        proc = subprocess.Popen(
            [sys.executable, "-m", "homarus", "gateway", "run", "--port", "0", "--token", TOKEN],
            env=scrubbed_env(self.state),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.gw = GatewayProcess(proc)
        self.gw.wait_listening()
        return self.gw

    def kill9(self) -> None:
        """SIGKILL the gateway only (what it started keeps running, as after a real crash)."""
        gw = self.proc
        os.kill(gw.proc.pid, signal.SIGKILL)
        gw.wait_exit(10)
        self.gw = None
        self._dead.append(gw)

    def close(self) -> None:
        for gw in [*self._dead, *([self.gw] if self.gw else [])]:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(gw.proc.pid, signal.SIGKILL)  # the gateway's leftovers (a tool's sleep)
            gw.stop()

    @property
    def http(self) -> str:
        return self.proc.http

    # -- what is on disk ---------------------------------------------------------------------------
    def journal(self) -> dict[str, dict[str, Any]]:
        """Every run in the journal by id (read-only, while the gateway may be writing)."""
        db = sqlite3.connect(f"file:{self.state / 'runs.sqlite'}?mode=ro", uri=True)
        try:
            db.row_factory = sqlite3.Row
            rows = db.execute("SELECT * FROM runs ORDER BY accepted_at, rowid").fetchall()
        finally:
            db.close()
        return {r["run_id"]: dict(r) for r in rows}

    def entries(self) -> list[dict[str, Any]]:
        """The message entries of every transcript of the main agent."""
        out: list[dict[str, Any]] = []
        for path in sorted((self.state / "agents" / "main" / "sessions").glob("*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                entry = json.loads(line)
                if entry.get("type") == "message":
                    out.append({**entry, "file": path.name})
        return out

    def messages_of(self, run_id: str) -> list[dict[str, Any]]:
        return [e["message"] for e in self.entries() if e.get("runId") == run_id]


@contextmanager
def crashable(tmp_path: Path, cfg: dict[str, Any]) -> Iterator[Crashable]:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "homarus.json").write_text(json.dumps(cfg), encoding="utf-8")
    box = Crashable(state)
    try:
        yield box
    finally:
        box.close()


# -- talking to it ---------------------------------------------------------------------------------
def post_hook(http: str, message: str, *, idem: str | None = None, **extra: Any) -> httpx.Response:
    headers = {"authorization": f"Bearer {HOOK_TOKEN}"}
    if idem is not None:
        headers["idempotency-key"] = idem
    body = {"message": message, "deliver": False, **extra}
    return httpx.post(f"{http}/hooks/agent", json=body, headers=headers, timeout=10)


async def operator(gw: GatewayProcess) -> Client:
    client = await open_client(gw.url)
    assert (await client.handshake(TOKEN))["ok"]
    return client


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


def user_texts(request_json: Any) -> list[str]:
    """The user-role texts of an OpenAI chat request."""
    out = []
    for m in request_json.get("messages", []):
        if m.get("role") == "user":
            out.append(text_of(m))
    return out
