"""A throw-away PostgreSQL cluster for the tests: Debian's server binaries, ``initdb`` in a
temporary directory owned by an unprivileged user (the server refuses to run as root), password
authentication, listening on 127.0.0.1 only, stopped and removed at the end."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PgCluster", "pg_binaries", "pg_cluster"]

USER = "homarus"


def pg_binaries() -> Path | None:
    """The newest installed server's ``bin`` directory, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class PgCluster:
    bin: Path
    data: Path
    port: int
    password: str
    owner: str | None  # the user the server runs as (None: this process's)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}:{self.password}@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        cmd = list(args)
        if self.owner is not None:
            cmd = ["runuser", "-u", self.owner, "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)

    def start(self) -> None:
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.data} -c fsync=off -c max_connections=200"
        log = str(self.data / "server.log")
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", log, "-o", options, "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def create_database(self, name: str) -> str:
        """A fresh database; its URL."""
        env = {**os.environ, "PGPASSWORD": self.password}
        subprocess.run(
            [str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", USER, name],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return self.url(name)


@contextlib.contextmanager
def pg_cluster() -> Iterator[PgCluster]:
    binaries = pg_binaries()
    if binaries is None:
        raise RuntimeError("no PostgreSQL server installed (apt-get install postgresql)")
    owner = None
    if os.geteuid() == 0:
        owner = "postgres"
        pwd.getpwnam(owner)  # Debian's postgresql package makes this user
    root = Path(tempfile.mkdtemp(prefix="homarus-pg-"))
    data = root / "data"
    password = secrets.token_urlsafe(18)
    pwfile = root / "pw"
    pwfile.write_text(password + "\n")
    if owner is not None:
        shutil.chown(root, owner)
        shutil.chown(pwfile, owner)
    cluster = PgCluster(binaries, data, _free_port(), password, owner)
    try:
        cluster._run(
            str(binaries / "initdb"),
            "-D",
            str(data),
            "-U",
            USER,
            "--auth=scram-sha-256",
            f"--pwfile={pwfile}",
            "-E",
            "UTF8",
            "--no-sync",
            "--locale=C",
        )
        pwfile.unlink()
        cluster.start()
        yield cluster
    finally:
        cluster.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)
