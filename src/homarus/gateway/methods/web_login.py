"""``web.login.start`` / ``web.login.wait``: link an account that pairs by QR code (a personal
WhatsApp number), the methods the original's Control UI and ``channels login`` call.

The account does the linking (its ``login_start`` / ``login_wait``); this finds it, starting it
when it is not running (after a logout, say), and passes the original's parameters on. The
result is the original's: ``connected``, ``message`` and, while a code waits for its scan,
``qrDataUrl`` (a PNG) beside ``qr`` (the code itself, for a terminal).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from homarus.errors import InvalidRequest
from homarus.gateway.router import MethodCall, Params
from homarus.patterns import Pattern

__all__: list[str] = []

_Channel = Field(default=None, min_length=1, max_length=64)
_Account = Field(default=None, alias="accountId", max_length=64)


class WebLoginStartParams(Params):
    channel: str | None = _Channel
    force: bool | None = None
    timeout_ms: int | None = Field(default=None, alias="timeoutMs", ge=0, le=300_000)
    verbose: bool | None = None
    account_id: str | None = _Account


class WebLoginWaitParams(Params):
    channel: str | None = _Channel
    session_key: str | None = Field(default=None, alias="sessionKey", min_length=1, max_length=512)
    timeout_ms: int | None = Field(default=None, alias="timeoutMs", ge=0, le=300_000)
    account_id: str | None = _Account
    #: at most 16,384 characters, as the original's schema says
    current_qr_data_url: Annotated[str, Pattern(r"^data:image/png;base64,[A-Za-z0-9+/=]{0,16362}$")] | None = Field(
        default=None, alias="currentQrDataUrl"
    )


async def _account(call: MethodCall, channel: str | None, account_id: str | None, *, start: bool) -> Any:
    gw = call.gateway
    if not gw.config.present("channels"):
        raise InvalidRequest("web login provider is not available")
    manager = gw.channels.manager
    configured = gw.config.channels.configured()
    if channel is None:  # the first configured channel with an account that links by code
        linking = (c for (c, _a), acc in manager.accounts.items() if c in configured and hasattr(acc, "login_start"))
        channel = next(linking, "whatsapp" if "whatsapp" in configured else None)
    if channel is None or channel not in manager.specs or channel not in configured:
        raise InvalidRequest("web login provider is not available")
    account_id = account_id or configured[channel].primary_account
    if account_id not in configured[channel].account_ids():
        raise InvalidRequest(f"{channel} has no account {account_id!r}")
    account = manager.account(channel, account_id)
    if account is None and start:
        await manager.start(channel, account_id)
        account = manager.account(channel, account_id)
    if account is None:
        raise InvalidRequest(f"{channel}/{account_id} is not running: start linking with web.login.start")
    if not hasattr(account, "login_start"):
        raise InvalidRequest(f"web login is not supported by provider {channel}")
    return account


async def web_login_start(call: MethodCall, p: WebLoginStartParams) -> dict[str, Any]:
    account = await _account(call, p.channel, p.account_id, start=True)
    timeout_s = (p.timeout_ms if p.timeout_ms is not None else 30_000) / 1000
    result: dict[str, Any] = await account.login_start(force=bool(p.force), timeout_s=timeout_s)
    return result


async def web_login_wait(call: MethodCall, p: WebLoginWaitParams) -> dict[str, Any]:
    account = await _account(call, p.channel, p.account_id, start=False)
    timeout_s = (p.timeout_ms if p.timeout_ms is not None else 120_000) / 1000
    result: dict[str, Any] = await account.login_wait(timeout_s=timeout_s, current_qr=p.current_qr_data_url)
    return result
