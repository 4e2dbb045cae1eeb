"""The Docker backend: its command lines, validation, lifecycle decisions (against a recording fake
engine), registry and runner; a real-engine smoke test runs only when ``docker info`` answers."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import stat
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from homarus.config.sandbox import SandboxConfig, SandboxDockerConfig, SandboxLimits, SandboxUlimit
from homarus.errors import Unavailable
from homarus.sandbox.docker import HOT_WINDOW_MS, RECHECK_MS, DockerSandbox, decide
from homarus.sandbox.docker_args import (
    MAX_NAME_LEN,
    Mount,
    build_create_args,
    build_exec_args,
    config_hash,
    container_name,
    container_path,
    container_user,
    validate_docker_config,
    with_limits,
)
from homarus.sandbox.docker_registry import ContainerRegistry, RegistryEntry
from homarus.sandbox.docker_runner import SubprocessRunner, docker_cli_env, engine_available
from homarus.sandbox.validate import SandboxSecurityError
from tests.sandbox.fake_docker import fake_docker

HOME = "/home/tester"
T0 = 1_700_000_000_000


def create_args(cfg: SandboxDockerConfig, ws: Path, agent: Path | None = None, access: Any = "none") -> list[str]:
    return build_create_args(
        cfg,
        name="homarus-sbx-main-1234abcd",
        scope_key="agent:main",
        workspace=ws,
        agent_workspace=agent,
        workspace_access=access,
        config_hash="deadbeef",
        created_at_ms=T0,
        home=HOME,
    )


# -- docker create ----------------------------------------------------------------------------


def test_create_args_defaults(tmp_path: Path) -> None:
    assert create_args(SandboxDockerConfig(), tmp_path) == [
        "create", "--name", "homarus-sbx-main-1234abcd",
        "--label", "homarus.sandbox=1",
        "--label", "homarus.sessionKey=agent:main",
        "--label", f"homarus.createdAtMs={T0}",
        "--label", "homarus.configHash=deadbeef",
        "--read-only",
        "--tmpfs", "/tmp", "--tmpfs", "/var/tmp", "--tmpfs", "/run",
        "--network", "none",
        "--user", "65534:65534",
        "--env", "LANG=C.UTF-8",
        "--cap-drop", "ALL",
        "--security-opt", "no-new-privileges",
        "--workdir", "/workspace",
        "-v", f"{tmp_path}:/workspace:z",
        "--init", "homarus-sandbox:bookworm-slim", "sleep", "infinity",
    ]  # fmt: skip


def test_create_args_fully_configured(tmp_path: Path) -> None:
    ws, agent = tmp_path / "ws", tmp_path / "agent"
    (agent / "data").mkdir(parents=True)
    ws.mkdir()
    cfg = SandboxDockerConfig.model_validate(
        {
            "image": "registry.local:5000/sbx@sha256:abc",
            "readOnlyRoot": True,
            "tmpfs": ["/tmp:size=64m"],
            "network": "bridge",
            "user": "1000:1000",
            "capDrop": ["NET_RAW", "ALL"],
            "env": {"LANG": "C.UTF-8", "FOO": "bar", "GITHUB_TOKEN": "ghp_x", "OPENAI_API_KEY": "sk"},
            "seccompProfile": "/etc/docker/seccomp.json",
            "apparmorProfile": "docker-default",
            "dns": ["1.1.1.1", "9.9.9.9"],
            "extraHosts": ["db:10.0.0.5"],
            "pidsLimit": 128,
            "memory": "1g",
            "memorySwap": "2g",
            "cpus": 1.5,
            "ulimits": {"nofile": {"soft": 1024, "hard": 2048}, "nproc": 256, "core": "0:0"},
            "binds": [f"{agent}/data:/data:ro", f"{ws}/cache:/cache"],
            "setupCommand": "true",
        }
    )
    assert create_args(cfg, ws, agent, "ro") == [
        "create", "--name", "homarus-sbx-main-1234abcd",
        "--label", "homarus.sandbox=1",
        "--label", "homarus.sessionKey=agent:main",
        "--label", f"homarus.createdAtMs={T0}",
        "--label", "homarus.configHash=deadbeef",
        "--read-only",
        "--tmpfs", "/tmp:size=64m",
        "--network", "bridge",
        "--user", "1000:1000",
        "--env", "LANG=C.UTF-8", "--env", "FOO=bar",
        "--cap-drop", "ALL", "--cap-drop", "NET_RAW",
        "--security-opt", "no-new-privileges",
        "--security-opt", "seccomp=/etc/docker/seccomp.json",
        "--security-opt", "apparmor=docker-default",
        "--dns", "1.1.1.1", "--dns", "9.9.9.9",
        "--add-host", "db:10.0.0.5",
        "--pids-limit", "128", "--memory", "1g", "--memory-swap", "2g", "--cpus", "1.5",
        "--ulimit", "nofile=1024:2048", "--ulimit", "nproc=256", "--ulimit", "core=0:0",
        "--workdir", "/workspace",
        "-v", f"{ws}:/workspace:z",
        "-v", f"{agent}:/agent:ro,z",
        "-v", f"{agent}/data:/data:ro",
        "-v", f"{ws}/cache:/cache",
        "--init", "registry.local:5000/sbx@sha256:abc", "sleep", "infinity",
    ]  # fmt: skip


def test_create_args_optional_parts_off(tmp_path: Path) -> None:
    cfg = SandboxDockerConfig(read_only_root=False, tmpfs=[], env={}, cap_drop=[], workdir="/work")
    args = create_args(cfg, tmp_path, tmp_path / "agent", "rw")
    assert "--read-only" not in args and "--tmpfs" not in args and "--env" not in args
    assert args[args.index("--cap-drop") : args.index("--cap-drop") + 4] == [
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
    ]
    assert args[-8:] == ["--workdir", "/work", "-v", f"{tmp_path}:/work:z", "--init", *args[-3:]]
    assert "/agent" not in " ".join(args)  # rw: the agent workspace itself is the workspace


def test_create_args_ro_access_on_the_agent_workspace_itself(tmp_path: Path) -> None:
    args = create_args(SandboxDockerConfig(), tmp_path, tmp_path, "ro")
    assert f"{tmp_path}:/workspace:ro,z" in args and not any(a.endswith(":/agent:ro,z") for a in args)


def test_create_args_without_config_hash_has_no_hash_label(tmp_path: Path) -> None:
    args = build_create_args(
        SandboxDockerConfig(),
        name="n",
        scope_key="k",
        workspace=tmp_path,
        agent_workspace=None,
        workspace_access="none",
        config_hash=None,
        created_at_ms=1,
    )
    assert not any(a.startswith("homarus.configHash") for a in args)


# -- validation refusals ----------------------------------------------------------------------

REFUSALS: list[tuple[dict[str, Any], str]] = [
    ({"network": "host"}, 'network mode "host" is blocked'),
    ({"network": "HOST"}, 'network mode "HOST" is blocked'),
    ({"network": "container:abc123"}, 'network mode "container:abc123" is blocked by default'),
    ({"seccompProfile": "unconfined"}, 'seccomp profile "unconfined" is blocked'),
    ({"apparmorProfile": "Unconfined"}, 'apparmor profile "Unconfined" is blocked'),
    ({"binds": ["/etc:/mnt/etc:ro"]}, 'bind mount "/etc:/mnt/etc:ro" targets blocked path "/etc"'),
    ({"binds": ["/var/run/docker.sock:/var/run/docker.sock"]}, 'targets blocked path "/var/run"'),
    ({"binds": ["/:/host"]}, 'covers blocked path "/"'),
    ({"binds": ["data:/data"]}, "uses a non-absolute source path"),
    ({"binds": [f"{HOME}/.ssh:/ssh:ro"]}, f'targets blocked path "{HOME}/.ssh"'),
    ({"binds": ["<WS>/x:/workspace/x"]}, 'targets reserved container path "/workspace"'),
    ({"binds": ["<WS>/x:/agent"]}, 'targets reserved container path "/agent"'),
    ({"binds": ["/srv/data:/data"]}, 'source "/srv/data" is outside allowed roots'),
    ({"binds": ["<WS>/x:/data:rw,exec"]}, "has unknown options"),
    ({"image": "--privileged"}, "docker image '--privileged' is not a valid value"),
    ({"image": "alpine sh"}, "docker image 'alpine sh' is not a valid value"),
    ({"tmpfs": ["--privileged"]}, "docker tmpfs '--privileged' is not a valid value"),
    ({"user": "-0"}, "docker user '-0' is not a valid value"),
    ({"dns": ["1.1.1.1\n--privileged"]}, "is not a valid value"),
    ({"extraHosts": ["--cap-add=ALL"]}, "docker extraHosts entry '--cap-add=ALL' is not a valid value"),
    ({"memory": "-1"}, "docker memory '-1' is not a size"),
    ({"memorySwap": "lots"}, "docker memorySwap 'lots' is not a size"),
    ({"tmpfs": ["tmp"]}, "docker tmpfs 'tmp' is not an absolute container path"),
    ({"capDrop": ["ALL", "--privileged"]}, "is not a capability name"),
    ({"ulimits": {"NOFILE": 5}}, "ulimit name 'NOFILE' is not valid"),
    ({"ulimits": {"nofile": "lots"}}, "is not N or soft:hard"),
    ({"ulimits": {"nofile": {}}}, "has neither soft nor hard"),
    ({"env": {"BAD-KEY": "1"}}, "docker env 'BAD-KEY' is not a valid variable"),
]


@pytest.mark.parametrize(("settings", "message"), REFUSALS, ids=[m for _, m in REFUSALS])
def test_validation_refusals(settings: dict[str, Any], message: str, tmp_path: Path) -> None:
    raw = json.loads(json.dumps(settings).replace("<WS>", str(tmp_path)))
    cfg = SandboxDockerConfig.model_validate(raw)
    with pytest.raises(SandboxSecurityError, match=re.escape(message)):
        create_args(cfg, tmp_path)


def test_refusal_happens_before_anything_is_built(tmp_path: Path) -> None:
    with pytest.raises(SandboxSecurityError, match=r"^Sandbox security: "):
        validate_docker_config(SandboxDockerConfig(network="host"), workspace=tmp_path)


def test_symlinked_bind_source_is_checked_again_after_resolution(tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to("/etc")
    cfg = SandboxDockerConfig(binds=[f"{tmp_path}/link/ssl:/ssl:ro"])
    with pytest.raises(SandboxSecurityError, match='targets blocked path "/etc"'):
        create_args(cfg, tmp_path)
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (tmp_path / "out").symlink_to(outside)
    cfg = SandboxDockerConfig(binds=[f"{tmp_path}/out/not-yet:/data"])  # leaf missing: its parent resolves
    with pytest.raises(SandboxSecurityError, match="is outside allowed roots"):
        create_args(cfg, tmp_path)


def test_custom_workdir_is_reserved_too(tmp_path: Path) -> None:
    cfg = SandboxDockerConfig(workdir="/work", binds=[f"{tmp_path}/x:/work/x"])
    with pytest.raises(SandboxSecurityError, match='targets reserved container path "/work"'):
        create_args(cfg, tmp_path)


def test_danger_flags_unlock_only_their_own_check(tmp_path: Path) -> None:
    joined = SandboxDockerConfig(network="container:abc", dangerously_allow_container_namespace_join=True)
    assert create_args(joined, tmp_path)[create_args(joined, tmp_path).index("--network") + 1] == "container:abc"
    with pytest.raises(SandboxSecurityError, match="is blocked"):
        create_args(SandboxDockerConfig(network="host", dangerously_allow_container_namespace_join=True), tmp_path)
    reserved = SandboxDockerConfig(
        binds=[f"{tmp_path}/x:/workspace/x"], dangerously_allow_reserved_container_targets=True
    )
    assert f"{tmp_path}/x:/workspace/x" in create_args(reserved, tmp_path)
    external = SandboxDockerConfig(binds=["/srv/data:/data:ro"], dangerously_allow_external_bind_sources=True)
    assert "/srv/data:/data:ro" in create_args(external, tmp_path)
    for blocked in ("/etc/ssl:/ssl", "/proc:/p"):
        cfg = SandboxDockerConfig(binds=[blocked], dangerously_allow_external_bind_sources=True)
        with pytest.raises(SandboxSecurityError, match="targets blocked path"):
            create_args(cfg, tmp_path)


def test_state_dir_is_blocked_when_external_sources_are_allowed(tmp_path: Path) -> None:
    state = tmp_path / "state"
    (state / "credentials").mkdir(parents=True)
    cfg = SandboxDockerConfig(binds=[f"{state}/credentials:/c:ro"], dangerously_allow_external_bind_sources=True)
    with pytest.raises(SandboxSecurityError, match="targets blocked path"):
        validate_docker_config(cfg, workspace=tmp_path / "ws", home=HOME, state_dir=state)


def test_credential_like_env_keys_are_stripped(tmp_path: Path) -> None:
    env = {"LANG": "C.UTF-8", "AWS_SECRET_ACCESS_KEY": "x", "MY_API_KEY": "y", "DB_PASSWORD": "z", "TZ": "UTC"}
    checked = validate_docker_config(SandboxDockerConfig(env=env), workspace=tmp_path)
    assert checked.env == {"LANG": "C.UTF-8", "TZ": "UTC"}
    assert checked.stripped_env == ["AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "MY_API_KEY"]
    assert not any("SECRET" in a or "PASSWORD" in a for a in create_args(SandboxDockerConfig(env=env), tmp_path))


def test_config_shape_errors() -> None:
    with pytest.raises(ValueError, match=r"containerPrefix|container_prefix"):
        SandboxDockerConfig.model_validate({"containerPrefix": "-Bad"})
    with pytest.raises(ValueError, match="extra"):
        SandboxDockerConfig.model_validate({"privileged": True})
    with pytest.raises(ValueError, match="workdir"):
        SandboxDockerConfig.model_validate({"workdir": "work"})
    assert SandboxConfig().docker == SandboxDockerConfig()
    assert SandboxDockerConfig.model_validate({"ulimits": {"nofile": {"soft": 5}}}).ulimits == {
        "nofile": SandboxUlimit(soft=5)
    }


# -- names ------------------------------------------------------------------------------------

NAME_RE = re.compile(r"[a-z0-9][a-z0-9_.-]*")


def test_container_name_shape() -> None:
    name = container_name("homarus-sbx-", "agent:main:telegram:dm:42")
    assert re.fullmatch(r"homarus-sbx-agent-main-telegram-dm-42-[0-9a-f]{8}", name)


@pytest.mark.parametrize(
    "key",
    ["x" * 500, "agent:main:" + "é" * 100, "Café Crème", "日本語のセッション", "", "---", "a/b\\c:d e\x00f", "🦞" * 30],
)
def test_container_name_is_always_valid(key: str) -> None:
    name = container_name("homarus-sbx-", key)
    assert len(name) <= MAX_NAME_LEN and NAME_RE.fullmatch(name), name
    assert name == container_name("homarus-sbx-", key)  # stable


def test_container_name_unicode_is_folded() -> None:
    assert container_name("p-", "Café Crème").startswith("p-cafe-creme-")
    assert re.fullmatch(r"p-[0-9a-f]{8}", container_name("p-", "日本語"))


def test_container_names_of_different_keys_differ() -> None:
    keys = ["Agent:Main", "agent:main", "agent-main", "agent main", "agent:main!", "x" * 200, "x" * 201]
    keys += ["日本", "中文"]
    names = {container_name("homarus-sbx-", k) for k in keys}
    assert len(names) == len(keys)


def test_container_name_prefix_too_long() -> None:
    with pytest.raises(ValueError, match="too long"):
        container_name("p" * 60, "k")


# -- config hash ------------------------------------------------------------------------------


def test_config_hash_is_stable(tmp_path: Path) -> None:
    a = config_hash(SandboxDockerConfig(env={"A": "1", "B": "2"}), "none", workspace=tmp_path)
    b = config_hash(SandboxDockerConfig(env={"B": "2", "A": "1"}), "none", workspace=tmp_path)
    assert a == b and re.fullmatch(r"[0-9a-f]{64}", a)
    parsed = SandboxDockerConfig.model_validate(json.loads(SandboxDockerConfig().model_dump_json(by_alias=True)))
    assert config_hash(parsed, "none", workspace=tmp_path) == config_hash(
        SandboxDockerConfig(), "none", workspace=tmp_path
    )


@pytest.mark.parametrize(
    "change",
    [
        {"image": "other:1"},
        {"memory": "1g"},
        {"network": "bridge"},
        {"readOnlyRoot": False},
        {"tmpfs": ["/tmp"]},
        {"env": {"LANG": "C"}},
        {"binds": ["/a:/b"]},
        {"setupCommand": "apt-get update"},
        {"ulimits": {"nofile": 10}},
        {"user": "1000"},
    ],
)
def test_config_hash_sees_settings_that_need_a_new_container(change: dict[str, Any], tmp_path: Path) -> None:
    base = config_hash(SandboxDockerConfig(), "none", workspace=tmp_path)
    assert config_hash(SandboxDockerConfig.model_validate(change), "none", workspace=tmp_path) != base


def test_config_hash_sees_mounts_not_names_or_flags(tmp_path: Path) -> None:
    cfg = SandboxDockerConfig()
    base = config_hash(cfg, "none", workspace=tmp_path)
    assert config_hash(cfg, "ro", workspace=tmp_path, agent_workspace=tmp_path / "a") != base
    assert config_hash(cfg, "none", workspace=tmp_path / "other") != base
    same = SandboxDockerConfig(container_prefix="other-", dangerously_allow_external_bind_sources=True)
    assert config_hash(same, "none", workspace=tmp_path) == base


# -- exec -------------------------------------------------------------------------------------


def test_exec_args_and_path_mapping(tmp_path: Path) -> None:
    mounts = [Mount(str(tmp_path / "ws"), "/workspace"), Mount(str(tmp_path / "agent"), "/agent")]
    args = build_exec_args("box", "ls -la", cwd=f"{tmp_path}/ws/src", env={"FOO": "1"}, mounts=mounts)
    assert args == [
        "exec",
        "-i",
        "-w",
        "/workspace/src",
        "-e",
        "FOO=1",
        "-e",
        "HOME=/workspace",
        "box",
        "/bin/sh",
        "-c",
        "ls -la",
    ]
    for cwd, inner in [
        (f"{tmp_path}/ws", "/workspace"),
        (f"{tmp_path}/ws/", "/workspace"),
        (f"{tmp_path}/agent/docs", "/agent/docs"),
        (f"{tmp_path}/ws/../etc", "/workspace"),  # outside every mount after normalisation
        (f"{tmp_path}/wsx", "/workspace"),
        ("/workspace/a/b", "/workspace/a/b"),
        ("/etc", "/workspace"),
        ("", "/workspace"),
    ]:
        assert container_path(cwd, mounts, "/workspace") == inner, cwd


def test_host_paths_are_mapped_before_container_paths() -> None:
    mounts = [Mount("/srv/box", "/workspace"), Mount("/workspace", "/agent")]  # the agent's host dir is /workspace
    assert container_path("/workspace/notes", mounts, "/workspace") == "/agent/notes"
    assert container_path("/srv/box/a", mounts, "/workspace") == "/workspace/a"


def test_exec_args_env_is_cleaned() -> None:
    env = {"PATH": "/host/bin", "HOME": "/home/gw", "GITHUB_TOKEN": "x", "LANG": "C.UTF-8", "bad key": "1", "N": "a\0b"}
    args = build_exec_args("box", ["python3", "-V"], cwd="/workspace", env=env)
    assert args == [
        "exec",
        "-i",
        "-w",
        "/workspace",
        "-e",
        "LANG=C.UTF-8",
        "-e",
        "HOME=/workspace",
        "box",
        "python3",
        "-V",
    ]


def test_exec_args_timeout_wrapper_and_empty_argv() -> None:
    args = build_exec_args("box", "sleep 9", cwd="/workspace", env={}, timeout_s=2.5)
    wrapper, limit, command = args[-7:-4], args[-4], args[-3:]
    assert wrapper[:2] == ["/bin/sh", "-c"] and 'timeout -s KILL "$0" "$@" <&3' in wrapper[2]
    assert (limit, command) == ("3", ["/bin/sh", "-c", "sleep 9"])
    with pytest.raises(ValueError, match="empty argv"):
        build_exec_args("box", [], cwd="/", env={})


# -- lifecycle against a recording fake engine ------------------------------------------------


class FakeEngine:
    """Speaks the docker CLI's exit codes and ``inspect`` JSON for the calls the backend makes."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.containers: dict[str, dict[str, Any]] = {}
        self.fail: dict[str, tuple[int, str]] = {}
        self.image_checks: list[str] = []
        self.missing_images: set[str] = set()

    async def __call__(self, args: Sequence[str], timeout: float) -> tuple[int, str, str]:
        args = list(args)
        assert timeout > 0
        if args[:2] == ["image", "inspect"]:  # the image check before a create: kept apart from `calls`
            self.image_checks.append(args[-1])
            if args[-1] in self.missing_images:
                return 1, "[]\n", f"Error response from daemon: No such image: {args[-1]}\n"
            return 0, "sha256:0\n", ""
        self.calls.append(args)
        verb = args[0]
        if verb in self.fail:
            rc, err = self.fail[verb]
            return rc, "", err
        if verb == "inspect":
            box = self.containers.get(args[-1])
            if box is None:
                return 1, "[]\n", f"Error: No such container: {args[-1]}\n"
            return 0, json.dumps([{"State": {"Running": box["running"]}, "Config": {"Labels": box["labels"]}}]), ""
        if verb == "create":
            name = args[args.index("--name") + 1]
            if name in self.containers:
                return 125, "", "Conflict. The container name is already in use"
            labels = dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--label")
            self.containers[name] = {"running": False, "labels": labels}
            return 0, "c0ffee\n", ""
        if verb == "start":
            self.containers[args[1]]["running"] = True
            return 0, args[1] + "\n", ""
        if verb == "rm":
            if self.containers.pop(args[-1], None) is None:
                return 1, "", f"Error response from daemon: No such container: {args[-1]}"
            return 0, args[-1] + "\n", ""
        if verb in ("exec", "info"):
            return 0, "27.0\n", ""
        raise AssertionError(f"unexpected docker call {args}")

    def verbs(self) -> list[str]:
        return [c[0] for c in self.calls]


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def engine() -> FakeEngine:
    return FakeEngine()


