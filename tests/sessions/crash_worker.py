"""Child process for the crash test: writes forever, printing an ack after each durable write."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from homarus.sessions.store import SessionStore
from homarus.sessions.transcript import Transcript


def main(state: Path, start: int) -> None:
    store = SessionStore(state / "sessions.json")
    transcript = Transcript(state / "t.jsonl")
    transcript.create("crash-session")
    i = start

    def put(entries: dict[str, dict[str, Any]]) -> None:
        entries[f"k{i}"] = {"sessionId": f"s{i}", "updatedAt": i}

    while True:
        store.update(put)
        print(f"store {i}", flush=True)
        transcript.append({"type": "message", "message": {"role": "user", "content": f"m{i}"}})
        print(f"transcript {i}", flush=True)
        i += 1


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
