"""The systems under test in the side-by-side bench, each started on loopback against its own copy
of the same fake model: Homarus, the original OpenClaw gateway, nanobot-ai's API server and
hermes-agent's API server platform.

OpenClaw is installed and started with the scripts in ``../shared/peers/openclaw/`` (install.sh,
start.sh, stop.sh); nanobot-ai and hermes-agent are installed from PyPI, each into its own venv
under ``~/.cache``. The
fake model is the peers' ``fake_llm.py`` (stdlib, OpenAI Chat Completions, SSE), which logs every
request body, so each system's model request is measured the same way.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil

from bench.harness import HOST, MIB, free_port, homarus_executable

PEER_DIR = Path(__file__).resolve().parents[2] / "shared" / "peers" / "openclaw"
PEER_ROOT = Path(os.environ.get("PEER_ROOT", Path.home() / ".cache" / "openclaw-peer"))
NANOBOT_ROOT = Path(os.environ.get("NANOBOT_ROOT", Path.home() / ".cache" / "nanobot-peer"))
NANOBOT_VERSION = "0.3.5"
HERMES_ROOT = Path(os.environ.get("HERMES_ROOT", Path.home() / ".cache" / "hermes-peer"))
HERMES_VERSION = "0.19.0"
HERMES_KEY = "peer-hermes-key-0123456789abcdef"  # a throwaway key for a server on loopback
GATEWAY_TOKEN = "peer-gateway-token-0123456789abcdef"  # the peer scripts' throwaway local tokens
HOOKS_TOKEN = "peer-hooks-token-fedcba9876543210"
START_TIMEOUT_S = 180.0


def tree_rss_mib(pid: int) -> tuple[float, float]:
    """(RSS of ``pid``, RSS of it and all its descendants) in MiB; zeros once it is gone."""
    try:
        proc = psutil.Process(pid)
        own = proc.memory_info().rss
        kids = sum(c.memory_info().rss for c in proc.children(recursive=True))
    except psutil.Error:
        return 0.0, 0.0
    return own / MIB, (own + kids) / MIB


def tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its live descendants."""
    try:
        procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0.0
    for p in procs:
        with contextlib.suppress(psutil.Error):
            t = p.cpu_times()
            total += t.user + t.system
    return total


def wait_http(
    url: str,
    proc: subprocess.Popen[bytes] | None,
    timeout_s: float = START_TIMEOUT_S,
    *,
    since: float | None = None,
    client: httpx.Client | None = None,
) -> float:
    """Poll ``url`` every 2 ms until it answers 200; seconds waited (from ``since``, a
    ``perf_counter`` reading, when given). One client makes every poll (``client``, built before
    the process under test starts): ``httpx.get`` builds a client and its TLS context each time
    (~20 ms a poll on the host of ``RESULTS.md``), which made the poller answer every ~26 ms and
    kept a core busy while the process under test started."""
    if client is None:
        with httpx.Client(timeout=1.0) as own:
            return wait_http(url, proc, timeout_s, since=since, client=own)
    started = time.perf_counter() if since is None else since
    deadline = started + timeout_s
    while time.perf_counter() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if client.get(url).status_code == 200:
                return time.perf_counter() - started
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{url}: the process exited with {proc.returncode} before answering")
        time.sleep(0.002)
    raise RuntimeError(f"{url} did not answer 200 within {timeout_s} s")


