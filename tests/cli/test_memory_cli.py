"""`homarus memory index|status|search` on a state dir, without a gateway."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def _cli(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOMARUS_STATE_DIR": str(state)}
    env.pop("HOMARUS_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "homarus", "memory", *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_index_status_search(tmp_path: Path) -> None:
    state, ws = tmp_path / "state", tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    state.mkdir()
    (ws / "MEMORY.md").write_text("# Me\n\nI keep bees on the roof.\n")
    (ws / "memory" / "2026-11-21.md").write_text("Harvested 4 kg of honey.\n")
    config = {"agents": {"defaults": {"workspace": str(ws), "memorySearch": {"provider": "none"}}}}
    (state / "homarus.json").write_text(json.dumps(config))
    index = _cli(state, "index")
    assert index.returncode == 0, index.stderr
    assert json.loads(index.stdout)["filesIndexed"] == 2
    status = _cli(state, "status")
    assert status.returncode == 0 and json.loads(status.stdout)["files"] == 2
    found = _cli(state, "search", "honey harvest")
    assert found.returncode == 0 and "memory/2026-11-21.md" in found.stdout and "fts-only" in found.stdout
    bad = _cli(state, "search")
    assert bad.returncode == 2  # argparse: the query is required


def test_the_shared_index_with_the_postgres_backend(tmp_path: Path, pg_url: str) -> None:
    state, ws = tmp_path / "state", tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    state.mkdir()
    (ws / "MEMORY.md").write_text("# Me\n\nI keep bees on the roof.\n")
    memory = {"workspace": str(ws), "memorySearch": {"provider": "none"}}
    config = {"agents": {"defaults": memory}, "storage": {"backend": "postgres", "postgres": {"url": pg_url}}}
    (state / "homarus.json").write_text(json.dumps(config))
    index = _cli(state, "index")
    assert index.returncode == 0, index.stderr
    assert json.loads(index.stdout)["filesIndexed"] == 1
    status = json.loads(_cli(state, "status").stdout)
    assert status["files"] == 1 and status["shared"] and status["dbPath"].startswith("postgresql://127.0.0.1:")
    assert not (state / "memory").exists()
    found = _cli(state, "search", "bees")
    assert found.returncode == 0 and "MEMORY.md" in found.stdout
    # the database away: a clear error without the password, and a non-zero exit
    secret = "memory-cli-must-not-print-7731"
    away_url = f"postgresql://homarus:{secret}@127.0.0.1:9/assistant"
    config["storage"] = {"backend": "postgres", "postgres": {"url": away_url, "connectTimeoutSeconds": 1}}
    (state / "homarus.json").write_text(json.dumps(config))
    away = _cli(state, "status")
    assert away.returncode == 1 and "unavailable" in away.stderr
    assert secret not in away.stdout + away.stderr