@pytest.fixture
def clock() -> Clock:
    return Clock()


def sandbox(
    tmp_path: Path, engine: FakeEngine, clock: Clock, cfg: SandboxDockerConfig | None = None, **kw: Any
) -> DockerSandbox:
    return DockerSandbox(
        cfg or SandboxDockerConfig(), state_dir=tmp_path / "state", runner=engine, clock=clock, home=HOME, **kw
    )


async def test_ensure_creates_when_missing(tmp_path: Path, engine: FakeEngine, clock: Clock) -> None:
    sb = sandbox(tmp_path, engine, clock)
    name = await sb.ensure("agent:main")
    assert name == container_name("homarus-sbx-", "agent:main")
    assert engine.verbs() == ["inspect", "create", "start"]
    assert engine.calls[2] == ["start", name]
    ws = tmp_path / "state" / "sandboxes" / "agent-main"
    assert ws.is_dir() and stat.S_IMODE(ws.stat().st_mode) == 0o700
    assert f"{ws}:/workspace:z" in engine.calls[1]
    labels = engine.containers[name]["labels"]
    assert labels["homarus.sessionKey"] == "agent:main" and labels["homarus.createdAtMs"] == str(T0)
    entry = sb.registry.load()[name]
    assert (entry.scope_key, entry.created_at_ms, entry.last_used_at_ms) == ("agent:main", T0, T0)
    assert entry.config_hash == labels["homarus.configHash"] == sb._hash(ws)


