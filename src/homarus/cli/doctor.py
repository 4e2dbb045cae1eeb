"""`homarus doctor`: check config, state dir, port, token, session stores and transcripts."""

from __future__ import annotations

import argparse
import socket
import stat
from collections.abc import Callable
from pathlib import Path

from homarus.config.loader import LoadedConfig, StatePaths, load_config
from homarus.config.schema import HomarusConfig
from homarus.config.values import is_loopback_host, resolve_bind_host
from homarus.errors import ConfigError, HomarusError
from homarus.locking import read_lock_info
from homarus.security.token_store import read_token
from homarus.sessions.store import Maintenance, SessionStore
from homarus.sessions.transcript import Transcript

__all__ = ["run_doctor", "run_doctor_command"]

Report = Callable[[str, str], None]


def run_doctor_command(args: argparse.Namespace, paths: StatePaths) -> int:
    return run_doctor(paths, fix=args.fix, yes=args.yes)


def run_doctor(paths: StatePaths, *, fix: bool = False, yes: bool = False) -> int:
    code = _check(paths)
    if not fix:
        return code
    return _fix(paths, yes=yes, code=code)


def _fix(paths: StatePaths, *, yes: bool, code: int) -> int:
    from homarus.cli.doctor_fix import find_fixes
    from homarus.cli.prompts import confirm

    fixes = find_fixes(paths)
    if not fixes:
        print("\nnothing doctor --fix can repair" + (" (the failures above need you)" if code else ""))
        return code
    print(f"\n{len(fixes)} fix(es):")
    for n, item in enumerate(fixes, 1):
        print(f"  {n}. {item.what}")
        if item.diff:
            print("".join(f"     {line}" for line in item.diff.splitlines(keepends=True)), end="")
    if not yes and not confirm("Apply them?"):
        print("nothing changed (homarus doctor --fix --yes applies them without asking)")
        return code or 1
    for item in fixes:
        item.apply()
        print(f"fixed: {item.what}")
    print("the replaced config, if any, is backup 1 (homarus config restore)")
    return _check(paths, quiet=True)


def _check(paths: StatePaths, *, quiet: bool = False) -> int:
    failures = 0

    def report(level: str, message: str) -> None:
        nonlocal failures
        failures += level == "fail"
        if not quiet or level == "fail":
            print(f"[{level:4}] {message}")

    loaded: LoadedConfig | None = None
    try:
        loaded = load_config(paths)
        report("ok", f"config {'valid' if loaded.exists else 'absent, using defaults'}: {paths.config_path}")
    except ConfigError as exc:
        from homarus.cli.doctor_fix import loadable_backup

        report("fail", f"config: {exc}")
        number = loadable_backup(paths)
        if number is not None:
            report("info", f"backup {number} loads: homarus config restore {number} (or doctor --fix for unknown keys)")
    _doctor_state_dir(paths, report)
    _doctor_sessions(paths.state_dir, report)
    if loaded is None:
        return 1
    if loaded.config.storage.backend == "postgres":
        _doctor_postgres(loaded.config, report)
    cfg = loaded.config.gateway
    host = resolve_bind_host(cfg.bind)
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, cfg.port))
        report("ok", f"port {host}:{cfg.port} is free")
    except OSError as exc:
        report("warn", f"port {host}:{cfg.port} is not free ({exc.strerror}); a gateway may already run there")
    from homarus.cli.doctor_sandbox import report_sandbox

    report_sandbox(loaded.config.agents.defaults.sandbox, report)
    if cfg.auth.mode == "none":
        report(
            "warn" if is_loopback_host(host) else "fail", "gateway.auth.mode is 'none': anyone who can connect is admin"
        )
    elif cfg.auth.mode == "password":
        report("ok", "password auth configured")
    elif cfg.auth.token is not None:
        report("ok", "gateway token configured (config or HOMARUS_GATEWAY_TOKEN)")
    else:
        try:
            token = read_token(paths.token_path)
        except ConfigError as exc:
            report("fail", str(exc))
        else:
            report(
                "ok" if token else "warn",
                f"gateway token stored in {paths.token_path}"
                if token
                else f"no gateway token yet; one is generated into {paths.token_path} on first start",
            )
    return 1 if failures else 0


def _doctor_state_dir(paths: StatePaths, report: Report) -> None:
    try:
        st = paths.state_dir.stat()
    except FileNotFoundError:
        report("ok", f"state dir {paths.state_dir} does not exist yet (created 0700 on first start)")
        return
    if not stat.S_ISDIR(st.st_mode):
        report("fail", f"state dir {paths.state_dir} is not a directory")
    elif st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        report(
            "warn",
            f"state dir {paths.state_dir} is accessible to group/others "
            f"(mode {stat.S_IMODE(st.st_mode):o}); run: chmod 700 {paths.state_dir}",
        )
    else:
        report("ok", f"state dir {paths.state_dir} is private (mode {stat.S_IMODE(st.st_mode):o})")


def _doctor_postgres(config: HomarusConfig, report: Report) -> None:
    """The database answers, and its schema is one this Homarus can run on (brought up to date,
    as a gateway does at start); how many sessions it keeps."""
    from homarus.cli.storage_cmd import postgres_sessions
    from homarus.storage.database import where

    assert config.storage.postgres.url is not None  # the config requires it with this backend
    at = where(config.storage.postgres.url.get_secret_value())
    try:
        with postgres_sessions(config) as sessions:
            counts = {a: sessions.index(a, Path(), Maintenance()).count() for a in config.agents.ids}
    except HomarusError as exc:
        report("fail", f"storage: {exc.message}")
        return
    held = ", ".join(f"{agent} {n}" for agent, n in counts.items())
    report("ok", f"storage: PostgreSQL at {at} answers, schema up to date; sessions: {held}")


def _doctor_sessions(state_dir: Path, report: Report) -> None:
    """Every session store parses; transcripts have no damage beyond a crash's torn last line."""
    for sessions_dir in sorted(state_dir.glob("agents/*/sessions")):
        agent = sessions_dir.parent.name
        store = SessionStore(sessions_dir)
        try:
            entries = store.read()
        except HomarusError as exc:
            report("fail", f"agent {agent}: {exc}")
            continue
        finally:
            store.close()
        report("ok", f"agent {agent}: the session index holds {len(entries)} session(s)")
        for key, entry in entries.items():
            sid = entry.get("sessionId")
            if isinstance(sid, str) and not (sessions_dir / f"{sid}.jsonl").exists():
                report("warn", f"agent {agent}: session {key} has no transcript {sid}.jsonl")
        for path in sorted(sessions_dir.glob("*.jsonl")):
            view = Transcript(path).read()
            if view.bad_lines:
                report("fail", f"{path}: unparseable line(s) {view.bad_lines[:10]} (earlier lines are intact)")
            if view.torn_tail:
                report(
                    "warn",
                    f"{path}: torn last line of {len(view.torn_tail)} bytes from an interrupted write; "
                    "it is ignored and set aside on the next append",
                )
            if view.header is None and path.stat().st_size > 0:
                report("fail", f"{path}: missing the session header line")
        for lock in sorted(sessions_dir.glob("*.lock")):
            info = read_lock_info(lock)
            if info is None or not info.owner_alive():
                report("warn", f"{lock}: stale lock (owner gone); it is broken automatically on the next write")
