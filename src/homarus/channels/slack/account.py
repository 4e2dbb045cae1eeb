"""One Slack app account: Socket Mode or HTTP events in, the Web API out, files both ways.

Receiving: an event is normalized and committed before Slack is told it arrived — the Socket
Mode acknowledgement follows the commit (``socket.py``), and in ``http`` mode the 200 does; both
come within Slack's 3 s, since nothing but the commit (no Web API call) stands before them. A
retried delivery (``retry_attempt``, ``X-Slack-Retry-Num``) of a committed event is acknowledged
and dropped by the inbox's unique key (channel, account, chat, ``ts``). A forged or stale HTTP
request is 401 and never read further.

Sending: Markdown becomes mrkdwn, a thread's answer goes into it (``thread_ts``), a file goes
through Slack's external upload with the text as its comment. Slack's answers map to the layer's:
a 429 waits its ``Retry-After``; a channel that is gone, a bot not in it, a revoked token or a
file too large is permanent. Slack has no typing indicator for bots outside its assistant
threads, so ``typing`` does nothing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qs

from homarus.channels.account_status import AccountStatus
from homarus.channels.adapter import SendFailed
from homarus.channels.credentials import read_secret
from homarus.channels.media_files import fetch_file, kept_attachment
from homarus.channels.model import Attachment, OutboundMessage, SendReceipt, Target
from homarus.channels.slack.api import DEFAULT_API_ROOT, SlackApi, SlackApiError, SlackNetworkError
from homarus.channels.slack.inbound import normalize_command, normalize_event
from homarus.channels.slack.mrkdwn import to_mrkdwn
from homarus.channels.slack.signing import DEFAULT_WEBHOOK_PATH, verify
from homarus.channels.slack.socket import SocketMode, SocketStopped

if TYPE_CHECKING:
    from homarus.channels.adapter import AccountContext, Transmitted
    from homarus.channels.model import InboundMessage

__all__ = ["APP_TOKEN_ENV", "BOT_TOKEN_ENV", "SIGNING_SECRET_ENV", "SlackAccount"]

BOT_TOKEN_ENV: Final = "SLACK_BOT_TOKEN"  # noqa: S105 - the variable's name
APP_TOKEN_ENV: Final = "SLACK_APP_TOKEN"  # noqa: S105 - the variable's name
SIGNING_SECRET_ENV: Final = "SLACK_SIGNING_SECRET"  # noqa: S105 - the variable's name
#: Slack's error codes that no retry can fix
_PERMANENT: Final = frozenset(
    {
        "channel_not_found",
        "not_in_channel",
        "is_archived",
        "msg_too_long",
        "no_text",
        "invalid_auth",
        "account_inactive",
        "token_revoked",
        "not_authed",
        "missing_scope",
        "restricted_action",
        "file_too_large",
        "user_not_found",
        "cannot_dm_bot",
        "invalid_arguments",
    }
)
_EMPTY: Final = b""


class SlackAccount(AccountStatus):
    channel_id = "slack"

    def __init__(self, ctx: AccountContext) -> None:
        self._init_account(ctx, DEFAULT_API_ROOT)
        self.mode = str(self.settings.get("mode") or "socket")
        self.api: SlackApi | None = None
        self.socket: SocketMode | None = None
        self.bot_user_id = ""
        self.bot_name = ""
        self.team = ""
        self._signing_secret: str | None = None
        self._task: asyncio.Task[None] | None = None

    # -- lifecycle ------------------------------------------------------------------------------------
    async def start(self) -> None:
        self.state = "starting"
        try:
            token = read_secret(self.ctx, "bot_token", BOT_TOKEN_ENV, what="bot token", file_key="token_file")
            app_token = ""
            if self.mode == "socket":
                app_token = read_secret(self.ctx, "app_token", APP_TOKEN_ENV, what="app-level token")
            else:
                self._signing_secret = read_secret(
                    self.ctx, "signing_secret", SIGNING_SECRET_ENV, what="signing secret"
                )
            self.api = SlackApi(token, self.api_root)
            me = await self.api.auth_test()
        except SlackApiError as exc:
            fatal = exc.error in _PERMANENT
            self.failed(f"the bot token was rejected ({exc.error})" if fatal else f"Slack refused: {exc}")
            raise SendFailed(self.last_error or "start failed", permanent=fatal) from None
        except (SlackNetworkError, SendFailed) as exc:
            self.failed(str(exc))
            raise SendFailed(self.last_error or "start failed", permanent=getattr(exc, "permanent", False)) from None
        self.bot_user_id, self.bot_name = str(me.get("user_id") or ""), str(me.get("user") or "")
        self.team = str(me.get("team_id") or "")
        if self.mode == "socket":
            api = self.api

            async def open_url() -> str:
                try:
                    return await api.open_connection(app_token)
                except SlackApiError as exc:
                    if exc.error in _PERMANENT or exc.error == "not_allowed_token_type":
                        raise SocketStopped(f"the app-level token was rejected ({exc.error})") from None
                    raise

            self.socket = SocketMode(open_url, self._envelope, log=self.ctx.log, on_state=self.state_changed)
            # "running" once Slack says hello (socket.py)
            self._task = asyncio.create_task(self._run(), name=f"slack-socket:{self.account_id}")
        else:
            self.state = "running"
        self.last_error = None

    async def _run(self) -> None:
        assert self.socket is not None
        try:
            await self.socket.run()
        except SocketStopped as exc:
            self.failed(str(exc))

    async def stop(self) -> None:
        if self.socket is not None:
            self.socket.stop()
        await self._stopped(self._task, self.api)
        self._task, self.api = None, None

    async def logout(self) -> None:
        await self.stop()

    def health(self) -> dict[str, Any]:
        out: dict[str, Any] = {**self.status_fields(), "mode": self.mode}
        if self.bot_user_id:
            out["identity"] = {"id": self.bot_user_id, "username": self.bot_name, "team": self.team}
        if self.socket is not None:
            out["details"] = {
                "socket": {
                    "connections": self.socket.connections,
                    "refreshes": self.socket.refreshes,
                    "envelopes": self.socket.envelopes,
                    "unacknowledged": self.socket.unacknowledged,
                }
            }
        elif self.mode == "http":
            out["webhookPath"] = self.webhook_path()
        return out

    # -- receiving --------------------------------------------------------------------------------------
    async def _envelope(self, envelope: dict[str, Any]) -> dict[str, Any] | None:
        """One Socket Mode envelope: committed (raising if it could not be), then acknowledged."""
        payload = envelope.get("payload")
        payload = payload if isinstance(payload, dict) else {}
        kind = envelope.get("type")
        if kind == "events_api":
            await self._event(payload)
        elif kind == "slash_commands":
            return await self._command(payload)
        else:
            self.log.debug("slack[%s]: %s envelope acknowledged and skipped", self.account_id, kind)
        return None

    async def _event(self, body: dict[str, Any]) -> None:
        msg, why = normalize_event(
            body,
            account_id=self.account_id,
            bot_user_id=self.bot_user_id,
            allow_bots=bool(self.settings.get("allow_bots")),
        )
        if msg is None:
            self.log.debug("slack[%s]: event skipped: %s", self.account_id, why)
            return
        await self._commit(msg)

    async def _command(self, payload: dict[str, Any]) -> dict[str, Any] | None:
        msg, why = normalize_command(payload, account_id=self.account_id)
        if msg is None:
            self.log.debug("slack[%s]: command skipped: %s", self.account_id, why)
            return None
        await self._commit(msg)
        # only its user sees this; the command's own answer follows in the conversation
        return {"response_type": "ephemeral", "text": f"`{msg.text}`"}

    async def _commit(self, msg: InboundMessage) -> None:
        await self.ctx.sink.receive([msg])
        self.received()

    def webhook_path(self) -> str | None:
        return str(self.settings.get("webhook_path") or DEFAULT_WEBHOOK_PATH) if self.mode == "http" else None

    async def webhook(self, headers: Mapping[str, str], body: bytes) -> tuple[int, bytes]:
        """One HTTP request from Slack: verified, then an event, a slash command or Slack's
        ``url_verification`` handshake."""
        secret = self._signing_secret
        why = "no signing secret" if secret is None else verify(secret, headers, body)
        if why is not None:
            self.log.warning("slack[%s]: refused an HTTP request: %s", self.account_id, why)
            return 401, b'{"ok":false,"error":"invalid_signature"}'
        if headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            return await self._form(body)
        try:
            data = json.loads(body)
        except ValueError:
            return 400, b'{"ok":false,"error":"invalid_json"}'
        if not isinstance(data, dict):
            return 400, b'{"ok":false,"error":"invalid_json"}'
        if data.get("type") == "url_verification":
            return 200, json.dumps({"challenge": str(data.get("challenge") or "")}).encode()
        await self._event(data)  # raising: 500, and Slack delivers it again
        return 200, _EMPTY

    async def _form(self, body: bytes) -> tuple[int, bytes]:
        fields = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items()}
        if "command" in fields:
            answer = await self._command(fields)
            return 200, json.dumps(answer).encode() if answer else _EMPTY
        return 200, _EMPTY  # interactivity (buttons): acknowledged, not used

    # -- sending ----------------------------------------------------------------------------------------
    async def send(self, message: OutboundMessage, on_transmitted: Transmitted) -> SendReceipt:
        if self.api is None:
            raise SendFailed("the account is not running")
        target = message.target
        text = to_mrkdwn(message.text) if message.markdown and message.text else message.text
        try:
            if message.media_path:
                file = Path(message.media_path)
                await self.outgoing_size(file, 20)
                sent = await self.api.upload_file(
                    target.chat_id, file, comment=text, thread_ts=target.thread_id, on_transmitted=on_transmitted
                )
                files = sent.get("files")
                ref = str(files[0].get("id") or "") if isinstance(files, list) and files else ""
            else:
                sent = await self.api.post_message(
                    target.chat_id, text, thread_ts=target.thread_id, on_transmitted=on_transmitted
                )
                ref = str(sent.get("ts") or "")
        except SlackApiError as exc:
            raise _send_failed(exc) from None
        except SlackNetworkError as exc:
            raise SendFailed(str(exc)) from None
        self.sent()
        return SendReceipt(ref or None)

    async def typing(self, target: Target) -> None:
        return None

    async def download(self, attachment: Attachment, dest_dir: Path, max_bytes: int) -> Attachment:
        """Fetch a file's private URL through the SSRF-guarded client; the bot token goes only to
        Slack's own hosts (or the configured API root's), never to a URL elsewhere."""
        if self.api is None:
            raise SendFailed("the account is not running")
        result = await fetch_file(
            self.ctx.fetch,
            attachment.ref,
            api_root=self.api_root,
            max_bytes=max_bytes,
            size=attachment.size,
            token=self.api.token,
            token_domains=("slack.com",),
        )
        if "text/html" in str(result.headers.get("content-type") or "") and attachment.mime_type != "text/html":
            # Slack's answer to a request it does not authorize is its sign-in page, with a 200
            raise SendFailed("Slack answered with a sign-in page: the app needs the files:read scope", permanent=True)
        return await kept_attachment(dest_dir, attachment, result.body)


def _send_failed(exc: SlackApiError) -> SendFailed:
    if exc.status == 429 or exc.error == "ratelimited":
        return SendFailed("rate limited by Slack", retry_after=exc.retry_after or 1.0)
    permanent = exc.error in _PERMANENT or exc.status in (401, 403, 404)
    return SendFailed(f"Slack refused: {exc}", permanent=permanent)