async def test_setup_command_runs_once_after_start(tmp_path: Path, engine: FakeEngine, clock: Clock) -> None:
    sb = sandbox(tmp_path, engine, clock, SandboxDockerConfig(setup_command="mkdir -p /workspace/.cache"))
    name = await sb.ensure("s")
    assert engine.calls[-1] == ["exec", "-i", name, "/bin/sh", "-lc", "mkdir -p /workspace/.cache"]
    await sb.ensure("s")  # checked a moment ago: no engine call at all
    assert engine.verbs() == ["inspect", "create", "start", "exec"]
    clock.now += RECHECK_MS
    await sb.ensure("s")
    assert engine.verbs() == ["inspect", "create", "start", "exec", "inspect"]


async def test_failed_setup_removes_the_container(tmp_path: Path, engine: FakeEngine, clock: Clock) -> None:
    engine.fail["exec"] = (2, "apt-get: not found")
    sb = sandbox(tmp_path, engine, clock, SandboxDockerConfig(setup_command="apt-get update"))
    with pytest.raises(Unavailable, match=r"setupCommand.*apt-get: not found"):
        await sb.ensure("s")
    assert engine.verbs() == ["inspect", "create", "start", "exec", "rm"]
    assert engine.containers == {} and sb.registry.load() == {}


