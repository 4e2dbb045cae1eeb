"""kill -9 at random points never loses an acknowledged write; many processes never lose updates."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from homarus.sessions.store import SessionStore
from homarus.sessions.transcript import Transcript

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}


def _run_until_killed(state: Path, start: int, acks_wanted: int) -> tuple[set[int], set[int]]:
    """Start a writer, SIGKILL it after ``acks_wanted`` acks (mid-write, usually); return what it acked."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.sessions.crash_worker", str(state), str(start)],
        stdout=subprocess.PIPE,
        cwd=ROOT,
        env=ENV,
        text=True,
    )
    stored: set[int] = set()
    appended: set[int] = set()
    assert proc.stdout is not None
    try:
        while len(stored) + len(appended) < acks_wanted:
            line = proc.stdout.readline()
            if not line:
                break
            kind, number = line.split()
            (stored if kind == "store" else appended).add(int(number))
        time.sleep(random.uniform(0, 0.004))  # land the kill anywhere inside the next write
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        proc.stdout.close()
    return stored, appended


def test_sigkill_never_loses_acknowledged_writes(tmp_path: Path) -> None:
    rng = random.Random(1234)
    acked_store: set[int] = set()
    acked_transcript: set[int] = set()
    start = 0
    for _ in range(40):
        stored, appended = _run_until_killed(tmp_path, start, rng.randint(2, 40))
        acked_store |= stored
        acked_transcript |= appended
        start += 10_000
        # every round starts by reading what the last one left: it must parse and hold every ack
        entries = SessionStore(tmp_path).read()
        missing = {i for i in acked_store if f"k{i}" not in entries}
        assert not missing, f"store lost acknowledged writes {sorted(missing)[:5]}"
        view = Transcript(tmp_path / "t.jsonl").read()
        assert view.header is not None and view.header["version"] == 3
        assert view.bad_lines == []
        texts = {int(e["message"]["content"][1:]) for e in view.entries}
        lost = acked_transcript - texts
        assert not lost, f"transcript lost acknowledged appends {sorted(lost)[:5]}"
        ids = [e["id"] for e in view.entries]
        assert len(ids) == len(set(ids))
        for prev, entry in zip(view.entries, view.entries[1:], strict=False):
            assert entry["parentId"] == prev["id"]  # the chain survives torn tails being set aside
    assert len(acked_store) > 20 and len(acked_transcript) > 20
    # a final append on top of whatever the last kill left must succeed
    Transcript(tmp_path / "t.jsonl").append({"type": "message", "message": {"role": "user", "content": "m-1"}})


_COUNTER_SCRIPT = """
import sys
from pathlib import Path
from homarus.sessions.store import SessionStore
store = SessionStore(Path(sys.argv[1]))
def bump(e):
    e = e or {"sessionId": "s", "updatedAt": 0}
    e["updatedAt"] += 1
    return e
for _ in range(int(sys.argv[3])):
    n = store.update("agent:main:main", bump)["updatedAt"]
    store.update(f"agent:main:w{sys.argv[2]}-{n}", lambda e: {"sessionId": "x", "updatedAt": 1})
"""


def test_processes_updating_one_store_lose_nothing(tmp_path: Path) -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", _COUNTER_SCRIPT, str(tmp_path), str(w), "40"], env=ENV, cwd=ROOT)
        for w in range(5)
    ]
    for p in procs:
        assert p.wait(60) == 0
    data = SessionStore(tmp_path).read()
    assert data["agent:main:main"]["updatedAt"] == 200
    assert len(data) == 201  # every bump got its own number: no two writers read the same value
    assert (tmp_path / "sessions.sqlite").stat().st_mode & 0o777 == 0o600


_BIG_WRITER = """
import sys
from pathlib import Path
from homarus.sessions.store import SessionStore
store = SessionStore(Path(sys.argv[1]))
i = int(sys.argv[2])
while True:
    key = f"agent:main:s{(i * 7919) % 100_000}"
    store.update(key, lambda e: {**(e or {"sessionId": "x", "updatedAt": 1}), "label": f"v{i}"})
    print(i, flush=True)
    i += 1
"""


def test_sigkill_mid_update_of_a_100_000_session_store_loses_no_acknowledged_update(tmp_path: Path) -> None:
    SessionStore(tmp_path).add_missing(
        {f"agent:main:s{i}": {"sessionId": f"s{i}", "updatedAt": 1} for i in range(100_000)}
    )
    rng = random.Random(99)
    acked: set[int] = set()
    start = 0
    for _ in range(4):
        proc = subprocess.Popen(
            [sys.executable, "-c", _BIG_WRITER, str(tmp_path), str(start)],
            stdout=subprocess.PIPE,
            env=ENV,
            cwd=ROOT,
            text=True,
        )
        assert proc.stdout is not None
        wanted = rng.randint(20, 200)
        try:
            while line := proc.stdout.readline():
                acked.add(int(line))
                if int(line) - start >= wanted:
                    break
            time.sleep(random.uniform(0, 0.002))  # the kill lands inside the next update, usually
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
            proc.stdout.close()
        start += 10_000
        stored = SessionStore(tmp_path).read()
        assert len(stored) == 100_000
        lost = [i for i in acked if stored[f"agent:main:s{(i * 7919) % 100_000}"].get("label") != f"v{i}"]
        assert not lost, f"acknowledged updates lost: {lost[:5]}"
    assert len(acked) >= 80