@dataclass
class FakeModel:
    """One ``fake_llm.py`` process on a free port, logging request bodies to its own file."""

    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="peer-llm-")))
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    def start(self) -> None:
        self.port = free_port()
        cmd = [sys.executable, str(PEER_DIR / "fake_llm.py"), "--port", str(self.port), "--log", str(self.log)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_http(f"{self.base_url}/models", self.proc, 20)

    @property
    def log(self) -> Path:
        return self.workdir / "requests.jsonl"

    def bodies(self) -> list[bytes]:
        """Every request body so far, re-encoded compactly (the log holds each one as a JSON line)."""
        with contextlib.suppress(FileNotFoundError):
            lines = self.log.read_text(encoding="utf-8").splitlines()
            return [_compact(line) for line in lines if line.strip()]
        return []

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        shutil.rmtree(self.workdir, ignore_errors=True)


def _compact(line: str) -> bytes:
    record = json.loads(line)
    body = record.get("body", record) if isinstance(record, dict) else record
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass
class Spawned:
    """A server process of ours on a free loopback port, with its own temp dir and log."""

    model: FakeModel
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="peer-")))
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None

    def spawn(self, cmd: list[str], env: dict[str, str], log_name: str, health_path: str = "/health") -> float:
        """Start ``cmd``; seconds until ``health_path`` answers 200."""
        with httpx.Client(timeout=1.0) as client:
            started = time.perf_counter()
            with open(self.workdir / log_name, "wb") as log:
                self.proc = subprocess.Popen(
                    cmd, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
                )
            return wait_http(f"http://{HOST}:{self.port}{health_path}", self.proc, since=started, client=client)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 15 s."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


@dataclass
class Homarus(Spawned):
    """``homarus gateway run`` with a config equivalent to the one start.sh writes for OpenClaw."""

    name: str = "Homarus"
    starts: int = 0

    def config(self) -> dict[str, Any]:
        provider = {
            "api": "openai-completions",
            "baseUrl": self.model.base_url,
            "apiKey": "fake-local",
            "models": [{"id": "fake-model"}],
        }
        return {
            "gateway": {"bind": "loopback", "http": {"endpoints": {"chatCompletions": {"enabled": True}}}},
            "hooks": {"enabled": True, "token": HOOKS_TOKEN, "path": "/hooks"},
            "models": {"providers": {"fake": provider}},
            "agents": {"defaults": {"model": {"primary": "fake/fake-model"}}},
        }

    def start(self) -> float:
        """Spawn with a fresh state dir (like start.sh's FRESH=1); seconds to the first ``GET /health`` 200."""
        self.starts += 1
        state = self.workdir / f"state-{self.starts}"
        state.mkdir(parents=True)
        (state / "homarus.json").write_text(json.dumps(self.config()), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("HOMARUS_")}
        env["HOMARUS_STATE_DIR"] = str(state)
        self.port = free_port()
        cmd = [homarus_executable(), "gateway", "run", "--port", str(self.port), "--token", GATEWAY_TOKEN]
        return self.spawn(cmd, env, "gateway.log")


@dataclass
class OpenClaw:
    """The original gateway through start.sh/stop.sh (FRESH=1: cold state every start)."""

    model: FakeModel
    port: int = 0
    name: str = "OpenClaw"
    startup: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def install() -> None:
        subprocess.run(["bash", str(PEER_DIR / "install.sh")], check=True, stdout=subprocess.DEVNULL)

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(PEER_ROOT=str(PEER_ROOT), LLM_PORT=str(self.model.port), NO_FAKE_LLM="1", FRESH="1")
        env.update(OC_TOKEN=GATEWAY_TOKEN, OC_HOOKS_TOKEN=HOOKS_TOKEN)
        return env

    def start(self) -> float:
        """start.sh (it waits for /readyz); seconds from its spawn to ``/healthz`` 200, as it reports."""
        self.port = free_port()
        out = subprocess.run(
            ["bash", str(PEER_DIR / "start.sh"), str(self.port)],
            env=self._env(),
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT_S,
            check=True,
        )
        self.startup = json.loads(out.stdout.strip().splitlines()[-1])
        return float(self.startup["healthz_ms"]) / 1000

    @property
    def state_dir(self) -> Path:
        return PEER_ROOT / "openclaw-home" / f"p{self.port}"

    @property
    def pid(self) -> int:
        return int((self.state_dir / "run" / "gateway.pid").read_text().strip())

    def stop(self) -> None:
        """stop.sh, then the state dir goes (every start is a fresh one)."""
        if self.port:
            subprocess.run(
                ["bash", str(PEER_DIR / "stop.sh"), str(self.port)], env=self._env(), capture_output=True, check=False
            )
            if self.state_dir.is_relative_to(PEER_ROOT):
                shutil.rmtree(self.state_dir, ignore_errors=True)

    def cleanup(self) -> None:
        self.stop()