async def test_engine_failure_is_unavailable(tmp_path: Path, engine: FakeEngine, clock: Clock) -> None:
    engine.fail["create"] = (125, "Error response from daemon: invalid mount config")
    with pytest.raises(Unavailable, match=r"docker create failed \(exit 125\): Error response from daemon: invalid"):
        await sandbox(tmp_path, engine, clock).ensure("s")
    assert engine.verbs() == ["inspect", "create", "rm"]  # a create that timed out may have made it
    engine.fail = {"inspect": (1, "Cannot connect to the Docker daemon")}
    with pytest.raises(Unavailable, match="Cannot connect"):
        await sandbox(tmp_path, engine, clock).ensure("s")


async def test_a_missing_image_is_named_with_how_to_make_it(tmp_path: Path, engine: FakeEngine, clock: Clock) -> None:
    engine.missing_images.add("homarus-sandbox:bookworm-slim")
    with pytest.raises(Unavailable, match=r"image homarus-sandbox:bookworm-slim is not on .*`make sandbox-image`"):
        await sandbox(tmp_path, engine, clock).ensure("s")
    assert "create" not in engine.verbs()  # the default image is never pulled: no registry has it
    # another image may be pulled by `docker create`; when that fails, the error names it
    engine.fail["create"] = (125, "Unable to find image 'acme/tools:1' locally\npull access denied for acme/tools")
    with pytest.raises(Unavailable, match=r"the sandbox image acme/tools:1 is not on the Docker engine and could"):
        await sandbox(tmp_path, engine, clock, SandboxDockerConfig(image="acme/tools:1")).ensure("s")


