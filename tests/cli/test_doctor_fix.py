"""`homarus doctor --fix`: keys an older or newer version wrote are taken out (shown as a diff,
applied only when confirmed, the old file kept as a backup); loose permissions are tightened and
locks of dead processes removed; a wrong value is left to the user with the backup that loads."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import json5

from homarus.config.backups import list_backups


def _doctor(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOMARUS_STATE_DIR": str(state)}
    env.pop("HOMARUS_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "homarus", "doctor", *args], env=env, capture_output=True, text=True, timeout=60
    )


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unknown_keys_permissions_and_stale_locks(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    os.chmod(state, 0o755)  # noqa: S103  (the loose mode doctor is to repair)
    port = _port()
    original = "// after a downgrade\n{ gateway: { port: PORT, shinyNewKey: 1 }, "
    original += "agents: { defaults: { gone: true } } }\n"
    original = original.replace("PORT", str(port))
    (state / "homarus.json").write_text(original)
    sessions = state / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock = sessions / "abc.jsonl.lock"
    lock.write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(), "createdAt": 1.0}))

    asked = _doctor(state, "--fix")  # no terminal: shows, asks nobody, changes nothing
    assert asked.returncode == 1 and "nothing changed" in asked.stdout
    assert "gateway.shinyNewKey, agents.defaults.gone" in asked.stdout and "-// after a downgrade" in asked.stdout
    assert (state / "homarus.json").read_text() == original and lock.exists()

    fixed = _doctor(state, "--fix", "--yes")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    data = json5.loads((state / "homarus.json").read_text())
    assert data == {"gateway": {"port": port}, "agents": {"defaults": {}}}
    assert list_backups(state / "homarus.json")[0].path.read_text() == original
    assert oct(state.stat().st_mode & 0o777) == "0o700" and not lock.exists()
    assert _doctor(state).returncode == 0


def test_a_wrong_value_is_left_to_the_user_with_a_backup_that_loads(tmp_path: Path) -> None:
    good = '{ "gateway": { "port": 18444 } }'
    (tmp_path / "homarus.json.bak.1").write_text(good)
    os.chmod(tmp_path, 0o700)
    (tmp_path / "homarus.json").write_text('{ "gateway": { "port": "not a port" } }')
    os.chmod(tmp_path / "homarus.json", 0o600)
    checked = _doctor(tmp_path, "--fix", "--yes")
    assert checked.returncode == 1
    assert "backup 1 loads: homarus config restore 1" in checked.stdout
    assert "nothing doctor --fix can repair" in checked.stdout
    assert '"not a port"' in (tmp_path / "homarus.json").read_text()
