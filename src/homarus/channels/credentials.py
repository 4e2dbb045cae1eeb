"""Where a channel account's secret comes from: its config key, a token file, or (the default
account only) an environment variable — the same rule for every bundled channel.

``source`` says where, never what (``channels list``, ``channels.status``); ``read`` returns the
secret to the account that connects with it.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from homarus.channels.adapter import SendFailed

if TYPE_CHECKING:
    from homarus.channels.adapter import AccountContext

__all__ = ["check_with_platform", "read", "read_secret", "source"]

Source = Literal["config", "file", "env", "missing", "none"]


def source(
    settings: Mapping[str, Any],
    account_id: str,
    key: str,
    env_var: str,
    env: Mapping[str, str] | None = None,
    *,
    file_key: str | None = "token_file",
) -> Source:
    """Where the secret comes from; with ``env``, whether the variable is set (``missing``).
    ``file_key``: the config key naming a file that holds it (None: it cannot be in a file)."""
    if settings.get(key) is not None:
        return "config"
    if file_key is not None and settings.get(file_key):
        return "file"
    if account_id != "default":
        return "none"
    return "env" if env is None or env.get(env_var) else "missing"


def read(
    settings: Mapping[str, Any],
    account_id: str,
    env: Mapping[str, str],
    *,
    key: str,
    env_var: str,
    where: str,
    file_key: str | None = "token_file",
    what: str = "bot token",
) -> str:
    """The secret; SendFailed (permanent) saying what to set when there is none. ``where``: the
    config key to name (``channels.discord.token``)."""
    secret = settings.get(key)
    if secret is not None:
        return str(secret.get_secret_value() if hasattr(secret, "get_secret_value") else secret).strip()
    token_file = settings.get(file_key) if file_key is not None else None
    if token_file:
        path = Path(str(token_file)).expanduser()
        if path.is_symlink() or not path.is_file():
            raise SendFailed(f"tokenFile {path} must be a regular file (not a symlink)", permanent=True)
        return path.read_text(encoding="utf-8").strip()
    value = env.get(env_var) if account_id == "default" else None
    if value:
        return value.strip()
    raise SendFailed(f"no {what}: set {where} (or {env_var})", permanent=True)


def read_secret(ctx: AccountContext, key: str, env_var: str, *, what: str, file_key: str | None = None) -> str:
    """:func:`read` for a running account: its settings and environment, the config key it names
    (``channels.slack.appToken``) derived from ``key`` (``app_token``)."""
    head, *rest = key.split("_")
    where = f"channels.{ctx.channel_id}.{head}{''.join(part.title() for part in rest)}"
    return read(
        ctx.settings, ctx.account_id, ctx.env, key=key, env_var=env_var, where=where, file_key=file_key, what=what
    )


def check_with_platform(
    check: Callable[[], Coroutine[Any, Any, str]],
    *,
    platform: str,
    refused: type[Exception],
    refusal: Callable[[Any], str],
    unreachable: type[Exception],
) -> str:
    """Run ``check()`` (a secret tried with the platform: the account's name there) for
    ``channels add``; ValueError with ``refusal(error)`` when the platform refuses, or saying it
    could not be reached."""
    import asyncio

    try:
        return asyncio.run(check())
    except refused as exc:
        raise ValueError(refusal(exc)) from None
    except unreachable as exc:
        raise ValueError(
            f"could not reach {platform} to check the token ({exc}); --no-verify skips the check"
        ) from None