@pytest.mark.parametrize(
    "rc, err",
    [
        (1, "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"),
        (1, "permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock"),
        (127, "the docker CLI was not found (docker)"),
    ],
)
async def test_no_engine_is_one_clear_error(
    tmp_path: Path, engine: FakeEngine, clock: Clock, rc: int, err: str
) -> None:
    engine.fail["inspect"] = (rc, err)
    with pytest.raises(Unavailable, match=r"(no Docker engine answers|the docker CLI cannot run here).*none ran"):
        await sandbox(tmp_path, engine, clock).ensure("s")
    assert engine.verbs() == ["inspect"]


async def test_ensure_reuses_when_hash_matches(tmp_path: Path, engine: FakeEngine, clock: Clock) -> None:
    sb = sandbox(tmp_path, engine, clock)
    name = await sb.ensure("s")
    clock.now += 3_600_000
    assert await sandbox(tmp_path, engine, clock).ensure("s") == name  # a new gateway process, same settings
    assert engine.verbs() == ["inspect", "create", "start", "inspect"]
    entry = sb.registry.load()[name]
    assert (entry.created_at_ms, entry.last_used_at_ms) == (T0, T0 + 3_600_000)


async def test_ensure_starts_a_stopped_container(tmp_path: Path, engine: FakeEngine, clock: Clock) -> None:
    sb = sandbox(tmp_path, engine, clock)
    name = await sb.ensure("s")
    engine.containers[name]["running"] = False  # the host rebooted
    clock.now += RECHECK_MS
    await sb.ensure("s")
    assert engine.verbs()[3:] == ["inspect", "start"]


async def test_ensure_recreates_when_stale_and_cold(tmp_path: Path, engine: FakeEngine, clock: Clock) -> None:
    name = await sandbox(tmp_path, engine, clock).ensure("s")
    clock.now += HOT_WINDOW_MS + 1
    changed = sandbox(tmp_path, engine, clock, SandboxDockerConfig(memory="1g"))
    await changed.ensure("s")
    assert engine.verbs() == ["inspect", "create", "start", "inspect", "rm", "create", "start"]
    assert engine.calls[4] == ["rm", "-f", name]
    assert "--memory" in engine.calls[5]
    entry = changed.registry.load()[name]
    assert (
        entry.created_at_ms == clock.now
        and entry.config_hash == engine.containers[name]["labels"]["homarus.configHash"]
    )


