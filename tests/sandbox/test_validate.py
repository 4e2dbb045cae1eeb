from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from homarus.sandbox.validate import (
    SandboxSecurityError,
    is_sensitive_env_key,
    normalize,
    resolve_via_existing_ancestor,
    sanitize_env,
    validate_binds,
    validate_sandbox_options,
)

REDTEAM = Path(__file__).resolve().parents[3] / "shared/reference/redteam-public.jsonl"


def _bind_rows() -> list[dict[str, Any]]:
    if not REDTEAM.exists():
        return []
    rows = [json.loads(line) for line in REDTEAM.read_text().splitlines() if line.strip()]
    return [r for r in rows if r.get("target") == "bind"]


ROWS = _bind_rows()


@pytest.mark.skipif(not REDTEAM.exists(), reason=f"{REDTEAM} is absent")
@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_redteam_bind_row(row: dict[str, Any], tmp_path: Path) -> None:
    ws, project = tmp_path / "ws", tmp_path / "project"
    ws.mkdir()
    project.mkdir()
    inp = row["input"]

    def sub(text: str) -> str:
        return text.replace("<WS>", str(ws)).replace("<PROJECT>", str(project))

    setup = inp.get("setup")
    if setup:
        parts = sub(setup).split()
        assert parts[:2] == ["ln", "-s"], setup
        os.symlink(parts[2], parts[3])

    def call() -> None:
        validate_sandbox_options(
            binds=[sub(b) for b in inp.get("binds", [])],
            network=inp.get("network"),
            seccomp_profile=inp.get("seccompProfile"),
            apparmor_profile=inp.get("apparmorProfile"),
            env=inp.get("env"),
            home="/home/tester",
        )

    if row["expect"]["result"] == "block":
        with pytest.raises(SandboxSecurityError) as info:
            call()
        assert row["expect"]["error"] in str(info.value)
    else:
        call()


def test_redteam_rows_present() -> None:
    if REDTEAM.exists():
        assert len(ROWS) >= 17


def test_normalize() -> None:
    assert normalize("//etc//passwd") == "/etc/passwd"
    assert normalize("/etc/./passwd/") == "/etc/passwd"
    assert normalize("/tmp/../etc") == "/etc"


@pytest.mark.parametrize(
    ("bind", "message"),
    [
        ("relative:/x", "non-absolute"),
        ("~/.ssh:/x", "non-absolute"),
        ("vol:/data", "non-absolute"),
        ("/tmp/../etc:/x", 'blocked path "/etc"'),
        ("/var/run/docker.sock:/s", 'blocked path "/var/run"'),
        ("/run/docker.sock:/s", 'blocked path "/run"'),
        ("/sys/kernel:/k", 'blocked path "/sys"'),
        ("/root/x:/x", 'blocked path "/root"'),
        ("/home/tester/.ssh/id_rsa:/k", 'blocked path "/home/tester/.ssh"'),
        ("/home/tester/.aws:/k", "blocked path"),
        ("/home/tester/.gnupg:/k", "blocked path"),
        ("/home/tester/.config/gcloud/x:/k", "blocked path"),
        ("/home/tester/.kube/config:/k", "blocked path"),
        ("/data:/agent", 'reserved container path "/agent"'),
        ("/data:/workspace/sub", 'reserved container path "/workspace"'),
        ("/data:/proc/x", 'reserved container path "/proc"'),
        ("/data:/dev", 'reserved container path "/dev"'),
        ("/data:/sys", 'reserved container path "/sys"'),
        ("/data:relative", "invalid container path"),
        ("/data", "not <source>:<target>"),
        ("/data:/x:rw,bogus", "unknown options"),
    ],
)
def test_bind_refused(bind: str, message: str) -> None:
    with pytest.raises(SandboxSecurityError, match=None) as info:
        validate_binds([bind], home="/home/tester")
    assert message in str(info.value)


def test_bind_allowed(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    [spec] = validate_binds([f"{tmp_path}/data/:/mnt/data:ro,z"], home="/home/tester")
    assert (spec.source, spec.target, spec.mode) == (str((tmp_path / "data").resolve()), "/mnt/data", "ro")
    validate_binds(["/var:/mnt/var"], home="/home/tester")  # /var itself is allowed


def test_state_dir_blocked_including_symlink(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (tmp_path / "alias").symlink_to(state)
    for src in (f"{state}/credentials", f"{tmp_path}/alias/not-yet/x"):
        with pytest.raises(SandboxSecurityError, match="blocked path"):
            validate_binds([f"{src}:/mnt/x"], home="/home/tester", state_dir=state)


def test_symlinked_parent_to_home_credentials(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (tmp_path / "link").symlink_to(home)
    with pytest.raises(SandboxSecurityError, match="blocked path"):
        validate_binds([f"{tmp_path}/link/.ssh/new-key:/k"], home=str(home))


def test_allowed_roots(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "ok").mkdir(parents=True)
    validate_binds([f"{root}/ok:/mnt/ok"], home="/h", allowed_roots=[str(root)])
    with pytest.raises(SandboxSecurityError, match="outside allowed roots"):
        validate_binds([f"{tmp_path}:/mnt/x"], home="/h", allowed_roots=[str(root)])
    (root / "escape").symlink_to(tmp_path)
    with pytest.raises(SandboxSecurityError, match="outside allowed roots"):
        validate_binds([f"{root}/escape/missing:/mnt/x"], home="/h", allowed_roots=[str(root)])


def test_resolve_via_existing_ancestor(tmp_path: Path) -> None:
    (tmp_path / "l").symlink_to("/etc")
    assert resolve_via_existing_ancestor(f"{tmp_path}/l/a/b") == "/etc/a/b"


def test_network_and_profiles() -> None:
    for net in ("host", "HOST", "container:x"):
        with pytest.raises(SandboxSecurityError, match="network mode"):
            validate_sandbox_options(network=net)
    validate_sandbox_options(network="container:x", allow_container_join=True)
    validate_sandbox_options(network="none")
    with pytest.raises(SandboxSecurityError, match='apparmor profile "Unconfined" is blocked'):
        validate_sandbox_options(apparmor_profile="Unconfined")


def test_env_sanitised() -> None:
    env = {
        "GITHUB_TOKEN": "a",
        "DB_PASSWORD": "b",
        "STRIPE_SECRET_KEY": "c",
        "OPENAI_API_KEY": "d",
        "AWS_REGION": "e",
        "MY_APIKEY": "f",
        "LANG": "C",
        "FOO": "bar",
        "TOKENIZER": "ok",
        "PWD": "/x",
    }
    kept, stripped = sanitize_env(env)
    assert kept == {"LANG": "C", "FOO": "bar", "TOKENIZER": "ok", "PWD": "/x"}
    assert "AWS_REGION" in stripped and "GITHUB_TOKEN" in stripped
    kept, _ = sanitize_env(env, force_allow=["AWS_REGION"])
    assert kept["AWS_REGION"] == "e"
    assert is_sensitive_env_key("anthropic_api_key")
    with pytest.raises(SandboxSecurityError, match="blocked sensitive environment variables"):
        validate_sandbox_options(env={"X_TOKEN": "1"})
