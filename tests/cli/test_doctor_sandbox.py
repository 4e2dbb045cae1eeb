"""``homarus doctor`` on sandbox backends: each one tried for real, the reason when it does not
work, the one sandboxed sessions would use, and a failure when they would have none."""

from __future__ import annotations

from pathlib import Path

import pytest

from homarus.cli import doctor_sandbox
from homarus.cli.doctor_sandbox import bwrap_problem, docker_problem, report_sandbox
from homarus.config.sandbox import SandboxConfig
from tests.sandbox.fake_docker import fake_docker


def test_docker_reasons(tmp_path: Path) -> None:
    assert "not installed" in (docker_problem("img", str(tmp_path / "absent"))[0] or "")
    stopped = fake_docker(tmp_path, "echo 'Cannot connect to the Docker daemon at unix:///x.sock' >&2; exit 1")
    why, _ = docker_problem("img", stopped)
    assert why is not None and why.startswith("no Docker engine answers: Cannot connect") and "dockerd" in why
    no_image = fake_docker(tmp_path, 'if [ "$1" = info ]; then echo 27.1; else echo "No such image" >&2; exit 1; fi')
    assert docker_problem("homarus-sandbox:x", no_image) == (
        "the engine (27.1) has no image homarus-sandbox:x: build it with `make sandbox-image`",
        "27.1",
    )
    fine = fake_docker(tmp_path, "echo 27.1")
    assert docker_problem("img", fine) == (None, "27.1")


def test_bwrap_reason_when_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("homarus.cli.doctor_sandbox.shutil.which", lambda _: None)
    assert bwrap_problem() == "bwrap is not installed (apt-get install bubblewrap)"


@pytest.mark.parametrize(
    ("backend", "bwrap", "docker", "level", "says"),
    [
        ("auto", None, None, "ok", "use bubblewrap"),
        ("auto", "bwrap is not installed", None, "ok", "use docker"),
        ("docker", None, None, "ok", "use docker"),
        ("bwrap", "bwrap is not installed", None, "fail", "none works here"),
        ("auto", "bwrap is not installed", "no Docker engine answers", "fail", "never run on the host"),
    ],
)
def test_which_backend_sandboxed_sessions_use(
    monkeypatch: pytest.MonkeyPatch, backend: str, bwrap: str | None, docker: str | None, level: str, says: str
) -> None:
    monkeypatch.setattr(doctor_sandbox, "bwrap_problem", lambda: bwrap)
    monkeypatch.setattr(doctor_sandbox, "docker_problem", lambda image: (docker, "27.1"))
    lines: list[tuple[str, str]] = []
    report_sandbox(SandboxConfig.model_validate({"mode": "non-main", "backend": backend}), lambda *a: lines.append(a))
    assert lines[0] == ("ok" if bwrap is None else "info", f"sandbox backend bubblewrap: {bwrap or 'works'}")
    assert lines[-1][0] == level and says in lines[-1][1], lines


def test_no_backend_needed_when_sandboxing_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor_sandbox, "bwrap_problem", lambda: "bwrap is not installed")
    monkeypatch.setattr(doctor_sandbox, "docker_problem", lambda image: ("the docker CLI is not installed", ""))
    lines: list[tuple[str, str]] = []
    report_sandbox(SandboxConfig(), lambda *a: lines.append(a))
    assert lines[-1] == ("info", "no sandbox backend works for backend auto; sandbox mode is off, so none is needed")