async def test_ensure_keeps_a_hot_container(
    tmp_path: Path, engine: FakeEngine, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    name = await sandbox(tmp_path, engine, clock).ensure("s")
    old_hash = engine.containers[name]["labels"]["homarus.configHash"]
    clock.now += 60_000
    changed = sandbox(tmp_path, engine, clock, SandboxDockerConfig(memory="1g"))
    with caplog.at_level(logging.WARNING, logger="homarus.sandbox.docker"):
        assert await changed.ensure("s") == name
    assert engine.verbs() == ["inspect", "create", "start", "inspect"]
    assert f"docker rm -f {name}" in caplog.text and "used 60 s ago" in caplog.text
    assert changed.registry.load()[name].config_hash == old_hash  # the registry tells the truth
    clock.now += HOT_WINDOW_MS  # idle since then: recreated on the next call
    await changed.ensure("s")
    assert engine.verbs()[4:] == ["inspect", "rm", "create", "start"]


async def test_a_container_without_a_registry_entry_is_cold(tmp_path: Path, engine: FakeEngine, clock: Clock) -> None:
    sb = sandbox(tmp_path, engine, clock)
    await sb.ensure("s")
    sb.registry.path.unlink()
    await sandbox(tmp_path, engine, clock, SandboxDockerConfig(memory="1g")).ensure("s")
    assert engine.verbs()[3:] == ["inspect", "rm", "create", "start"]


async def test_foreign_container_is_never_removed(tmp_path: Path, engine: FakeEngine, clock: Clock) -> None:
    sb = sandbox(tmp_path, engine, clock)
    name = sb.container_name("s")
    engine.containers[name] = {"running": True, "labels": {"maintainer": "someone"}}
    with pytest.raises(Unavailable, match="was not created by Homarus"):
        await sb.ensure("s")
    engine.containers[name]["labels"] = {"homarus.sandbox": "1", "homarus.sessionKey": "other"}
    with pytest.raises(Unavailable, match="was not created by Homarus"):
        await sb.ensure("s")
    assert engine.verbs() == ["inspect", "inspect"]


async def test_invalid_config_makes_no_docker_call(tmp_path: Path, engine: FakeEngine, clock: Clock) -> None:
    with pytest.raises(SandboxSecurityError, match="network mode"):
        await sandbox(tmp_path, engine, clock, SandboxDockerConfig(network="host")).ensure("s")
    assert engine.calls == []


async def test_concurrent_ensures_create_once(tmp_path: Path, engine: FakeEngine, clock: Clock) -> None:
    sb = sandbox(tmp_path, engine, clock)
    names = await asyncio.gather(*(sb.ensure("s") for _ in range(5)))
    assert len(set(names)) == 1 and engine.verbs().count("create") == 1


def test_decide_table() -> None:
    own = {"homarus.sandbox": "1", "homarus.sessionKey": "k", "homarus.configHash": "h"}
    from homarus.sandbox.docker import ContainerState

    state = ContainerState(True, own)
    assert decide(None, "k", "h", None, T0) == "create"
    assert decide(state, "k", "h", None, T0) == "reuse"
    assert decide(state, "k", "h2", None, T0) == "recreate"
    assert decide(state, "k", "h2", T0 - HOT_WINDOW_MS + 1, T0) == "keep-stale"
    assert decide(state, "k", "h2", T0 - HOT_WINDOW_MS, T0) == "recreate"
    assert decide(state, "k", "h2", T0 + 10_000, T0) == "keep-stale"  # the clock went back: keep it
    assert decide(state, "other", "h", None, T0) == "foreign"
    assert decide(ContainerState(True, {}), "k", "h", None, T0) == "foreign"


async def test_prune_idle_and_old(tmp_path: Path, engine: FakeEngine, clock: Clock) -> None:
    sb = sandbox(tmp_path, engine, clock)
    old = await sb.ensure("old")  # created at T0, used all along
    idle = await sb.ensure("idle")
    clock.now += 8 * 86_400_000  # 8 days later
    fresh = await sb.ensure("fresh")
    entries = sb.registry.load()
    entries[old].last_used_at_ms = clock.now - 3_600_000  # used an hour ago, but 8 days old
    sb.registry.save(entries)
    removed = await sb.prune()  # idleHours 24, maxAgeDays 7
    assert sorted(removed) == sorted([old, idle])
    assert set(sb.registry.load()) == {fresh} and set(engine.containers) == {fresh}
    clock.now += 2 * 3_600_000
    assert await sb.prune(idle_hours=1, max_age_days=0) == [fresh]
    assert await sb.prune() == []


async def test_prune_keeps_what_docker_refuses_to_remove(tmp_path: Path, engine: FakeEngine, clock: Clock) -> None:
    sb = sandbox(tmp_path, engine, clock)
    name = await sb.ensure("s")
    clock.now += 2 * 86_400_000
    engine.fail["rm"] = (1, "Error response from daemon: device or resource busy")
    assert await sb.prune() == []
    assert name in sb.registry.load()
    del engine.fail["rm"]
    del engine.containers[name]  # removed behind our back: forgetting it is fine
    assert await sb.prune() == [name] and sb.registry.load() == {}


async def test_prune_disabled_rules(tmp_path: Path, engine: FakeEngine, clock: Clock) -> None:
    sb = sandbox(tmp_path, engine, clock)
    await sb.ensure("s")
    clock.now += 365 * 86_400_000
    assert await sb.prune(idle_hours=0, max_age_days=0) == []


async def test_remove(tmp_path: Path, engine: FakeEngine, clock: Clock) -> None:
    sb = sandbox(tmp_path, engine, clock)
    name = await sb.ensure("s")
    assert await sb.remove("s") and engine.calls[-1] == ["rm", "-f", name] and sb.registry.load() == {}


# -- the registry file ------------------------------------------------------------------------


async def test_registry_file_is_private_and_complete(tmp_path: Path, engine: FakeEngine, clock: Clock) -> None:
    sb = sandbox(tmp_path, engine, clock)
    name = await sb.ensure("agent:main")
    path = tmp_path / "state" / "sandbox" / "containers.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [p.name for p in path.parent.iterdir()] == ["containers.json"]  # no temp file left behind
    body = json.loads(path.read_text())
    assert body["version"] == 1
    assert body["entries"] == [
        {
            "name": name,
            "scopeKey": "agent:main",
            "createdAtMs": T0,
            "lastUsedAtMs": T0,
            "configHash": engine.containers[name]["labels"]["homarus.configHash"],
            "image": "homarus-sandbox:bookworm-slim",
        }
    ]


def test_registry_save_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reg = ContainerRegistry(tmp_path / "sandbox" / "containers.json")
    reg.save({"a": RegistryEntry("a", "k", 1, 2)})
    before = reg.path.read_bytes()

    def boom(*_: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="No space"):
        reg.save({"b": RegistryEntry("b", "k", 1, 2)})
    assert reg.path.read_bytes() == before
    assert [p.name for p in reg.path.parent.iterdir()] == ["containers.json"]


@pytest.mark.parametrize(
    "text",
    ["{not json", "", "[]", '{"entries": 5}', "\x00\x01", '{"entries": [1, {"name": "x"}]}'],
)
async def test_corrupt_registry_is_read_as_empty(
    text: str, tmp_path: Path, engine: FakeEngine, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    sb = sandbox(tmp_path, engine, clock)
    sb.registry.path.parent.mkdir(parents=True)
    sb.registry.path.write_text(text)
    assert sb.registry.load() == {}
    name = await sb.ensure("s")
    assert list(sb.registry.load()) == [name]  # rewritten whole


def test_registry_skips_malformed_entries(tmp_path: Path) -> None:
    reg = ContainerRegistry(tmp_path / "containers.json")
    good = {"name": "a", "scopeKey": "k", "createdAtMs": 1, "lastUsedAtMs": 2, "configHash": "h"}
    bad = [
        {**good, "name": 5},
        {**good, "createdAtMs": "1"},
        {**good, "lastUsedAtMs": True},
        {**good, "scopeKey": None},
    ]
    reg.path.write_text(json.dumps({"entries": [*bad, good, "x"]}))
    assert reg.load() == {"a": RegistryEntry("a", "k", 1, 2, "h", None)}


# -- exec through the sandbox -----------------------------------------------------------------


async def test_exec_argv_maps_the_scope_workspace(tmp_path: Path, engine: FakeEngine, clock: Clock) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    sb = sandbox(tmp_path, engine, clock, workspace_access="ro", agent_workspace=agent)
    name = await sb.ensure("s")
    ws = sb.workspace_for("s")
    argv = sb.exec_argv(name, "make", f"{ws}/build", {"CC": "gcc"})
    assert argv == [
        "docker",
        "exec",
        "-i",
        "-w",
        "/workspace/build",
        "-e",
        "CC=gcc",
        "-e",
        "HOME=/workspace",
        name,
        "/bin/sh",
        "-c",
        "make",
    ]
    assert sb.exec_argv(name, "ls", f"{agent}/notes", {})[4] == "/agent/notes"
    assert sb.exec_argv(name, "ls", "/etc", {})[4] == "/workspace"
    assert sb.exec_argv("unknown", "ls", f"{ws}/build", {})[4] == "/workspace"
    assert any(a == f"{agent}:/agent:ro,z" for a in engine.calls[1])


async def test_rw_access_mounts_the_agent_workspace(tmp_path: Path, engine: FakeEngine, clock: Clock) -> None:
    agent = tmp_path / "agent"
    sb = sandbox(tmp_path, engine, clock, workspace_access="rw", agent_workspace=agent)
    name = await sb.ensure("s")
    assert agent.is_dir() and f"{agent}:/workspace:z" in engine.calls[1]
    assert sb.exec_argv(name, "pwd", f"{agent}/src", {})[4] == "/workspace/src"
    with pytest.raises(ValueError, match="needs the agent workspace"):
        sandbox(tmp_path, engine, clock, workspace_access="rw")


async def test_launch(tmp_path: Path, engine: FakeEngine, clock: Clock) -> None:
    sb = sandbox(tmp_path, engine, clock)
    launch = await sb.launch("s", "echo hi", str(sb.workspace_for("s")), {"GH_TOKEN": "x"}, timeout_s=10)
    assert launch.argv[:6] == ["docker", "exec", "-i", "-w", "/workspace", "-e"]
    assert launch.argv[-4:] == ["10", "/bin/sh", "-c", "echo hi"] and "timeout -s KILL" in launch.argv[-5]
    assert "GH_TOKEN=x" not in launch.argv and launch.pass_fds == () and launch.cwd == "/"
    assert "PATH" in launch.env
    assert launch.preexec_fn is None
    launch.close()


def test_from_config(tmp_path: Path) -> None:
    cfg = SandboxConfig.model_validate(
        {
            "workspaceAccess": "ro",
            "workspaceRoot": str(tmp_path / "boxes"),
            "prune": {"idleHours": 2},
            "docker": {"image": "alpine:3", "containerPrefix": "t-"},
        }
    )
    sb = DockerSandbox.from_config(cfg, state_dir=tmp_path / "state", agent_workspace=tmp_path / "agent")
    assert sb.cfg.image == "alpine:3" and sb.workspace_access == "ro" and sb.prune_cfg.idle_hours == 2
    assert sb.workspace_for("a:b") == tmp_path / "boxes" / "a-b"
    assert sb.container_name("a:b").startswith("t-a-b-")
    assert isinstance(sb.runner, SubprocessRunner)


# -- the real runner, with a stand-in docker binary -------------------------------------------


async def test_subprocess_runner(tmp_path: Path) -> None:
    docker = fake_docker(tmp_path, 'echo "args:$*"; echo oops >&2; exit 3')
    assert await SubprocessRunner(docker)(["inspect", "a b"], 5) == (3, "args:inspect a b\n", "oops\n")
    assert (await SubprocessRunner(str(tmp_path / "missing"))(["info"], 5))[0] == 127


async def test_subprocess_runner_timeout_kills_the_group(tmp_path: Path) -> None:
    marker = tmp_path / "survived"
    docker = fake_docker(tmp_path, f"(sleep 0.8; touch {marker}) & sleep 30")
    started = time.monotonic()
    rc, _, err = await SubprocessRunner(docker)(["create"], 0.3)
    assert rc == 124 and "timed out" in err and time.monotonic() - started < 5
    await asyncio.sleep(1.2)
    assert not marker.exists()


def test_engine_available(tmp_path: Path) -> None:
    assert not engine_available(str(tmp_path / "missing"))
    assert engine_available(fake_docker(tmp_path, 'test "$1" = info && echo 27.3.1'))
    assert not engine_available(fake_docker(tmp_path, "echo 'Cannot connect' >&2; exit 1"))
    started = time.monotonic()
    assert not engine_available(fake_docker(tmp_path, "exec sleep 30"), timeout=0.3)
    assert time.monotonic() - started < 3


def test_docker_cli_env_passes_only_client_settings() -> None:
    env = docker_cli_env({"PATH": "/p", "HOME": "/h", "DOCKER_HOST": "unix:///x", "OPENAI_API_KEY": "sk", "FOO": "1"})
    assert env == {"PATH": "/p", "HOME": "/h", "DOCKER_HOST": "unix:///x"}


# -- a real engine ----------------------------------------------------------------------------


def _local_image() -> str | None:
    """An image already on the engine (registries may be unreachable): the named one, Debian's
    slim image, or the base made offline by scripts/docker-offline-base.sh."""
    import subprocess

    wanted = os.environ.get("HOMARUS_TEST_DOCKER_IMAGE")
    for image in (
        [wanted] if wanted else ["homarus-sandbox:bookworm-slim", "debian:bookworm-slim", "homarus-base:bookworm"]
    ):
        found = subprocess.run(["docker", "image", "inspect", image], capture_output=True, timeout=30, check=False)
        if found.returncode == 0:
            return image
    return None


@pytest.mark.skipif(not engine_available(), reason="no Docker engine answers `docker info`")
async def test_real_engine_smoke(tmp_path: Path) -> None:  # pragma: no cover - needs an engine
    image = _local_image()
    if image is None:
        pytest.skip("no image on the engine (pull debian:bookworm-slim, or scripts/docker-offline-base.sh)")
    cfg = SandboxDockerConfig(image=image, container_prefix="homarus-test-", pids_limit=64, memory="256m")
    sb = DockerSandbox(cfg, state_dir=tmp_path / "state")
    key = f"test:{os.getpid()}:{time.time_ns()}"
    try:
        name = await sb.ensure(key)
        ws = sb.workspace_for(key)
        script = "echo hi > /workspace/out; touch /etc/x 2>/dev/null || echo ro; cat /proc/net/dev | wc -l"
        proc = await asyncio.create_subprocess_exec(
            *sb.exec_argv(name, script, str(ws), {}, timeout_s=30),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        lines = out.decode().split()
        assert proc.returncode == 0, err
        assert lines[0] == "ro" and lines[1] == "3"  # read-only root; only `lo` (two header lines)
        assert await sb.ensure(key) == name
    finally:
        await sb.remove(key)


async def test_launch_default_time_limit(tmp_path: Path, engine: FakeEngine, clock: Clock) -> None:
    sb = DockerSandbox(SandboxDockerConfig(), state_dir=tmp_path, runner=engine, clock=clock, exec_timeout_s=120)
    argv = (await sb.launch("s", ["id"], "/workspace", {})).argv
    assert argv[-2:] == ["120", "id"] and "timeout -s KILL" in argv[-3]
    assert not any(
        "timeout" in a for a in (await sandbox(tmp_path, engine, clock).launch("s", ["id"], "/workspace", {})).argv
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_isolated_workspace_belongs_to_a_numeric_container_user(tmp_path: Path) -> None:
    numeric = DockerSandbox(SandboxDockerConfig(user="1234:5678"), state_dir=tmp_path)
    st = numeric.workspace_for("a").stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (1234, 5678, 0o700)
    named = DockerSandbox(SandboxDockerConfig(user="sandbox"), state_dir=tmp_path)
    assert named.workspace_for("b").stat().st_uid == 0
    agent = tmp_path / "agent"
    rw = DockerSandbox(
        SandboxDockerConfig(user="1234"), state_dir=tmp_path, workspace_access="rw", agent_workspace=agent
    )
    assert rw.workspace_for("c").stat().st_uid == 0  # the agent's own workspace is never given away


def test_sandbox_limits_apply_to_the_container_unless_docker_sets_its_own() -> None:
    limits = SandboxLimits(pids=64, memory_mb=256, file_size_mb=2, cpu_seconds=30)
    cfg = with_limits(SandboxDockerConfig(), limits)
    assert (cfg.pids_limit, cfg.memory) == (64, "256m")
    assert cfg.ulimits == {"fsize": 2 * 1024 * 1024, "cpu": 30}
    own = with_limits(SandboxDockerConfig(pids_limit=10, memory="1g", ulimits={"cpu": 5}), limits)
    assert (own.pids_limit, own.memory, own.ulimits["cpu"]) == (10, "1g", 5)


def test_the_container_user_owns_what_it_works_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = tmp_path / "agent"
    agent.mkdir(mode=0o700)
    st = agent.stat()
    default = SandboxDockerConfig()
    assert container_user(default, "rw", agent) == container_user(default, "ro", agent) == f"{st.st_uid}:{st.st_gid}"
    assert container_user(SandboxDockerConfig(user="1234:1234"), "rw", agent) == "1234:1234"  # configured: as is
    monkeypatch.setattr("homarus.sandbox.docker_args.os.geteuid", lambda: 0)
    assert container_user(default, "none", None) == "65534:65534"  # root gives the isolated workspace to it
    monkeypatch.setattr("homarus.sandbox.docker_args.os.geteuid", lambda: 1000)
    monkeypatch.setattr("homarus.sandbox.docker_args.os.getegid", lambda: 1000)
    assert container_user(default, "none", None) == "1000:1000"  # the gateway's user owns it
