"""``homarus security audit``: risky settings in the config and the state directory, each with its fix.

Pure reads: the validated config and a few ``stat`` calls, so the gateway can run it at every start
and log what is high. Sections the config file does not have are not read (reading one would build
its defaults); their defaults are safe by design. The checks:

* who can talk and what they get: several senders allowed into one shared DM session, ``dmPolicy:
  open``, no owner at all, tools opened to strangers without a sandbox, MCP servers that run on
  this machine offered to strangers;
* what runs on the host: exec ``full`` without a sandbox;
* who can connect: a bind beyond loopback (there is no TLS in the gateway itself), auth ``none``,
  short gateway or webhook secrets;
* files: the state directory and the secret files readable by others.
"""

from __future__ import annotations

import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

if TYPE_CHECKING:
    from homarus.config.schema import HomarusConfig

__all__ = ["Finding", "audit_config", "has_high"]

Severity = Literal["high", "medium", "low"]
MIN_SECRET_CHARS: Final = 24
#: tools that reach beyond a stranger's own conversation when nothing sandboxes them
_HOST_REACHING: Final = frozenset(
    {"group:fs", "group:runtime", "exec", "process", "read", "write", "edit", "apply_patch", "ls", "find", "grep"}
    | {"browser", "message", "cron", "gateway", "sessions_spawn", "sessions_send", "group:ui", "group:automation"}
    | {"group:messaging", "group:sessions", "group:homarus", "*"}
)
_LOOPBACK: Final = frozenset({"loopback", "127.0.0.1", "::1", "localhost"})


@dataclass(frozen=True, slots=True)
class Finding:
    check: str
    severity: Severity
    title: str
    detail: str
    fix: str

    def to_json(self) -> dict[str, str]:
        return {
            "check": self.check,
            "severity": self.severity,
            "title": self.title,
            "detail": self.detail,
            "fix": self.fix,
        }


def has_high(findings: Iterable[Finding]) -> bool:
    return any(f.severity == "high" for f in findings)


def audit_config(cfg: HomarusConfig, state_dir: Path, config_path: Path | None = None) -> list[Finding]:
    """Every risky setting of ``cfg`` and of the files under ``state_dir``, highest first."""
    out: list[Finding] = []
    sandbox_off = cfg.agents.defaults.sandbox_mode == "off" if cfg.present("agents") else True
    if cfg.present("channels"):
        _channels(cfg, sandbox_off, out)
    if cfg.present("tools"):
        exec_security = getattr(getattr(cfg.tools, "exec", None), "security", None)
        if exec_security == "full" and sandbox_off:
            out.append(
                Finding(
                    "tools.exec_full_unsandboxed",
                    "high",
                    "the model runs any command on this machine, unasked",
                    'tools.exec.security is "full" and no session is sandboxed',
                    'set tools.exec.security to "allowlist" (commands you approve) or sandbox the sessions '
                    '(agents.defaults.sandbox.mode "all")',
                )
            )
    if cfg.present("gateway"):
        _gateway(cfg, out)
    if cfg.present("hooks"):
        _hooks(cfg, out)
    _files(state_dir, config_path, out)
    order = {"high": 0, "medium": 1, "low": 2}
    return sorted(out, key=lambda f: (order[f.severity], f.check))


def _channels(cfg: HomarusConfig, sandbox_off: bool, out: list[Finding]) -> None:
    owners = cfg.commands.owner_allow_from if cfg.present("commands") else ()
    shared = cfg.session.share_main_with_non_owners if cfg.present("session") else False
    mcp_host = _mcp_on_host(cfg)
    for channel_id, channel in cfg.channels.configured().items():
        for account_id in channel.account_ids():
            settings = channel.account(account_id)
            if settings.get("enabled") is False:
                continue
            where = f"channels.{channel_id}" + (f".accounts.{account_id}" if channel.accounts else "")
            _account(where, settings, owners, shared, sandbox_off, mcp_host, out)
    if not owners:
        out.append(
            Finding(
                "channels.no_owner",
                "low",
                "no chat sender is the owner",
                "commands.ownerAllowFrom is empty: everyone who talks to the bot is a stranger (answers only)",
                "add yourself: homarus config set commands.ownerAllowFrom '[\"telegram:<your id>\"]'",
            )
        )


