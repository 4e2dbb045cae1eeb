"""The ``loopchat`` channel: everything a channel brings, in one plugin directory.

Its config model (``channels.loopchat``: the shared access fields, a ``token`` and the platform's
``apiRoot``), its ``channels add`` / ``onboard`` setup (the token checked with ``GET /v1/me``), its
``channels list`` and ``channels.status`` fields, its alias (``lc``) and its accounts: a long poll
whose cursor is committed with each batch, and sends. Loaded by the gateway from
``plugins.load.paths`` like any third-party plugin; nothing outside this folder names it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx
from pydantic import ConfigDict, Field, SecretStr

from homarus.channels.adapter import AccountContext, ChannelSetup, ChannelSpec, SendFailed, Transmitted
from homarus.channels.model import Attachment, ChannelCapabilities, InboundMessage, OutboundMessage, SendReceipt, Target
from homarus.config.channels import ChannelAccountConfig, ChannelConfig

POLL_WAIT_S = 2.0


class LoopchatAccountConfig(ChannelAccountConfig):
    token: SecretStr | None = None
    #: the platform's API root: loopback only
    api_root: str | None = Field(None, pattern=r"^http://127\.0\.0\.1:\d{1,5}$")


class LoopchatConfig(LoopchatAccountConfig, ChannelConfig):
    model_config = ConfigDict(extra="forbid")

    accounts: dict[str, LoopchatAccountConfig] = Field(default_factory=dict, max_length=10)  # type: ignore[assignment]


def _client(token: str, api_root: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=api_root, headers={"authorization": f"Bearer {token}"}, timeout=POLL_WAIT_S + 5)


class LoopchatAccount:
    def __init__(self, ctx: AccountContext) -> None:
        self.ctx = ctx
        self.channel_id, self.account_id = ctx.channel_id, ctx.account_id
        token = ctx.settings.get("token")
        self.client = _client(token.get_secret_value() if token else "", str(ctx.settings.get("api_root") or ""))
        self.state, self.last_error, self.identity = "starting", "", ""
        self._poller: asyncio.Task[None] | None = None

    async def start(self) -> None:
        me = await self.client.get("/v1/me")
        if me.status_code != 200:
            self.state, self.last_error = "error", f"the platform refused the token ({me.status_code})"
            raise SendFailed(self.last_error, permanent=True)
        self.identity, self.state = str(me.json()["name"]), "running"
        self._poller = asyncio.create_task(self._poll())

    async def _poll(self) -> None:
        after = int(await self.ctx.sink.cursor(self.channel_id, self.account_id, "after") or 0)
        while True:
            try:
                answer = await self.client.get("/v1/updates", params={"after": after, "wait": POLL_WAIT_S})
                updates = answer.json()["updates"]
            except (httpx.HTTPError, ValueError, KeyError):
                await asyncio.sleep(0.2)
                continue
            if not updates:
                continue
            now = int(time.time() * 1000)
            messages = [
                InboundMessage(self.channel_id, self.account_id, "direct", u["chat"], str(u["id"]), u["from"],
                               u.get("name") or "", u["text"], now)
                for u in updates
            ]  # fmt: skip
            last = max(int(u["id"]) for u in updates)
            await self.ctx.sink.receive(messages, (self.channel_id, self.account_id, "after", str(last)))
            after = last  # acknowledged only once committed: a crash before this asks again

    async def stop(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)
        await self.client.aclose()
        self.state = "stopped"

    def health(self) -> dict[str, Any]:
        return {"state": self.state, "lastError": self.last_error or None, "identity": self.identity, "mode": "poll"}

    async def send(self, message: OutboundMessage, on_transmitted: Transmitted) -> SendReceipt:
        body = {"chat": message.target.chat_id, "text": message.text, "replyTo": message.reply_to_id}
        await on_transmitted()  # one small request: the platform has it once it is written
        answer = await self.client.post("/v1/messages", json=body)
        if answer.status_code != 200:
            raise SendFailed(f"loopchat answered {answer.status_code}", permanent=answer.status_code < 500)
        return SendReceipt(str(answer.json()["id"]))

    async def typing(self, target: Target) -> None:
        await self.client.post("/v1/typing", json={"chat": target.chat_id})

    async def download(self, attachment: Attachment, dest_dir: Path, max_bytes: int) -> Attachment:
        raise SendFailed("loopchat carries no files", permanent=True)

    def webhook_path(self) -> str | None:
        return None

    async def webhook(self, headers: Mapping[str, str], body: bytes) -> tuple[int, bytes]:
        return 404, b""

    async def logout(self) -> None:
        return None


def _verify(token: str, api_root: str | None) -> str:
    async def check() -> str:
        async with _client(token, api_root or "") as client:
            try:
                me = await client.get("/v1/me")
            except httpx.HTTPError as exc:
                raise ValueError(f"could not reach Loopchat ({type(exc).__name__}); give --api-root") from None
        if me.status_code != 200:
            raise ValueError(f"Loopchat refused the token ({me.status_code})")
        return str(me.json()["name"])

    return asyncio.run(check())


def _token_source(settings: Mapping[str, Any], account_id: str, env: Mapping[str, str] | None = None) -> str:
    return "config" if settings.get("token") is not None else "missing"


SPEC = ChannelSpec(
    id="loopchat",
    label="Loopchat",
    capabilities=ChannelCapabilities(text_limit=500, groups=False, media=False, id_prefixes=("loopchat:", "lc:")),
    factory=LoopchatAccount,
    aliases=("lc",),
    status_fields=lambda settings, account_id: {"tokenSource": _token_source(settings, account_id)},
    config_model=LoopchatConfig,
    setup=ChannelSetup(
        credential_key="token",
        credential_label="Loopchat token",
        api_root_key="apiRoot",
        verify=_verify,
        list_fields=lambda settings, account_id, env: {"mode": "poll", "token": _token_source(settings, account_id)},
        onboard_question="Add a Loopchat account now?",
        next_step="Say hello on Loopchat: a stranger gets a pairing code.",
    ),
)


def register(api: Any) -> None:
    api.register_channel(SPEC)
