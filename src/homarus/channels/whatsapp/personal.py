"""A personal WhatsApp number as a linked device (``mode: "personal"``), as the original runs it.

Linking: an account that was never linked waits, saying so in its status, until someone asks for
a code (``homarus channels login whatsapp``, or the Control UI: ``web.login.start``). It then
connects, shows each QR code WhatsApp hands out, and once the phone scans one it remembers the
link (``linked.json`` beside the engine's session, both private to the user) and connects for
good. A device unlinked from the phone goes back to waiting for a scan, with that reason.

Supervision, so that a link never goes "deaf": the engine reconnects by itself after a drop, but
a watchdog checks every few seconds that it did (connected and logged in) and that WhatsApp still
answers its keepalives; a connection down or silent for longer than ``SILENCE_S`` is closed and
opened again, with backoff (1 s doubling to 5 min, jittered) that a success resets. A temporary
ban or another session taking the device over waits the longest step; an outdated client stops
with the reason.

Messages: each is committed to the inbox before its handler returns (so the engine acknowledges
it only after the commit, where its library lets it); a message WhatsApp delivers again is
dropped by the inbox's unique key. Replies go out through the outbox, which retries while the
link is down.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import mimetypes
import random
import time
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final

from homarus.channels.account_status import AccountStatus, now_ms
from homarus.channels.adapter import SendFailed
from homarus.channels.media_files import kept_attachment, named_by_type
from homarus.channels.model import Attachment, OutboundMessage, SendReceipt, Target, attachment_kind
from homarus.channels.whatsapp import linked
from homarus.channels.whatsapp.format import to_whatsapp
from homarus.fs import atomic_write, ensure_private_dir
from homarus.tasks import cancel_and_wait

if TYPE_CHECKING:
    from homarus.channels.adapter import AccountContext, Transmitted

__all__ = ["PersonalAccount"]

#: people whose last message is remembered for the read receipt
MAX_REMEMBERED: Final = 10_000
_NOT_LINKED: Final = "not linked yet: run homarus channels login whatsapp (or use the Control UI's Channels page)"


def _backoff(attempt: int) -> float:
    return float(min(300.0, 2.0 ** min(attempt, 9)) * random.uniform(0.8, 1.2))  # noqa: S311 - jitter


class PersonalAccount(AccountStatus):
    channel_id = "whatsapp"
    #: how often the watchdog looks, and how long a connection may be down or silent
    CHECK_S: ClassVar[float] = 5.0
    SILENCE_S: ClassVar[float] = 60.0
    #: how long codes are shown for a link nobody scans
    LINK_TIMEOUT_S: ClassVar[float] = 180.0

    def __init__(self, ctx: AccountContext) -> None:
        self._init_account(ctx, "")
        self.mode = "personal"
        auth_dir = self.settings.get("auth_dir")
        self.session_dir = Path(auth_dir).expanduser() if auth_dir else ctx.state_dir / "whatsapp" / self.account_id
        self.engine_name = str(self.settings.get("engine") or "neonize")
        self.device: linked.LinkedDevice | None = None
        self.link: dict[str, Any] | None = None
        self.qr: str | None = None
        self.reconnects = 0
        self._attempt = 0
        self._login_until: float | None = None
        self._down_since: float | None = None
        self._silent_since: float | None = None
        self._ended: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()
        self._wake = asyncio.Event()
        self._saving = asyncio.Lock()
        #: per chat, its last message to mark read: (chat JID, sender JID, message id)
        self._last_message: OrderedDict[str, tuple[str, str, str]] = OrderedDict()

    # -- lifecycle ------------------------------------------------------------------------------------
    async def start(self) -> None:
        self.state = "starting"
        try:
            # in a thread: the engine's import (a native library, ~1 s) must not hold the loop
            self._factory = await asyncio.to_thread(linked.engine, self.engine_name)
        except SendFailed as exc:
            self.failed(exc.message)
            raise
        self.link = await asyncio.to_thread(self._read_link)
        self._task = asyncio.create_task(self._supervise(), name=f"whatsapp-personal:{self.account_id}")
        if self.link is None:
            self.state_changed("unlinked", _NOT_LINKED)

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None
        await self._close_device()
        self.state = "stopped"

    async def logout(self) -> None:
        """Unlink the device (the phone's list loses it) and forget the session."""
        await cancel_and_wait(self._task)
        self._task = None
        device = self.device
        if device is not None and device.alive():
            with contextlib.suppress(Exception):
                await device.logout()
        await self._close_device()
        await asyncio.to_thread(self._forget)
        self.state = "stopped"

    def health(self) -> dict[str, Any]:
        out: dict[str, Any] = {**self.status_fields(), "mode": self.mode}
        if self.link:
            out["identity"] = {"id": str(self.link.get("jid") or ""), "username": str(self.link.get("number") or "")}
        details: dict[str, Any] = {"linked": self.link is not None, "reconnects": self.reconnects}
        if self.qr is not None:
            details["waitingForScan"] = True
        if self._silent_since is not None:
            details["keepaliveLostForS"] = round(time.monotonic() - self._silent_since, 1)
        out["details"] = details
        return out

    # -- linking (web.login.start / web.login.wait) ---------------------------------------------------
    async def login_start(self, *, force: bool, timeout_s: float) -> dict[str, Any]:
        """Begin linking: the first QR code, or that the account is linked already (or why it
        cannot link: its start failed)."""
        if self._task is None:
            return {"connected": False, "linking": False, "message": self.last_error or "the account is not running"}
        if self.link is not None and not force:
            return {"connected": True, "linking": False, "message": f"WhatsApp is already linked ({self._who()})"}
        if force and self.link is not None:
            await self.logout()
            self._task = asyncio.create_task(self._supervise(), name=f"whatsapp-personal:{self.account_id}")
        self._login_until = time.monotonic() + self.LINK_TIMEOUT_S
        self._wake.set()
        return await self._next(None, timeout_s, first=True)

    async def login_wait(self, *, timeout_s: float, current_qr: str | None) -> dict[str, Any]:
        """Until the phone has scanned a code (connected), a newer code replaces ``current_qr``, or
        ``timeout_s`` passes."""
        return await self._next(current_qr, timeout_s, first=False)

    async def _next(self, current: str | None, timeout_s: float, *, first: bool) -> dict[str, Any]:
        """The original's result, with ``linking``: whether codes are still being shown (false:
        linked, or linking ended and has to be started again)."""
        from homarus.channels.qr_code import data_url

        deadline = time.monotonic() + timeout_s
        while True:
            if self.link is not None and self.state == "running":
                return {"connected": True, "linking": False, "message": f"Linked: {self._who()}"}
            if self.qr is not None:
                url = await asyncio.to_thread(data_url, self.qr)
                if url != current:
                    message = "Scan this code in WhatsApp: Settings → Linked devices → Link a device"
                    return {"connected": False, "linking": True, "message": message, "qrDataUrl": url, "qr": self.qr}
            if self.link is None and self._login_until is None and not first:
                return {"connected": False, "linking": False, "message": self.last_error or "linking stopped"}
            left = deadline - time.monotonic()
            if left <= 0:
                waiting = "still waiting for the scan" if self.qr is not None else "no code from WhatsApp yet"
                return {"connected": False, "linking": True, "message": self.last_error or waiting}
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await self._changed.wait()

    def _who(self) -> str:
        link = self.link or {}
        return str(link.get("number") or link.get("jid") or "?") + (f" ({link['name']})" if link.get("name") else "")

    # -- the connection's supervision -------------------------------------------------------------------
    async def _supervise(self) -> None:
        while True:
            if self.link is None and not self._linking():
                self._login_until = None
                self.qr = None
                self.state_changed("unlinked", self.last_error if self._ended == "unlinked" else _NOT_LINKED)
                self._notify()
                self._wake.clear()
                await self._wake.wait()
                continue
            self._ended = None
            self._down_since = self._silent_since = None
            self.state = "linking" if self.link is None else "connecting"
            self.device = self._factory(self.session_dir, self._on_event, self.log)
            try:
                await asyncio.to_thread(ensure_private_dir, self.session_dir)
                self._down_since = time.monotonic()
                await self.device.connect()
                outcome = await self._watch()
            except Exception as exc:  # the engine's own failure: logged, retried
                self.state_changed("reconnecting", f"WhatsApp connection failed: {type(exc).__name__}: {exc}"[:300])
                outcome = "reconnect"
            await self._close_device()
            if outcome == "unlinked":
                continue
            if outcome == "stopped":
                self._notify()
                return
            delay = 300.0 if outcome == "refused" else _backoff(self._attempt)
            self._attempt += 1
            self.reconnects += 1
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._wake.wait()

    def _linking(self) -> bool:
        return self._login_until is not None and time.monotonic() < self._login_until

    async def _watch(self) -> str:
        """Wait for the connection's end: ``unlinked``, ``refused``, ``stopped`` (give up until
        restarted) or ``reconnect`` (down or silent too long)."""
        while True:
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.CHECK_S):
                    await self._wake.wait()
            if self._ended is not None:
                return self._ended
            now = time.monotonic()
            if self.link is None:
                if not self._linking():
                    self.last_error = "nobody scanned the code in time: start linking again"
                    self._ended = "unlinked"
                    return "unlinked"
                continue
            device = self.device
            if self.state == "running" and device is not None and not device.alive():
                self._down_since = self._down_since or now
                self.state_changed("reconnecting", "the WhatsApp connection dropped")
            down = self._down_since is not None and now - self._down_since > self.SILENCE_S
            silent = self._silent_since is not None and now - self._silent_since > self.SILENCE_S
            if down or silent:
                why = "no keepalive answer" if silent else "not connected"
                self.state_changed("reconnecting", f"WhatsApp: {why} for {self.SILENCE_S:g}s, connecting again")
                return "reconnect"

    async def _close_device(self) -> None:
        device, self.device = self.device, None
        if device is not None:
            try:
                await device.close()
            except Exception as exc:
                self.log.debug("whatsapp[%s]: closing the engine: %s", self.account_id, exc)

    def _notify(self) -> None:
        self._changed.set()

    def _end(self, outcome: str) -> None:
        self._ended = outcome
        self._wake.set()
        self._notify()

    async def _on_event(self, event: linked.LinkedEvent) -> None:
        if isinstance(event, linked.LinkedMessage):
            await self._on_message(event)
            return
        if isinstance(event, linked.QrCode):
            self.qr = event.code
            self.state_changed("linking", None)
        elif isinstance(event, linked.Paired):
            if event.error:
                self.state_changed("linking", f"pairing failed: {event.error}"[:300])
            else:
                self.qr = None
                self._down_since = time.monotonic()  # whatsmeow reconnects as the new device now
                self.link = {"jid": event.jid, "number": linked.peer_id(event.jid), "name": event.name}
                self.link["linkedAt"] = now_ms()
                await self._save_link()
                self.state_changed("connecting", None)
        elif isinstance(event, linked.Connected):
            self._login_until = None
            self._attempt = 0
            self._down_since = self._silent_since = None
            if self.link is not None:
                if event.lid and self.link.get("lid") != event.lid:  # mentions in groups use it
                    self.link = {**self.link, "lid": event.lid}
                    await self._save_link()
                self.state_changed("running", None)
        elif isinstance(event, linked.Disconnected):
            self._down_since = self._down_since or time.monotonic()
            if self.link is not None:
                why = f": {event.reason}" if event.reason else ""
                self.state_changed("reconnecting", f"disconnected from WhatsApp{why}")
        elif isinstance(event, linked.KeepAliveLost):
            self._silent_since = self._silent_since or time.monotonic()
            self.state_changed("degraded", f"WhatsApp is not answering keepalives ({event.errors} missed)")
        elif isinstance(event, linked.KeepAliveRestored):
            self._silent_since = None
            if self.state == "degraded":
                self.state_changed("running", None)
        elif isinstance(event, linked.LoggedOut):
            await asyncio.to_thread(self._forget)
            self.link = None
            self.last_error = (
                f"WhatsApp unlinked this device{' (' + event.reason + ')' if event.reason else ''}: "
                "link it again with homarus channels login whatsapp"
            )
            self.log.warning("whatsapp[%s]: %s", self.account_id, self.last_error)
            self._end("unlinked")
        elif isinstance(event, linked.Refused):
            self.failed(f"WhatsApp refused the connection: {event.reason}")
            self._end("stopped" if event.permanent else "refused")
        self._notify()

    # -- the link's record ------------------------------------------------------------------------------
    def _read_link(self) -> dict[str, Any] | None:
        try:
            data = json.loads((self.session_dir / "linked.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and data.get("jid") else None

    async def _save_link(self) -> None:
        """Write the link as it is now (one write at a time, so the last one holds the newest)."""
        async with self._saving:
            if self.link is not None:
                await asyncio.to_thread(atomic_write, self.session_dir / "linked.json", json.dumps(self.link))

    def _forget(self) -> None:
        """The link and the engine's session (its keys: ``session.*`` files) removed, and the
        directory when nothing else is in it (``authDir`` may be one the user chose): a later
        start links afresh."""
        if not self.session_dir.is_dir() or self.session_dir.is_symlink():
            return
        for path in self.session_dir.iterdir():
            if path.name.startswith(("session.", "linked.json")) and not path.is_dir():
                path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.session_dir.rmdir()

    # -- receiving --------------------------------------------------------------------------------------
    def webhook_path(self) -> str | None:
        return None

    async def webhook(self, headers: Any, body: bytes) -> tuple[int, bytes]:
        return 404, b'{"error":"not found"}'

    def _own(self) -> tuple[str, ...]:
        link = self.link or {}
        return tuple(str(link[k]) for k in ("jid", "lid") if link.get(k))

    async def _on_message(self, msg: linked.LinkedMessage) -> None:
        inbound = linked.to_inbound(msg, account_id=self.account_id, own=self._own())
        if isinstance(inbound, str):
            self.log.debug("whatsapp[%s]: message %s skipped: %s", self.account_id, msg.id, inbound)
            return
        self._remember(inbound.chat_id, (msg.chat, msg.sender, msg.id))
        await self.ctx.sink.receive([inbound])  # raising: the engine does not acknowledge it
        self.received()

    def _remember(self, chat_id: str, message: tuple[str, str, str]) -> None:
        self._last_message[chat_id] = message
        self._last_message.move_to_end(chat_id)
        while len(self._last_message) > MAX_REMEMBERED:
            self._last_message.popitem(last=False)

    # -- sending ----------------------------------------------------------------------------------------
    def _connected(self) -> linked.LinkedDevice:
        device = self.device
        if device is None or self.link is None or not device.alive():
            why = "not linked" if self.link is None else "not connected to WhatsApp"
            raise SendFailed(f"the WhatsApp account is {why} right now", permanent=False)
        return device

    async def send(self, message: OutboundMessage, on_transmitted: Transmitted) -> SendReceipt:
        device = self._connected()
        chat = linked.chat_jid(message.target.chat_id)
        text = to_whatsapp(message.text) if message.markdown and message.text else message.text
        try:
            if message.media_path:
                file = Path(message.media_path)
                await self.outgoing_size(file, 50)
                data = await asyncio.to_thread(file.read_bytes)
                mime = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
                kind = message.media_kind or attachment_kind(mime)
                await on_transmitted()
                sent = await device.send_file(chat, data, mime=mime, kind=kind, name=file.name, caption=text)
            else:
                await on_transmitted()
                sent = await device.send_text(chat, text)
        except SendFailed:
            raise
        except Exception as exc:
            raise SendFailed(f"WhatsApp did not take the message: {exc}"[:300]) from None
        self.sent()
        return SendReceipt(sent or None)

    async def typing(self, target: Target) -> None:
        remembered = self._last_message.pop(target.chat_id, None)
        device = self.device
        if device is None or not device.alive():
            return
        try:
            if remembered is not None and self.settings.get("send_read_receipts") is not False:
                await device.mark_read(*remembered)
            await device.typing(linked.chat_jid(target.chat_id))
        except Exception as exc:
            self.log.debug("whatsapp[%s]: no typing indicator: %s", self.account_id, exc)

    async def download(self, attachment: Attachment, dest_dir: Path, max_bytes: int) -> Attachment:
        device = self._connected()
        if attachment.size is not None and attachment.size > max_bytes:
            raise SendFailed(f"the file is {attachment.size} bytes, over the {max_bytes}-byte cap", permanent=True)
        try:
            body = await device.download(attachment.ref, max_bytes)
        except SendFailed:
            raise
        except Exception as exc:
            raise SendFailed(f"WhatsApp did not hand the file over: {exc}"[:300]) from None
        if len(body) > max_bytes:
            raise SendFailed(f"the file is over the {max_bytes}-byte cap", permanent=True)
        return await kept_attachment(dest_dir, attachment, body, name=named_by_type(attachment, attachment.mime_type))
