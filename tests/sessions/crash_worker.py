"""Child process for the crash test: writes forever, printing an ack after each durable write."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from homarus.sessions.store import SessionStore
from homarus.sessions.transcript import Transcript


def _value(value: dict[str, Any]) -> Callable[[dict[str, Any] | None], dict[str, Any]]:
    return lambda current: value


def main(state: Path, start: int) -> None:
    store = SessionStore(state)
    transcript = Transcript(state / "t.jsonl")
    transcript.create("crash-session")
    i = start

    while True:
        store.update(f"k{i}", _value({"sessionId": f"s{i}", "updatedAt": i}))
        print(f"store {i}", flush=True)
        transcript.append({"type": "message", "message": {"role": "user", "content": f"m{i}"}})
        print(f"transcript {i}", flush=True)
        i += 1


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
