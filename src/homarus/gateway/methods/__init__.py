"""Core gateway methods, one module per family; each exposes ``register(gateway)``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from homarus.gateway.methods import (
    agent,
    chat,
    config,
    cron,
    health,
    heartbeat,
    logs,
    memory,
    plugins,
    sessions,
    skills,
    status,
    tools,
)

if TYPE_CHECKING:
    from homarus.gateway.app import Gateway

__all__ = ["register_core_methods"]


def register_core_methods(gateway: Gateway) -> None:
    for family in (
        health,
        status,
        config,
        sessions,
        agent,
        chat,
        plugins,
        tools,
        heartbeat,
        logs,
        cron,
        skills,
        memory,
    ):
        family.register(gateway)