def _venv_install(root: Path, dist: str, version: str, extra: list[str]) -> Path:
    """``dist==version`` (and ``extra`` requirements) in the venv ``root/venv``, once; its bin dir."""
    venv = root / "venv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    probe = [str(python), "-c", f"import importlib.metadata as m; print(m.version({dist!r}))"]
    found = subprocess.run(probe, capture_output=True, text=True, check=False).stdout.strip()
    if found != version:
        pip = [str(python), "-m", "pip", "install", "--quiet", f"{dist}=={version}", *extra]
        subprocess.run(pip, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return venv / "bin"


@dataclass
class Nanobot(Spawned):
    """``nanobot serve`` (nanobot-ai 0.3.5, its OpenAI-compatible API) on the same fake model."""

    name: str = "nanobot"

    @staticmethod
    def executable() -> Path:
        return NANOBOT_ROOT / "venv" / "bin" / "nanobot"

    @classmethod
    def install(cls) -> None:
        venv = _venv_install(NANOBOT_ROOT, "nanobot-ai", NANOBOT_VERSION, []).parent
        has_api = subprocess.run([str(venv / "bin" / "python"), "-c", "import aiohttp"], check=False).returncode == 0
        if not has_api:  # `nanobot serve` needs its optional "api" feature (it installs aiohttp)
            subprocess.run([str(cls.executable()), "plugins", "enable", "api"], check=True, capture_output=True)

    def start(self) -> float:
        """Spawn; seconds to the first ``GET /health`` 200."""
        self.port = free_port()
        home = self.workdir / "home"
        home.mkdir(parents=True, exist_ok=True)
        config = {
            "agents": {
                "defaults": {"model": "fake-model", "provider": "custom", "workspace": str(self.workdir / "ws")}
            },
            "providers": {"custom": {"apiKey": "fake-local", "apiBase": self.model.base_url}},
            "api": {"host": HOST, "port": self.port},
        }
        path = self.workdir / "config.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        env = {**os.environ, "HOME": str(home)}
        cmd = [str(self.executable()), "serve", "--config", str(path), "--port", str(self.port), "--host", HOST]
        return self.spawn(cmd, env, "serve.log")


@dataclass
class Hermes(Spawned):
    """``hermes gateway run`` (hermes-agent 0.19.0) with only its OpenAI-compatible API server
    platform, a custom provider pointed at the fake model and ``context_length`` set (so it asks
    no outside service for the model's limits); a fresh ``HERMES_HOME`` for each start."""

    name: str = "hermes"
    starts: int = 0

    @staticmethod
    def executable() -> Path:
        return HERMES_ROOT / "venv" / "bin" / "hermes"

    @staticmethod
    def install() -> None:
        # the API server platform needs aiohttp (hermes-agent's "messaging" extra pins this one)
        _venv_install(HERMES_ROOT, "hermes-agent", HERMES_VERSION, ["aiohttp==3.14.1"])

    def start(self) -> float:
        """Spawn with a fresh home; seconds to the first ``GET /health`` 200."""
        self.starts += 1
        self.port = free_port()
        home = self.workdir / f"home-{self.starts}"
        home.mkdir(parents=True)
        config = (
            "model:\n  provider: custom\n"
            f"  base_url: {self.model.base_url}\n"
            "  default: fake-model\n  api_key: fake-local\n  context_length: 128000\n"
        )
        (home / "config.yaml").write_text(config, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "API_SERVER_"))}
        env.update(HERMES_HOME=str(home), HOME=str(home), API_SERVER_ENABLED="true", API_SERVER_KEY=HERMES_KEY)
        env.update(API_SERVER_HOST=HOST, API_SERVER_PORT=str(self.port))
        return self.spawn([str(self.executable()), "gateway", "run"], env, f"gateway-{self.starts}.log")
