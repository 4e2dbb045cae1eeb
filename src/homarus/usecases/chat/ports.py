"""What the parts of the chat pipeline use of each other and of their host, as protocols: the
dispatcher, a chat run and the media fetch see the service (:class:`ChatService`) and the host
(:class:`ChatHost`) through these, so no part of the pipeline imports another's module for a type."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from homarus.usecases.chat.commands import CommandsHost
from homarus.usecases.ports import Spawner
from homarus.usecases.runs import RunHost

if TYPE_CHECKING:
    from pathlib import Path

    from homarus.channels.access import Decision
    from homarus.channels.inbox import InboxRow
    from homarus.channels.manager import ChannelManager
    from homarus.channels.model import Target
    from homarus.channels.routing import Route
    from homarus.config.paths import StatePaths
    from homarus.plugins.runner import HookRunner
    from homarus.security.ssrf import GuardedClient
    from homarus.usecases.chat.commands import ChannelCommands
    from homarus.usecases.ports import Publisher

__all__ = ["ChatHost", "ChatRunHost", "ChatService", "Replier"]


class Replier(Protocol):
    """The channels and a way to answer a chat without a run."""

    manager: ChannelManager

    async def reply(self, target: Target, text: str, *, key: str, markdown: bool = True) -> None: ...


class ChatService(Replier, Protocol):
    """The chat pipeline's service (``service.ChannelService``) as its parts see it."""

    commands: ChannelCommands
    #: run id → its origin, while it runs
    active_runs: dict[str, dict[str, Any]]

    async def runs_start(self, batch: list[InboxRow], decision: Decision, route: Route) -> None: ...


class ChatRunHost(RunHost, Protocol):
    """What a chat run uses: the run services, the channels (typing, the outbox), the send hooks."""

    @property
    def channels(self) -> ChatService: ...

    hooks: HookRunner


class ChatHost(ChatRunHost, CommandsHost, Spawner, Protocol):
    """What the chat pipeline uses, from a committed message to its reply: the run services, the
    owner commands' services, the plugins (channels, hooks), the guarded egress (attachments), the
    agent's workspace (where they land) and the event bus (pairing requests)."""

    paths: StatePaths
    web_client: GuardedClient

    @property
    def bus(self) -> Publisher: ...
    def workspace_dir(self, agent_id: str) -> Path: ...
