"""The contract between the channel layer and one platform: :class:`ChannelSpec` and its accounts.

A plugin registers a :class:`ChannelSpec` (``api.register_channel(spec)``); the built-in channels
do the same from their bundled plugins. For each configured account the manager calls
``spec.factory(ctx)`` (import the platform code there, not at registration: an unconfigured
channel costs nothing) and drives the returned :class:`ChannelAccount`:

* ``start()`` connects and begins receiving; each received batch goes to ``ctx.sink`` *before*
  the platform is acknowledged (``sink`` commits it durably, with the cursor that acknowledges it);
* ``send(message, on_transmitted)`` sends one piece; it awaits ``on_transmitted()`` (the outbox
  records the piece as sent, without yielding) when the platform is about to have the whole
  request: right before its last byte is written, so that a crash leaves either an incomplete
  request the platform discards or a record that it was sent; it raises :class:`SendFailed` with
  what the platform said;
* ``typing(target)``, ``download(attachment, ...)``, ``webhook(...)``, ``health()``, ``stop()``,
  ``logout()``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from homarus.errors import RuntimeFailure

if TYPE_CHECKING:
    import logging

    from homarus.channels.model import (
        Attachment,
        ChannelCapabilities,
        InboundMessage,
        OutboundMessage,
        SendReceipt,
        Target,
    )
    from homarus.config.channels import ChannelConfig

__all__ = [
    "AccountContext",
    "ChannelAccount",
    "ChannelSetup",
    "ChannelSink",
    "ChannelSpec",
    "SendFailed",
    "SetupSecret",
    "Transmitted",
]

#: awaited by an account right before a send's last byte is written (see the outbox's ``transmitted``)
Transmitted = Callable[[], Awaitable[None]]


class SendFailed(RuntimeFailure):
    """A send the platform refused or that could not reach it.

    ``retry_after``: the platform asked to wait (seconds; 429 flood control). ``permanent``: trying
    again cannot help (blocked by the user, chat not found). ``format_rejected``: the platform
    could not parse the formatting (the text is then sent again as plain text).
    """

    def __init__(
        self, message: str, *, retry_after: float | None = None, permanent: bool = False, format_rejected: bool = False
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.permanent = permanent
        self.format_rejected = format_rejected


class ChannelSink(Protocol):
    async def receive(self, messages: list[InboundMessage], cursor: tuple[str, str, str, str] | None = None) -> None:
        """Commit ``messages`` (and the cursor that acknowledges them) durably; raises if it could
        not, and then the adapter must not acknowledge them to the platform."""
        ...

    async def cursor(self, channel: str, account: str, name: str) -> str | None:
        """The last committed value of a cursor (a long-poll offset)."""
        ...


@dataclass(slots=True)
class AccountContext:
    """What an account gets from the layer: its effective settings and the shared services."""

    channel_id: str
    account_id: str
    #: ``ChannelConfig.account(account_id)``: access fields and the channel's own keys, merged
    settings: Mapping[str, Any]
    sink: ChannelSink
    state_dir: Path
    log: logging.Logger
    #: fetches a URL under the SSRF guard:
    #: ``await fetch(url, max_bytes=, timeout_s=, trusted_origin=, headers=None)``
    fetch: Callable[..., Awaitable[Any]] | None = None
    env: Mapping[str, str] = field(default_factory=dict)


class ChannelAccount(Protocol):
    channel_id: str
    account_id: str

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def health(self) -> dict[str, Any]:
        """``{state, lastError?, lastInboundAt?, lastOutboundAt?, identity?, mode?, details?}`` (no
        secrets; ``details``: the channel's own runtime facts, shown as they are by ``channels.status``)."""
        ...

    async def send(self, message: OutboundMessage, on_transmitted: Transmitted) -> SendReceipt: ...

    async def typing(self, target: Target) -> None: ...

    async def download(self, attachment: Attachment, dest_dir: Path, max_bytes: int) -> Attachment: ...

    def webhook_path(self) -> str | None:
        """The gateway path this account's platform POSTs updates to (None: it does not)."""
        ...

    async def webhook(self, headers: Mapping[str, str], body: bytes) -> tuple[int, bytes]:
        """Handle one webhook POST: (HTTP status, body). Commit before answering 200.

        An account whose platform checks the URL with a GET first (WhatsApp's verify token) also
        has ``async webhook_challenge(query) -> (status, body)``, answered as text."""
        ...

    async def logout(self) -> None: ...

    # An account that links by QR code (a personal WhatsApp number) also has
    # ``async login_start(*, force, timeout_s) -> dict`` and
    # ``async login_wait(*, timeout_s, current_qr) -> dict``, answered as the original's
    # ``web.login.start`` / ``web.login.wait`` results (``connected``, ``message``, ``qrDataUrl``).


@dataclass(frozen=True, slots=True)
class SetupSecret:
    """A secret an account needs beside its main one (Slack's app-level token)."""

    #: its config key (``appToken``), and what to call it when asking
    key: str
    label: str
    #: the environment variable the default account reads when the config holds none
    env: str | None = None
    #: the modes that need it (empty: every mode)
    modes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ChannelSetup:
    """How ``homarus channels add`` and ``homarus onboard`` set up an account of the channel.

    The shared flags (``--token``, ``--token-env``, ``--dm-policy``, ``--allow-from``,
    ``--api-root``, ``--no-verify``) mean the same on every channel; this says where they go."""

    #: the config key of the account's secret (``botToken``), and what to call it when asking
    credential_key: str
    credential_label: str
    #: the environment variable the default account reads when the config holds no secret
    credential_env: str | None = None
    #: the config key ``--api-root`` sets: the platform's API base URL (a local stand-in, tests)
    api_root_key: str | None = None
    #: checks a secret with the platform: (secret, API root or None) → the account's name there
    #: (``@mybot``); raises ValueError saying what the platform answered
    verify: Callable[[str, str | None], str] | None = None
    #: ``channels list`` fields of an account (``mode``, ``token``: where the secret comes from),
    #: from its effective settings, its id and the environment
    list_fields: Callable[[Mapping[str, Any], str, Mapping[str, str]], dict[str, Any]] | None = None
    #: the question ``homarus onboard`` asks (None: onboarding does not offer the channel)
    onboard_question: str | None = None
    #: what a person does next, printed once the account is added
    next_step: str = ""
    #: the transports ``--mode`` may choose, the default first (empty: the channel has one)
    modes: tuple[str, ...] = ()
    #: the modes that need the main secret (empty: every mode; a linked device needs none)
    credential_modes: tuple[str, ...] = ()
    #: what a person does next in a mode, where it differs from ``next_step``
    mode_steps: tuple[tuple[str, str], ...] = ()
    #: more secrets the account needs (``--secret <key>=<value>``, asked for, or their variables)
    secrets: tuple[SetupSecret, ...] = ()


@dataclass(frozen=True, slots=True)
class ChannelSpec:
    """A channel as registered: its id, label, capabilities and the factory of its accounts."""

    id: str
    label: str
    capabilities: ChannelCapabilities
    factory: Callable[[AccountContext], ChannelAccount]
    #: how thread ids appear in session keys and peer ids (``topic`` for Telegram forum topics)
    thread_word: str = "thread"
    #: config keys this channel reads beyond the shared access fields, for ``channels list``
    docs: str = ""
    #: other names a caller may give the channel (``send`` to ``tg:<chat>``)
    aliases: tuple[str, ...] = ()
    #: the channel's own fields of an account's ``channels.status`` row (never a secret), from the
    #: account's effective settings and id
    status_fields: Callable[[Mapping[str, Any], str], dict[str, Any]] | None = None
    #: the model of ``channels.<id>``: :class:`ChannelConfig` with the channel's own fields, or
    #: ``"module:Class"`` naming it (imported when ``channels.<id>`` is first read, so a channel
    #: nobody configures costs no model); None: the shared access fields, its own keys as given
    config_model: type[ChannelConfig] | str | None = None
    #: how ``channels add`` / ``onboard`` set an account up (None: by editing the config only)
    setup: ChannelSetup | None = None
