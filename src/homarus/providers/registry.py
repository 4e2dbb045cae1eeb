"""Model refs (``<provider>/<model>``) → a resolved model, its provider adapter and API key.

A built-in provider ``homarus`` (api ``scripted``, model ``echo``) is always present, so the
gateway runs and answers without any key; its reply says how to configure a real model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from homarus.config import json5_text
from homarus.config.models import ModelsConfig, ProviderConfig
from homarus.errors import ConfigError, InvalidRequest
from homarus.messages import ModelInfo
from homarus.providers.base import Provider
from homarus.providers.scripted import ScriptedProvider, steps_from_json

__all__ = ["BUILTIN_MODEL", "AdapterFactory", "ModelRegistry", "ResolvedModel", "env_key_name"]

BUILTIN_MODEL = "homarus/echo"
#: requests a scripted provider built from the config keeps for inspection (each holds a whole prompt)
ECHO_KEPT_REQUESTS = 16
_DEFAULT_URLS = {"openai-completions": "https://api.openai.com/v1", "anthropic-messages": "https://api.anthropic.com"}

AdapterFactory = Callable[[str, ProviderConfig], Provider]


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    info: ModelInfo
    provider: Provider
    api_key: str | None = None

    def __repr__(self) -> str:  # never show the key
        return f"ResolvedModel({self.info.ref!r}, api={self.info.api!r})"


def env_key_name(provider_id: str) -> str:
    """``openai`` → ``OPENAI_API_KEY``; ``my-llm`` → ``MY_LLM_API_KEY``."""
    return re.sub(r"[^A-Z0-9]", "_", provider_id.upper()) + "_API_KEY"


class ModelRegistry:
    def __init__(
        self,
        config: ModelsConfig,
        *,
        env_keys: Mapping[str, str] | None = None,
        factories: Mapping[str, AdapterFactory] | None = None,
        base_dir: Path | None = None,
    ) -> None:
        self.config = config
        self._env = dict(env_keys or {})
        self._factories = dict(factories or {})
        self._base_dir = base_dir
        self._adapters: dict[str, Provider] = {}
        self.overrides: dict[str, Provider] = {}
        self._plugin: dict[str, tuple[Provider, tuple[ModelInfo, ...]]] = {}

    def add_plugin_provider(self, provider_id: str, provider: Provider, models: tuple[ModelInfo, ...]) -> None:
        """A provider registered by a plugin (its models listed, or any model id accepted)."""
        self._plugin[provider_id] = (provider, models)

    def provider_ids(self) -> list[str]:
        return ["homarus", *self.config.providers, *self._plugin]

    def models(self) -> list[ModelInfo]:
        out = [ModelInfo("homarus", "echo", "scripted", context_window=200_000)]
        for pid, pc in self.config.providers.items():
            out.extend(self._info(pid, pc, m.id) for m in pc.models)
        return out

    def resolve(self, ref: str) -> ResolvedModel:
        provider_id, sep, model_id = ref.partition("/")
        if not sep or not provider_id or not model_id:
            raise InvalidRequest(f"invalid model ref {ref!r}: use <provider>/<model>")
        if provider_id == "homarus" and "homarus" not in self.config.providers:
            if model_id != "echo":
                raise InvalidRequest(f"unknown model {ref!r}")
            info = ModelInfo("homarus", "echo", "scripted")
            return ResolvedModel(info, self._adapter("homarus", None))
        plugin = self._plugin.get(provider_id)
        if plugin is not None and provider_id not in self.config.providers:
            provider, listed = plugin
            found = next((m for m in listed if m.id == model_id), None)
            if listed and found is None:
                raise InvalidRequest(f"unknown model {ref!r}")
            api = getattr(provider, "api", "plugin")
            model = found if found is not None else ModelInfo(provider_id, model_id, api)
            return ResolvedModel(model, self.overrides.get(provider_id, provider))
        pc = self.config.providers.get(provider_id)
        if pc is None:
            raise InvalidRequest(f"unknown model provider {provider_id!r} (models.providers has no such entry)")
        if pc.models and all(m.id != model_id for m in pc.models):
            raise InvalidRequest(f"unknown model {ref!r} (not in models.providers.{provider_id}.models)")
        return ResolvedModel(
            self._info(provider_id, pc, model_id), self._adapter(provider_id, pc), self.api_key(provider_id)
        )

    def base_url(self, provider_id: str) -> str:
        pc = self.config.providers[provider_id]
        return (pc.base_url or _DEFAULT_URLS.get(pc.api, "")).rstrip("/")

    def api_key(self, provider_id: str) -> str | None:
        """The configured key, else ``$<PROVIDER>_API_KEY``."""
        pc = self.config.providers[provider_id]
        return pc.api_key.get_secret_value() if pc.api_key else self._env.get(env_key_name(provider_id))

    def _info(self, provider_id: str, pc: ProviderConfig, model_id: str) -> ModelInfo:
        entry = next((m for m in pc.models if m.id == model_id), None)
        base = self.base_url(provider_id)
        headers = tuple(sorted(pc.headers.items()))
        if entry is None:
            return ModelInfo(provider_id, model_id, pc.api, base, headers=headers)
        c = entry.cost
        return ModelInfo(
            provider_id,
            model_id,
            pc.api,
            base,
            entry.context_window,
            entry.max_tokens,
            entry.reasoning,
            (c.input, c.output, c.cache_read, c.cache_write),
            headers,
        )

    def _adapter(self, provider_id: str, pc: ProviderConfig | None) -> Provider:
        if provider_id in self.overrides:
            return self.overrides[provider_id]
        adapter = self._adapters.get(provider_id)
        if adapter is not None:
            return adapter
        if pc is None:
            adapter = ScriptedProvider(then="echo", max_requests=ECHO_KEPT_REQUESTS)
        elif pc.api == "scripted":
            raw = self._script(provider_id, pc)
            try:
                steps = steps_from_json(raw)
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                # a malformed step is a config mistake, not an internal error
                raise ConfigError(f"invalid script: {exc}", key=f"models.providers.{provider_id}.script") from None
            adapter = ScriptedProvider(steps, then="echo", max_requests=ECHO_KEPT_REQUESTS)
        else:
            factory = self._factories.get(pc.api)
            if factory is None:
                raise InvalidRequest(f"no adapter for api {pc.api!r}")
            adapter = factory(provider_id, pc)
        self._adapters[provider_id] = adapter
        return adapter

    def _script(self, provider_id: str, pc: ProviderConfig) -> list[Any]:
        if pc.script is None or isinstance(pc.script, list):
            return pc.script or []
        path = Path(pc.script).expanduser()
        if not path.is_absolute() and self._base_dir is not None:
            path = self._base_dir / path
        try:
            data = json5_text.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot load script: {exc}", key=f"models.providers.{provider_id}.script") from None
        if not isinstance(data, list):
            raise ConfigError("a script must be a list of steps", key=f"models.providers.{provider_id}.script")
        return data
