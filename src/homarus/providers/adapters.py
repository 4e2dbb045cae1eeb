"""Adapter factories for the HTTP wire APIs, keyed by ``ProviderConfig.api``, for :class:`ModelRegistry`.

Kept apart from the registry so that importing the registry (and the CLI) never pulls in httpx.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from homarus.config.models import ModelsConfig, ProviderConfig
from homarus.providers.base import Provider
from homarus.providers.registry import AdapterFactory, ModelRegistry

if TYPE_CHECKING:
    import httpx

    from homarus.config.paths import StatePaths

__all__ = ["adapter_modules", "configured_registry", "default_factories"]

#: the modules each wire API's adapter runs on (its own, the event-stream reader, the connection pool)
_ADAPTER_MODULES = {
    "openai-completions": ("homarus.providers.openai_completions", "homarus.providers.sse", "homarus.http_pool"),
    "anthropic-messages": ("homarus.providers.anthropic_messages", "homarus.providers.sse", "homarus.http_pool"),
}


def adapter_modules(models: ModelsConfig) -> list[str]:
    """What the configured providers' adapters import on their first request (for a warm-up)."""
    apis = {provider.api for provider in models.providers.values()}
    return list(dict.fromkeys(name for api in sorted(apis) for name in _ADAPTER_MODULES.get(api, ())))


def configured_registry(models: ModelsConfig, paths: StatePaths) -> ModelRegistry:
    """The registry a gateway with these state paths uses: the HTTP adapters, keys from the config,
    the environment and the state dir's secrets file, scripts relative to the config file."""
    from homarus.config.loader import provider_env_keys
    from homarus.config.secrets import merged_env

    env_keys = provider_env_keys(merged_env(paths.state_dir))
    return ModelRegistry(models, env_keys=env_keys, factories=default_factories(), base_dir=paths.config_path.parent)


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
