"""One Discord bot account: the Gateway session, the channel cache, sends, typing and downloads.

A ``MESSAGE_CREATE`` is normalized and committed with the Gateway cursor that covers it (session
id, resume URL, sequence number) in one transaction before the next frame is read, so a restart
resumes where the last committed message stood (see ``gateway.py``). Guild channels and threads
are learnt from ``GUILD_CREATE`` and the thread and channel events; one not seen yet is asked
for once (``GET /channels/<id>``). Sends go to the thread when the conversation is one, with no
mention pinging anyone (``allowed_mentions``), and map Discord's answers to the layer's: a 429
waits its ``retry_after``; missing access, an unknown channel or a user who does not accept DMs
is permanent.
"""

from __future__ import annotations

import asyncio
import contextlib
import mimetypes
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from homarus.channels import credentials
from homarus.channels.account_status import AccountStatus
from homarus.channels.adapter import SendFailed
from homarus.channels.discord.api import DEFAULT_API_ROOT, DiscordApi, DiscordApiError, DiscordNetworkError
from homarus.channels.discord.gateway import Gateway, GatewayStopped, ResumeState
from homarus.channels.discord.inbound import SLASH_COMMANDS, ChannelInfo, normalize_interaction, normalize_message
from homarus.channels.media_files import fetch_file, kept_attachment
from homarus.channels.model import Attachment, InboundMessage, OutboundMessage, SendReceipt, Target

if TYPE_CHECKING:
    from homarus.channels.adapter import AccountContext, Transmitted

__all__ = ["TOKEN_ENV", "DiscordAccount"]

TOKEN_ENV: Final = "DISCORD_BOT_TOKEN"  # noqa: S105 - the variable's name
CURSOR: Final = "gateway"
#: channels and threads remembered (a bot in many guilds): past it the cache starts over
MAX_CHANNELS: Final = 50_000
#: Discord's JSON error codes that no retry can fix: unknown channel, missing access, cannot DM
#: this user, missing permissions, cannot send an empty message, invalid form body
_PERMANENT_CODES: Final = frozenset({10003, 10008, 50001, 50007, 50013, 50006, 50035})


