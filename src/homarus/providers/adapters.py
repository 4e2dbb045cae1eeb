"""Adapter factories for the HTTP wire APIs, keyed by ``ProviderConfig.api``, for :class:`ModelRegistry`.

Kept apart from the registry so that importing the registry (and the CLI) never pulls in httpx.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from homarus.config.models import ProviderConfig
from homarus.providers.base import Provider
from homarus.providers.registry import AdapterFactory

if TYPE_CHECKING:
    import httpx

__all__ = ["default_factories"]


def default_factories(client: httpx.AsyncClient | None = None) -> dict[str, AdapterFactory]:
    """Factories for ``openai-completions`` and ``anthropic-messages``.

    With ``client`` every adapter shares it (and its connection pool; the caller closes it); without,
    each adapter opens its own client on first use and closes it in ``aclose()``.
    """

    def openai(provider_id: str, config: ProviderConfig) -> Provider:
        from homarus.providers.openai_completions import OpenAICompletionsProvider

        return OpenAICompletionsProvider(provider_id, config, client=client)

    def anthropic(provider_id: str, config: ProviderConfig) -> Provider:
        from homarus.providers.anthropic_messages import AnthropicMessagesProvider

        return AnthropicMessagesProvider(provider_id, config, client=client)

    return {"openai-completions": openai, "anthropic-messages": anthropic}