def _account(
    where: str,
    settings: dict[str, Any],
    owners: tuple[str, ...],
    shared: bool,
    sandbox_off: bool,
    mcp_host: list[str],
    out: list[Finding],
) -> None:
    policy = settings.get("dm_policy") or "pairing"
    allow = [a for a in settings.get("allow_from") or () if a]
    granted = tuple(settings.get("stranger_tools") or ())
    many = policy in ("open", "pairing") or len(allow) > 1 or "*" in allow
    if shared and many:
        out.append(
            Finding(
                "session.shared_main",
                "high",
                "several people share the owner's DM session",
                f"session.shareMainWithNonOwners is true and {where} lets more than one sender in: each reads "
                "what the others (the owner included) said",
                "remove session.shareMainWithNonOwners (each non-owner then gets a session of their own)",
            )
        )
    if policy == "open":
        out.append(
            Finding(
                "channels.dm_open",
                "high" if granted else "medium",
                "anyone may talk to the assistant",
                f'{where}.dmPolicy is "open"' + (f" and strangers get tools: {', '.join(granted)}" if granted else ""),
                f'set {where}.dmPolicy to "pairing" (unknown senders get a code you approve)',
            )
        )
    risky = [t for t in granted if t.lower() in _HOST_REACHING or t.lower().startswith("mcp:") or t == "group:mcp"]
    if risky and sandbox_off:
        out.append(
            Finding(
                "channels.stranger_tools_unsandboxed",
                "high",
                "strangers get tools that act on this machine",
                f"{where}.strangerTools opens {', '.join(risky)} and no session is sandboxed",
                'sandbox the sessions (agents.defaults.sandbox.mode "non-main", scope "session", workspaceAccess '
                f'"none") or remove them from {where}.strangerTools',
            )
        )
    offered = [s for s in mcp_host if any(t in (f"mcp:{s}", "group:mcp", "*") for t in granted)]
    if offered:
        out.append(
            Finding(
                "mcp.unsandboxed_for_strangers",
                "high",
                "strangers reach MCP servers that run on this machine",
                f"{where}.strangerTools offers the tools of {', '.join(offered)}, which run unsandboxed",
                "set mcp.servers.<name>.sandbox to true, or stop offering them to strangers",
            )
        )
    if len(allow) > 1 and not owners:
        out.append(
            Finding(
                "channels.allowed_without_owner",
                "low",
                "senders are allowed but none is the owner",
                f"{where}.allowFrom lists {len(allow)} senders and commands.ownerAllowFrom is empty",
                "name the owner in commands.ownerAllowFrom",
            )
        )


def _mcp_on_host(cfg: HomarusConfig) -> list[str]:
    if not cfg.present("mcp"):
        return []
    servers = getattr(cfg.mcp, "servers", {}) or {}
    return sorted(n for n, s in servers.items() if s.command and not getattr(s, "sandbox", False))


def _gateway(cfg: HomarusConfig, out: list[Finding]) -> None:
    gw = cfg.gateway
    exposed = str(gw.bind) not in _LOOPBACK
    if exposed:
        out.append(
            Finding(
                "gateway.exposed",
                "high",
                "the gateway listens beyond this machine without TLS",
                f'gateway.bind is "{gw.bind}": the token and every message cross the network in clear',
                'bind "loopback" and put a TLS reverse proxy (Caddy, nginx) or a tunnel (Tailscale, SSH) in front',
            )
        )
    if gw.auth.mode == "none":
        out.append(
            Finding(
                "gateway.auth_none",
                "high" if exposed else "medium",
                "the gateway asks for no credential",
                'gateway.auth.mode is "none": any process that reaches the port is an operator',
                'set gateway.auth.mode to "token" (the generated token is used when none is configured)',
            )
        )
    for name in ("token", "password"):
        secret = getattr(gw.auth, name, None)
        if secret is not None and len(secret.get_secret_value()) < MIN_SECRET_CHARS:
            out.append(
                Finding(
                    f"gateway.{name}_short",
                    "medium",
                    f"the gateway {name} is short",
                    f"gateway.auth.{name} has fewer than {MIN_SECRET_CHARS} characters",
                    "use a random one: python3 -c 'import secrets; print(secrets.token_urlsafe(32))'",
                )
            )


def _hooks(cfg: HomarusConfig, out: list[Finding]) -> None:
    hooks = cfg.hooks
    token = getattr(hooks, "token", None)
    if token is None or not getattr(hooks, "enabled", True):
        return
    value = token.get_secret_value()  # the config refuses one equal to the gateway token
    if len(value) < MIN_SECRET_CHARS:
        out.append(
            Finding(
                "hooks.token_short",
                "medium",
                "the webhook token is short",
                f"hooks.token has fewer than {MIN_SECRET_CHARS} characters (webhooks are meant to be reachable)",
                "use a random one: python3 -c 'import secrets; print(secrets.token_urlsafe(32))'",
            )
        )


def _files(state_dir: Path, config_path: Path | None, out: list[Finding]) -> None:
    """Secrets readable by other users of this machine."""
    checks: list[tuple[Path, int, Severity]] = [(state_dir, 0o077, "medium")]
    for name in ("gateway.token", "secrets.env"):
        checks.append((state_dir / name, 0o077, "high"))
    checks.append((config_path or state_dir / "homarus.json", 0o077, "medium"))
    for path, loose_bits, severity in checks:
        try:
            mode = stat.S_IMODE(path.lstat().st_mode)
        except OSError:
            continue
        if mode & loose_bits:
            out.append(
                Finding(
                    "fs.loose_mode",
                    severity,
                    f"{path.name} is readable by other users",
                    f"{path} has mode {mode:04o}",
                    f"chmod {'700' if path.is_dir() else '600'} {path}  (or: homarus doctor --fix)",
                )
            )