class DiscordAccount(AccountStatus):
    channel_id = "discord"

    def __init__(self, ctx: AccountContext) -> None:
        self._init_account(ctx, DEFAULT_API_ROOT)
        self.api: DiscordApi | None = None
        self.gateway: Gateway | None = None
        self.bot_id = ""
        self.bot_name = ""
        self.channels: dict[str, ChannelInfo] = {}
        self._task: asyncio.Task[None] | None = None

    # -- lifecycle ------------------------------------------------------------------------------------
    def _token(self) -> str:
        return credentials.read(
            self.settings, self.account_id, self.ctx.env, key="token", env_var=TOKEN_ENV, where="channels.discord.token"
        )

    async def start(self) -> None:
        self.state = "starting"
        try:
            token = self._token()
            self.api = DiscordApi(token, self.api_root)
            me = await self.api.get_me()
            self.bot_id, self.bot_name = str(me.get("id") or ""), str(me.get("username") or "")
            url = str(self.settings.get("gateway_url") or "") or str(
                (await self.api.get_gateway_bot()).get("url") or ""
            )
        except DiscordApiError as exc:
            self.failed("the bot token was rejected (401)" if exc.status == 401 else f"Discord refused: {exc}")
            raise SendFailed(self.last_error or "start failed", permanent=exc.status == 401) from None
        except (DiscordNetworkError, SendFailed) as exc:
            self.failed(str(exc))
            raise SendFailed(self.last_error or "start failed") from None
        if not url:
            self.failed("Discord gave no gateway URL")
            raise SendFailed(self.last_error or "no gateway URL")
        state = ResumeState.from_json(await self.ctx.sink.cursor("discord", self.account_id, CURSOR))
        self.gateway = Gateway(token, url, self._dispatch, log=self.ctx.log, state=state, on_state=self.state_changed)
        await self._register_commands()
        self._task = asyncio.create_task(self._run(), name=f"discord-gateway:{self.account_id}")
        self.state = "running"
        self.last_error = None

    async def _run(self) -> None:
        assert self.gateway is not None
        try:
            await self.gateway.run()
        except GatewayStopped as exc:
            self.failed(str(exc))

    async def stop(self) -> None:
        if self.gateway is not None:
            self.gateway.stop()
        await self._stopped(self._task, self.api)
        self._task, self.api = None, None

    async def logout(self) -> None:
        await self.stop()

    def health(self) -> dict[str, Any]:
        out: dict[str, Any] = {**self.status_fields(), "mode": "gateway"}
        if self.bot_id:
            out["identity"] = {"id": self.bot_id, "username": self.bot_name}
        if self.gateway is not None:
            out["details"] = {
                "gateway": {
                    "connections": self.gateway.connections,
                    "resumes": self.gateway.resumes,
                    "identifies": self.gateway.identifies,
                }
            }
        return out

    # -- receiving --------------------------------------------------------------------------------------
    async def _dispatch(self, name: str, data: dict[str, Any], seq: int | None) -> None:
        if name == "MESSAGE_CREATE":
            await self._message(data, seq)
        elif name == "INTERACTION_CREATE":
            await self._interaction(data, seq)
        elif name == "READY":
            raw_user = data.get("user")
            user: dict[str, Any] = raw_user if isinstance(raw_user, dict) else {}
            self.bot_id = str(user.get("id") or self.bot_id)
            self.bot_name = str(user.get("username") or self.bot_name)
            self.state_changed("running", None)
            # the new session is what a restart resumes, even before its first message
            assert self.gateway is not None
            cursor = ResumeState(self.gateway.state.session_id, self.gateway.state.resume_url, seq).to_json()
            await self.ctx.sink.receive([], ("discord", self.account_id, CURSOR, cursor))
        elif name == "RESUMED":
            self.state_changed("running", None)
        elif name == "GUILD_CREATE":
            guild = str(data.get("id") or "")
            for raw in [*(data.get("channels") or ()), *(data.get("threads") or ())]:
                self._remember(raw, guild)
        elif name in ("CHANNEL_CREATE", "CHANNEL_UPDATE", "THREAD_CREATE", "THREAD_UPDATE"):
            self._remember(data, str(data.get("guild_id") or ""))
        elif name in ("CHANNEL_DELETE", "THREAD_DELETE"):
            self.channels.pop(str(data.get("id") or ""), None)

    def _remember(self, raw: Any, guild_id: str) -> None:
        if not isinstance(raw, dict) or not raw.get("id"):
            return
        if len(self.channels) >= MAX_CHANNELS:
            self.channels.clear()
        info = ChannelInfo(
            id=str(raw["id"]),
            type=int(raw.get("type") or 0),
            parent_id=str(raw["parent_id"]) if raw.get("parent_id") else None,
            name=str(raw.get("name") or "") or None,
            guild_id=guild_id or None,
        )
        self.channels[info.id] = info

    async def _channel(self, channel_id: str) -> ChannelInfo | None:
        known = self.channels.get(channel_id)
        if known is not None or self.api is None:
            return known
        try:
            raw = await self.api.get_channel(channel_id)
        except (DiscordApiError, DiscordNetworkError) as exc:
            self.ctx.log.warning("discord[%s]: channel %s unknown: %s", self.account_id, channel_id, exc)
            return None
        self._remember(raw, str(raw.get("guild_id") or ""))
        return self.channels.get(channel_id)

    async def _message(self, data: dict[str, Any], seq: int | None) -> None:
        channel = await self._channel(str(data.get("channel_id") or "")) if data.get("guild_id") else None
        msg, why = normalize_message(
            data,
            account_id=self.account_id,
            bot_id=self.bot_id,
            channel=channel,
            allow_bots=bool(self.settings.get("allow_bots")),
        )
        if msg is None:
            self.log.debug("discord[%s]: message skipped: %s", self.account_id, why)
            return
        await self._commit(msg, seq)

    async def _interaction(self, data: dict[str, Any], seq: int | None) -> None:
        """A slash command: committed as its message, then answered (only its user sees the
        answer: the command's own reply follows in the conversation)."""
        channel = await self._channel(str(data.get("channel_id") or "")) if data.get("guild_id") else None
        msg, why = normalize_interaction(data, account_id=self.account_id, channel=channel)
        if msg is None:
            self.log.debug("discord[%s]: interaction skipped: %s", self.account_id, why)
            return
        await self._commit(msg, seq)
        if self.api is not None:
            try:
                await self.api.answer_interaction(str(data["id"]), str(data.get("token") or ""), f"`{msg.text}`")
            except (DiscordApiError, DiscordNetworkError) as exc:  # the command runs all the same
                self.log.warning("discord[%s]: could not answer the interaction: %s", self.account_id, exc)

    async def _commit(self, msg: InboundMessage, seq: int | None) -> None:
        assert self.gateway is not None
        cursor = ResumeState(self.gateway.state.session_id, self.gateway.state.resume_url, seq).to_json()
        await self.ctx.sink.receive([msg], ("discord", self.account_id, CURSOR, cursor))
        self.received()

    async def _register_commands(self) -> None:
        application = str(self.settings.get("application_id") or "") or self.bot_id
        if self.api is None or not application:
            return
        try:
            await self.api.set_commands(application, [dict(c) for c in SLASH_COMMANDS])
        except (DiscordApiError, DiscordNetworkError) as exc:  # text commands still work
            self.log.warning("discord[%s]: slash commands not registered: %s", self.account_id, exc)

    def webhook_path(self) -> str | None:
        return None

    async def webhook(self, headers: Mapping[str, str], body: bytes) -> tuple[int, bytes]:
        return 404, b""

    # -- sending ----------------------------------------------------------------------------------------
    async def send(self, message: OutboundMessage, on_transmitted: Transmitted) -> SendReceipt:
        if self.api is None:
            raise SendFailed("the account is not running")
        target = message.target
        channel = target.thread_id or target.chat_id
        file: Path | None = None
        mime = "application/octet-stream"
        if message.media_path:
            file = Path(message.media_path)
            await self.outgoing_size(file, 8)
            mime = mimetypes.guess_type(file.name)[0] or mime
        try:
            sent = await self.api.create_message(
                channel,
                message.text,
                reply_to=message.reply_to_id,
                file=file,
                mime_type=mime,
                on_transmitted=on_transmitted,
            )
        except DiscordApiError as exc:
            raise _send_failed(exc) from None
        except DiscordNetworkError as exc:
            raise SendFailed(str(exc)) from None
        self.sent()
        return SendReceipt(str(sent.get("id") or "") or None)

    async def typing(self, target: Target) -> None:
        if self.api is None:
            return
        with contextlib.suppress(DiscordApiError, DiscordNetworkError):
            await self.api.trigger_typing(target.thread_id or target.chat_id)

    async def download(self, attachment: Attachment, dest_dir: Path, max_bytes: int) -> Attachment:
        """Fetch an attachment's URL through the SSRF-guarded client into ``dest_dir``."""
        result = await fetch_file(
            self.ctx.fetch, attachment.ref, api_root=self.api_root, max_bytes=max_bytes, size=attachment.size
        )
        return await kept_attachment(dest_dir, attachment, result.body)


def _send_failed(exc: DiscordApiError) -> SendFailed:
    if exc.status == 429:
        return SendFailed(f"rate limited: {exc.message}", retry_after=exc.retry_after or 1.0)
    permanent = exc.status in (401, 403, 404) or exc.code in _PERMANENT_CODES
    return SendFailed(f"Discord refused: {exc}", permanent=permanent)
