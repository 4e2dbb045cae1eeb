"""How the Docker backend talks to the engine: the docker CLI as an asyncio subprocess.

A :data:`Runner` takes the docker arguments (without the binary) and a timeout and returns
``(exit code, stdout, stderr)``; tests swap in a recording fake. The CLI gets only the gateway's
variables it needs (``PATH``, ``HOME``, ``DOCKER_*``, ...), never the container's environment.
Failures to run it are exit codes, like the shell's: 127 not found, 126 not runnable, 124 timed out.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
from collections.abc import Awaitable, Callable, Mapping, Sequence

from homarus.errors import Unavailable

__all__ = [
    "ENGINE_PROBE_TIMEOUT_S",
    "Runner",
    "SubprocessRunner",
    "docker_cli_env",
    "engine_available",
    "engine_version",
    "raise_if_no_engine",
    "tail",
]

_NO_ENGINE = re.compile(
    r"cannot connect to the docker daemon|docker daemon is not running|dial unix .*(no such file|connection refused)"
    r"|permission denied while trying to connect|error during connect",
    re.IGNORECASE,
)
ENGINE_PROBE_TIMEOUT_S = 3.0
_ERR_TAIL = 600

#: ``(args without the docker binary, timeout in seconds) -> (exit code, stdout, stderr)``
Runner = Callable[[Sequence[str], float], Awaitable[tuple[int, str, str]]]

_CLI_ENV_KEYS = ("PATH", "HOME", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "LANG", "LC_ALL", "TMPDIR")


def docker_cli_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """What the docker client needs from the gateway's environment (never passed into a container)."""
    source = os.environ if environ is None else environ
    env = {k: v for k, v in source.items() if k in _CLI_ENV_KEYS or k.startswith("DOCKER_")}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    return env


def tail(text: str) -> str:
    """The end of an error output, short enough for a log line or an error message."""
    text = text.strip()
    return text if len(text) <= _ERR_TAIL else "..." + text[-_ERR_TAIL:]


class SubprocessRunner:
    """Runs the docker CLI as an asyncio subprocess; on timeout or cancellation its group is killed."""

    def __init__(self, docker: str = "docker") -> None:
        self.docker = docker

    async def __call__(self, args: Sequence[str], timeout: float) -> tuple[int, str, str]:
        try:
            proc = await asyncio.create_subprocess_exec(
                self.docker,
                *args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=docker_cli_env(),
                start_new_session=True,
            )
        except FileNotFoundError:
            return 127, "", f"the docker CLI was not found ({self.docker})"
        except OSError as exc:
            return 126, "", f"could not run {self.docker}: {exc.strerror or exc}"
        try:
            async with asyncio.timeout(timeout):
                out, err = await proc.communicate()
        except TimeoutError:
            return 124, "", f"docker {args[0] if args else ''} timed out after {timeout:g} s"
        finally:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(5.0):
                        await proc.wait()
        return proc.returncode or 0, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def engine_available(docker: str = "docker", *, timeout: float = ENGINE_PROBE_TIMEOUT_S) -> bool:
    """Whether a Docker engine answers ``docker info`` within ``timeout`` (False without the CLI)."""
    return engine_version(docker, timeout=timeout)[0] is not None


def engine_version(docker: str = "docker", *, timeout: float = ENGINE_PROBE_TIMEOUT_S) -> tuple[str | None, str]:
    """(the engine's version, "") when one answers ``docker info`` within ``timeout``, else
    (None, why not)."""
    try:
        done = subprocess.run(  # noqa: S603  (our own argv)
            [docker, "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=docker_cli_env(),
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, f"the Docker engine did not answer within {timeout:g} s"
    except FileNotFoundError:
        return None, f"the docker CLI is not installed ({docker}; apt-get install docker.io)"
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"the docker CLI could not run: {exc}"
    version = done.stdout.strip()
    if done.returncode != 0 or not version:
        why = tail(done.stderr) or "no answer"
        return None, f"no Docker engine answers: {why} (start dockerd, or check DOCKER_HOST)"
    return version, ""


def raise_if_no_engine(rc: int, err: str) -> None:
    """One clear error when there is no engine to talk to (the CLI missing, the daemon stopped,
    its socket refused): sandboxed commands are refused then, never run on the host."""
    if rc in (126, 127):
        raise Unavailable(f"the docker CLI cannot run here ({tail(err)}); sandboxed commands are refused, none ran")
    if _NO_ENGINE.search(err):
        raise Unavailable(
            f"no Docker engine answers ({tail(err)}): start it (dockerd) or check DOCKER_HOST; "
            "sandboxed commands are refused, none ran on the host",
            retryable=True,
        )
