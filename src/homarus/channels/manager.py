"""The channel layer at run time: the configured accounts, their stores, and the outbox sender.

:class:`ChannelManager` builds one :class:`~homarus.channels.adapter.ChannelAccount` per enabled
account of each configured channel whose plugin registered it, starts them concurrently (each
bounded by a timeout, so one slow platform never delays the others or the gateway), and is the
accounts' sink: a received batch is committed to the inbox (with its cursor) before the call
returns, then the dispatcher is woken. What happens to an inbound message after that is the
application's business (``usecases/chat/inbound.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from homarus.channels.adapter import AccountContext, SendFailed
from homarus.channels.db import ChannelDb, ChannelStore
from homarus.channels.delivery import Delivery
from homarus.channels.inbox import Inbox
from homarus.channels.outbox import Outbox
from homarus.channels.pairing import PairingStore
from homarus.errors import InvalidRequest, NotFound

if TYPE_CHECKING:
    from homarus.channels.adapter import ChannelAccount, ChannelSpec
    from homarus.channels.model import InboundMessage, Target
    from homarus.channels.outbox import OutboxRow
    from homarus.config.channels import ChannelConfig
    from homarus.config.schema import HomarusConfig

__all__ = ["ChannelManager"]

log = logging.getLogger("homarus.channels")

START_TIMEOUT_S: Final = 30.0


class ChannelManager:
    def __init__(
        self,
        *,
        state_dir: Path,
        specs: Mapping[str, ChannelSpec],
        config: Callable[[], HomarusConfig],
        fetch: Callable[..., Awaitable[Any]] | None = None,
        env: Mapping[str, str] | None = None,
        db: ChannelStore | None = None,
    ) -> None:
        self.state_dir = state_dir
        self.specs = dict(specs)
        self._config = config
        self.fetch = fetch
        self.env = dict(env or {})
        #: the state dir's ``channels.sqlite`` unless given a shared one (``channels/pg_db.py``)
        self.db: ChannelStore = db if db is not None else ChannelDb(state_dir / "channels.sqlite")
        self.inbox = Inbox(self.db)
        self.outbox = Outbox(self.db)
        self.pairing = PairingStore(self.db)
        self.accounts: dict[tuple[str, str], ChannelAccount] = {}
        self.errors: dict[tuple[str, str], str] = {}
        #: the settings each running account was started with (a config change restarts it)
        self._started_with: dict[tuple[str, str], dict[str, Any]] = {}
        #: accounts an operator stopped: a config change does not start them again
        self.held: set[tuple[str, str]] = set()
        #: set when committed inbound messages wait for the dispatcher
        self.inbound_ready = asyncio.Event()
        self.delivery = Delivery(self.outbox, self._account_for_row)
        self.recovered: dict[str, int] = {}
        #: tells the gateway running the channels that pieces were queued here (a cluster's
        #: notice; None on one gateway)
        self.tell_sender: Callable[[], None] | None = None

    # -- config -------------------------------------------------------------------------------------
    def channel_config(self, channel_id: str) -> ChannelConfig | None:
        return self._config().channels.configured().get(channel_id)

    def settings(self, channel_id: str, account_id: str) -> dict[str, Any]:
        cfg = self.channel_config(channel_id)
        if cfg is None:
            raise NotFound(f"channel {channel_id!r} is not configured")
        if account_id not in cfg.account_ids():
            raise NotFound(f"channel {channel_id!r} has no account {account_id!r}")
        return cfg.account(account_id)

    def wanted(self) -> list[tuple[str, str]]:
        """(channel, account) of every enabled account of every configured channel."""
        out = []
        for channel_id, cfg in self._config().channels.configured().items():
            if cfg.enabled is False:
                continue
            for account_id in cfg.account_ids():
                if cfg.account(account_id).get("enabled") is not False:
                    out.append((channel_id, account_id))
        return out

    # -- lifecycle ----------------------------------------------------------------------------------
    async def start_all(self) -> None:
        """Recover the outbox, start every wanted account (concurrently, each bounded), and the sender."""
        self.recovered = await asyncio.to_thread(self.outbox.recover)
        if any(self.recovered.values()):
            log.warning(
                "channels: outbox after restart: %(resent)d to send again, %(unconfirmed)d unconfirmed", self.recovered
            )
        wanted = self.wanted()
        await asyncio.gather(*(self.start(c, a) for c, a in wanted), return_exceptions=True)
        self.delivery.start()
        if await asyncio.to_thread(self.inbox.received, 1):
            self.inbound_ready.set()

    async def start(self, channel_id: str, account_id: str | None = None) -> dict[str, Any]:
        spec = self.specs.get(channel_id)
        if spec is None:
            raise NotFound(f"no channel plugin provides {channel_id!r}")
        cfg = self.channel_config(channel_id)
        if cfg is None:
            raise InvalidRequest(f"channel {channel_id!r} is not configured (channels.{channel_id})")
        account_id = account_id or cfg.primary_account
        key = (channel_id, account_id)
        settings = self.settings(channel_id, account_id)
        if key in self.accounts:
            await self.stop(channel_id, account_id)
        ctx = AccountContext(
            channel_id,
            account_id,
            settings,
            self,
            self.state_dir,
            logging.getLogger(f"homarus.channels.{channel_id}"),
            self.fetch,
            self.env,
        )
        account = spec.factory(ctx)
        self.accounts[key] = account
        self._started_with[key] = settings
        self.held.discard(key)
        self.errors.pop(key, None)
        try:
            async with asyncio.timeout(START_TIMEOUT_S):
                await account.start()
        except (SendFailed, TimeoutError) as exc:
            message = exc.message if isinstance(exc, SendFailed) else f"did not start within {START_TIMEOUT_S:g}s"
            self.errors[key] = message
            log.error("channels: %s/%s did not start: %s", channel_id, account_id, message)
        except Exception as exc:
            self.errors[key] = f"{type(exc).__name__}: {exc}"[:300]
            log.exception("channels: %s/%s crashed while starting", channel_id, account_id)
        self.delivery.poke()
        return self.account_status(channel_id, account_id)

    async def stop(self, channel_id: str, account_id: str | None = None, *, hold: bool = False) -> list[str]:
        """Stop the channel's accounts (or one); ``hold`` keeps them stopped across config changes."""
        stopped = []
        for (c, a), account in list(self.accounts.items()):
            if c == channel_id and (account_id is None or a == account_id):
                with contextlib.suppress(Exception):
                    await account.stop()
                del self.accounts[(c, a)]
                self._started_with.pop((c, a), None)
                self.errors.pop((c, a), None)
                if hold:
                    self.held.add((c, a))
                stopped.append(a)
        return stopped

    async def reconcile(self) -> dict[str, list[str]]:
        """Bring the running accounts in line with the config after it changed.

        An account whose settings changed is restarted, one no longer configured (or disabled) is
        stopped, a new one is started; an account an operator stopped stays stopped.
        """
        wanted: dict[tuple[str, str], dict[str, Any]] = {}
        for key in self.wanted():
            if key[0] in self.specs:
                wanted[key] = self.settings(*key)
        stopped, started = [], []
        for key in list(self.accounts):
            if key not in wanted or wanted[key] != self._started_with.get(key):
                await self.stop(*key)
                stopped.append("/".join(key))
        for key in wanted:
            if key not in self.accounts and key not in self.held:
                await self.start(*key)
                started.append("/".join(key))
        if stopped or started:
            log.info("channels: config changed: stopped %s, started %s", stopped or "none", started or "none")
        return {"stopped": stopped, "started": started}

    async def logout(self, channel_id: str, account_id: str | None = None) -> list[str]:
        done = []
        for (c, a), account in list(self.accounts.items()):
            if c == channel_id and (account_id is None or a == account_id):
                with contextlib.suppress(Exception):
                    await account.logout()
                del self.accounts[(c, a)]
                self._started_with.pop((c, a), None)
                self.held.add((c, a))
                done.append(a)
        return done

    async def stop_accounts(self) -> None:
        """Stop sending and every account (the stores stay open: :meth:`start_all` resumes)."""
        await self.delivery.stop()
        for channel_id in {c for c, _ in self.accounts}:
            await self.stop(channel_id)

    async def close(self) -> None:
        await self.stop_accounts()
        self.db.close()

    def queued(self) -> None:
        """Pieces were recorded: the sender looks now, here or where the channels run."""
        self.delivery.poke()
        if self.tell_sender is not None and not self.delivery.running:
            self.tell_sender()

    # -- the sink the accounts write to ------------------------------------------------------------
    async def receive(self, messages: list[InboundMessage], cursor: tuple[str, str, str, str] | None = None) -> None:
        if not messages and cursor is None:
            return
        await asyncio.to_thread(self.inbox.commit, messages, cursor=cursor)
        if messages:
            self.inbound_ready.set()

    async def cursor(self, channel: str, account: str, name: str) -> str | None:
        return await asyncio.to_thread(self.inbox.cursor, channel, account, name)

    # -- lookups ------------------------------------------------------------------------------------
    def account(self, channel_id: str, account_id: str) -> ChannelAccount | None:
        return self.accounts.get((channel_id, account_id))

    def _account_for_row(self, row: OutboxRow) -> ChannelAccount | None:
        target = row.message.target
        return self.accounts.get((target.channel, target.account_id))

    def account_for_target(self, target: Target) -> ChannelAccount | None:
        return self.accounts.get((target.channel, target.account_id))

    def webhook_account(self, path: str) -> ChannelAccount | None:
        for account in self.accounts.values():
            if account.webhook_path() == path:
                return account
        return None

    # -- status -------------------------------------------------------------------------------------
    def account_status(self, channel_id: str, account_id: str) -> dict[str, Any]:
        key = (channel_id, account_id)
        account = self.accounts.get(key)
        health = account.health() if account is not None else {"state": "stopped"}
        if key in self.errors:
            health = {**health, "state": "error", "lastError": self.errors[key]}
        settings: dict[str, Any] = {}
        with contextlib.suppress(NotFound):
            settings = self.settings(channel_id, account_id)
        groups = settings.get("groups")
        return {
            "channel": channel_id,
            "accountId": account_id,
            **health,
            "dmPolicy": settings.get("dm_policy") or "pairing",
            "groupPolicy": settings.get("group_policy") or "allowlist",
            "groups": sorted(groups) if groups else [],
            "requireMention": settings.get("require_mention") is not False,
        }

    def health(self) -> tuple[dict[str, Any], dict[str, str], list[str]]:
        """The ``health`` method's view (no store read): per channel its accounts' state, the
        labels, and one line per account for ``status.channelSummary``."""
        channels: dict[str, Any] = {}
        labels: dict[str, str] = {}
        lines: list[str] = []
        for channel_id, cfg in self._config().channels.configured().items():
            spec = self.specs.get(channel_id)
            labels[channel_id] = spec.label if spec is not None else channel_id
            accounts = {}
            for account_id in cfg.account_ids():
                acc = self.account_status(channel_id, account_id)
                state = str(acc.get("state") or "stopped")
                accounts[account_id] = {
                    "accountId": account_id,
                    "configured": True,
                    "running": state in ("running", "degraded"),
                    "state": state,
                    **({"mode": acc["mode"]} if acc.get("mode") else {}),
                    **({"lastError": acc["lastError"]} if acc.get("lastError") else {}),
                }
                detail = ", ".join(x for x in (account_id, str(acc.get("mode") or "")) if x)
                error = f": {acc['lastError']}" if acc.get("lastError") else ""
                lines.append(f"{labels[channel_id]}: {state} ({detail}){error}")
            primary = accounts.get(cfg.primary_account, {})
            channels[channel_id] = {
                "configured": True,
                "registered": spec is not None,
                "accountId": cfg.primary_account,
                "running": bool(primary.get("running")),
                "accounts": accounts,
            }
        return channels, labels, lines

    def status(self) -> dict[str, Any]:
        channels: list[dict[str, Any]] = []
        configured = self._config().channels.configured()
        for channel_id, cfg in configured.items():
            spec = self.specs.get(channel_id)
            channels.append(
                {
                    "id": channel_id,
                    "label": spec.label if spec is not None else channel_id,
                    "registered": spec is not None,
                    "enabled": cfg.enabled is not False,
                    "capabilities": spec.capabilities.to_json() if spec is not None else None,
                    "accounts": [self.account_status(channel_id, a) for a in cfg.account_ids()],
                }
            )
        outbox = self.outbox.counts()
        return {
            "channels": channels,
            "inbound": self.inbox.counts(),
            "outbox": {**outbox, "recovered": self.recovered},
            "deadLetters": [r.to_json() for r in self.outbox.dead_letters(20)],
            "pairing": {"pending": len(self.pairing.pending())},
        }
