"""Find, read and validate the configuration file; the only module that reads the environment.

Resolution: ``$HOMARUS_CONFIG`` names the file, else ``$HOMARUS_STATE_DIR/homarus.json``, else
``~/.homarus/homarus.json``. A missing file means defaults. The file is JSON5; string values may
use ``${ENV_VAR}`` (``$${X}`` for a literal ``${X}``). A bad file fails fast with its path and the
offending key.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from homarus.config import json5_text
from homarus.config.paths import StatePaths
from homarus.config.schema import HomarusConfig
from homarus.errors import ConfigError

__all__ = [
    "ConfigIssue",
    "LoadedConfig",
    "StatePaths",
    "apply_env_overrides",
    "format_validation_error",
    "load_config",
    "parse_config_text",
    "provider_env_keys",
    "resolve_config",
    "substitute_env",
    "trace_hooks_enabled",
    "validate_config",
]

_ENV_REF = re.compile(r"\$(\$?)\{([A-Z_][A-Z0-9_]*)\}")


@dataclass(frozen=True, slots=True)
class ConfigIssue:
    key: str
    message: str

    def __str__(self) -> str:
        return f"at {self.key}: {self.message}"


@dataclass(frozen=True, slots=True)
class LoadedConfig:
    """A validated config plus what it was read from."""

    path: Path
    exists: bool
    # the raw text and parsed data hold secrets in clear: keep them out of repr() and logs
    raw: str | None = field(repr=False)
    parsed: dict[str, Any] | None = field(repr=False)
    config: HomarusConfig
    hash: str | None
    env_overrides: tuple[str, ...] = field(default=())


def parse_config_text(raw: str, *, path: str) -> dict[str, Any]:
    """Parse JSON5 text into an object or raise ConfigError naming the file."""
    try:
        value = json5_text.loads(raw)
    except ValueError as exc:
        raise ConfigError(f"not valid JSON5: {exc}", path=path) from None
    if not isinstance(value, dict):
        raise ConfigError("the top level must be an object", path=path)
    return value


def substitute_env(value: Any, env: Mapping[str, str], *, key: str = "", path: str | None = None) -> Any:
    """Replace ``${VAR}`` in every string of ``value``; a missing variable is an error."""
    if isinstance(value, str):

        def repl(m: re.Match[str]) -> str:
            if m.group(1):
                return "${" + m.group(2) + "}"
            name = m.group(2)
            if name not in env:
                raise ConfigError(f"environment variable {name} is not set", path=path, key=key or "(root)")
            return env[name]

        return _ENV_REF.sub(repl, value)
    if isinstance(value, dict):
        return {k: substitute_env(v, env, key=f"{key}.{k}" if key else k, path=path) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute_env(v, env, key=f"{key}[{i}]", path=path) for i, v in enumerate(value)]
    return value


def format_validation_error(exc: ValidationError) -> list[ConfigIssue]:
    issues = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"] if p != "__root__") or "(root)"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        issues.append(ConfigIssue(loc, msg.removeprefix("Value error, ")))
    return issues


def validate_config(data: Mapping[str, Any], *, path: str) -> HomarusConfig:
    try:
        return HomarusConfig.model_validate(data)
    except ValidationError as exc:
        issues = format_validation_error(exc)
        first = issues[0]
        more = f" (and {len(issues) - 1} more: {'; '.join(map(str, issues[1:]))})" if len(issues) > 1 else ""
        raise ConfigError(first.message + more, path=path, key=first.key) from None


def apply_env_overrides(data: dict[str, Any], env: Mapping[str, str]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """Overlay ``HOMARUS_GATEWAY_{TOKEN,PASSWORD,PORT}``; returns the new data and what was applied."""
    applied: list[str] = []
    raw_gateway = data.get("gateway", {})
    raw_auth = raw_gateway.get("auth", {}) if isinstance(raw_gateway, dict) else None
    if not isinstance(raw_gateway, dict) or not isinstance(raw_auth, dict):
        return data, ()  # not an object: leave it for validation to report with its key
    gateway = dict(raw_gateway)
    auth = dict(raw_auth)
    if token := env.get("HOMARUS_GATEWAY_TOKEN"):
        auth["token"] = token
        applied.append("HOMARUS_GATEWAY_TOKEN")
    if password := env.get("HOMARUS_GATEWAY_PASSWORD"):
        auth["password"] = password
        applied.append("HOMARUS_GATEWAY_PASSWORD")
    if port := env.get("HOMARUS_GATEWAY_PORT"):
        try:
            gateway["port"] = int(port)
        except ValueError:
            raise ConfigError(f"HOMARUS_GATEWAY_PORT must be an integer, not {port!r}") from None
        applied.append("HOMARUS_GATEWAY_PORT")
    if not applied:
        return data, ()
    if auth:
        gateway["auth"] = auth
    return {**data, "gateway": gateway}, tuple(applied)


def resolve_config(
    parsed: Mapping[str, Any], env: Mapping[str, str], *, path: str
) -> tuple[HomarusConfig, tuple[str, ...]]:
    """Substitute ``${ENV}``, overlay env overrides and validate: the effective config of a file."""
    resolved = substitute_env(dict(parsed), env, path=path)
    resolved, overrides = apply_env_overrides(resolved, env)
    return validate_config(resolved, path=path), overrides


def provider_env_keys(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ``*_API_KEY`` environment variables: model provider keys not written in the config."""
    env = os.environ if env is None else env
    return {k: v for k, v in env.items() if k.endswith("_API_KEY") and v}


def trace_hooks_enabled(env: Mapping[str, str] | None = None) -> bool:
    """``HOMARUS_TRACE_HOOKS=1``: log every hook call with its duration."""
    env = os.environ if env is None else env
    return env.get("HOMARUS_TRACE_HOOKS", "").strip().lower() in ("1", "true", "yes", "on")


def load_config(paths: StatePaths, env: Mapping[str, str] | None = None) -> LoadedConfig:
    """Read and validate the config file named by ``paths`` (defaults when it does not exist).
    Without ``env``: the process environment over the state dir's secrets file."""
    if env is None:
        from homarus.config.secrets import merged_env

        env = merged_env(paths.state_dir)
    where = str(paths.config_path)
    try:
        raw: str | None = paths.config_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raw = None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read: {exc}", path=where) from None
    parsed = parse_config_text(raw, path=where) if raw is not None else None
    config, overrides = resolve_config(parsed or {}, env, path=where)
    digest = hashlib.sha256(raw.encode("utf-8")).hexdigest() if raw is not None else None
    return LoadedConfig(
        path=paths.config_path,
        exists=raw is not None,
        raw=raw,
        parsed=parsed,
        config=config,
        hash=digest,
        env_overrides=overrides,
    )
