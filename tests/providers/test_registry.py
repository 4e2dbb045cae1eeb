"""ModelRegistry.resolve: the builtin echo model, lookups, keys, scripts, adapter caching and factories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from homarus.config.models import ModelsConfig, ProviderConfig
from homarus.errors import ConfigError, InvalidRequest
from homarus.messages import Context, Done, StreamOptions, UserMessage
from homarus.providers.adapters import default_factories
from homarus.providers.anthropic_messages import AnthropicMessagesProvider
from homarus.providers.base import Provider
from homarus.providers.openai_completions import OpenAICompletionsProvider
from homarus.providers.registry import BUILTIN_MODEL, ModelRegistry, env_key_name
from homarus.providers.scripted import ScriptedProvider


def models(providers: dict[str, Any]) -> ModelsConfig:
    return ModelsConfig.model_validate({"providers": providers})


def test_builtin_echo_model() -> None:
    resolved = ModelRegistry(ModelsConfig()).resolve(BUILTIN_MODEL)
    assert resolved.info.ref == "homarus/echo" and resolved.info.api == "scripted"
    assert isinstance(resolved.provider, ScriptedProvider) and resolved.api_key is None


async def test_builtin_echo_explains_how_to_configure() -> None:
    resolved = ModelRegistry(ModelsConfig()).resolve("homarus/echo")
    events = [
        e async for e in resolved.provider.stream(resolved.info, Context("", [UserMessage("hey")]), StreamOptions())
    ]
    done = events[-1]
    assert isinstance(done, Done) and "No model is configured yet" in done.message.text
    assert done.message.text.endswith("You said: hey")


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("nomodel", "invalid model ref 'nomodel': use <provider>/<model>"),
        ("/x", "invalid model ref '/x'"),
        ("x/", "invalid model ref 'x/'"),
        ("homarus/other", "unknown model 'homarus/other'"),
        ("nope/m", "unknown model provider 'nope' (models.providers has no such entry)"),
        ("openai/gpt-9", "unknown model 'openai/gpt-9' (not in models.providers.openai.models)"),
    ],
)
def test_resolve_errors(ref: str, message: str) -> None:
    registry = ModelRegistry(models({"openai": {"models": [{"id": "gpt-4o"}]}}))
    with pytest.raises(InvalidRequest) as info:
        registry.resolve(ref)
    assert info.value.message.startswith(message)


def test_any_model_when_the_provider_lists_none() -> None:
    registry = ModelRegistry(models({"local": {"baseUrl": "http://127.0.0.1:1/v1/"}}), factories=default_factories())
    info = registry.resolve("local/qwen3:8b").info
    assert (info.provider, info.id, info.api, info.base_url) == (
        "local",
        "qwen3:8b",
        "openai-completions",
        "http://127.0.0.1:1/v1",
    )
    assert info.context_window == 200_000 and info.cost == (0.0, 0.0, 0.0, 0.0)


def test_model_entry_fields_and_default_urls() -> None:
    cfg = models(
        {
            "anthropic": {
                "api": "anthropic-messages",
                "headers": {"b": "2", "a": "1"},
                "models": [
                    {
                        "id": "claude",
                        "contextWindow": 100_000,
                        "maxTokens": 4096,
                        "reasoning": True,
                        "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
                    }
                ],
            },
            "openai": {"models": [{"id": "gpt"}]},
        }
    )
    registry = ModelRegistry(cfg, factories=default_factories())
    info = registry.resolve("anthropic/claude").info
    assert info.base_url == "https://api.anthropic.com" and info.context_window == 100_000
    assert info.max_tokens == 4096 and info.reasoning and info.cost == (3.0, 15.0, 0.3, 3.75)
    assert info.headers == (("a", "1"), ("b", "2"))
    assert registry.resolve("openai/gpt").info.base_url == "https://api.openai.com/v1"
    assert [m.ref for m in registry.models()] == ["homarus/echo", "anthropic/claude", "openai/gpt"]
    assert registry.provider_ids() == ["homarus", "anthropic", "openai"]


def test_api_key_from_config_then_env() -> None:
    cfg = models({"openai": {"apiKey": "sk-config"}, "my-llm": {}, "other": {}})
    registry = ModelRegistry(
        cfg, env_keys={"OPENAI_API_KEY": "sk-env-ignored", "MY_LLM_API_KEY": "sk-env"}, factories=default_factories()
    )
    assert registry.resolve("openai/m").api_key == "sk-config"
    assert registry.resolve("my-llm/m").api_key == "sk-env"
    assert registry.resolve("other/m").api_key is None


def test_env_key_name() -> None:
    assert env_key_name("openai") == "OPENAI_API_KEY"
    assert env_key_name("my-llm") == "MY_LLM_API_KEY"
    assert env_key_name("z.ai") == "Z_AI_API_KEY"


def test_resolved_model_repr_hides_the_key() -> None:
    registry = ModelRegistry(models({"openai": {"apiKey": "sk-very-secret"}}), factories=default_factories())
    resolved = registry.resolve("openai/gpt")
    assert "sk-very-secret" not in repr(resolved) and "sk-very-secret" not in str(resolved)
    assert repr(resolved) == "ResolvedModel('openai/gpt', api='openai-completions')"


async def test_script_from_a_file_relative_to_base_dir(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "demo.json5").write_text("[{reply: 'scripted hello'}, // a comment\n]", encoding="utf-8")
    cfg = models({"demo": {"api": "scripted", "script": "scripts/demo.json5"}})
    resolved = ModelRegistry(cfg, base_dir=tmp_path).resolve("demo/any")
    events = [
        e async for e in resolved.provider.stream(resolved.info, Context("", [UserMessage("x")]), StreamOptions())
    ]
    assert isinstance(events[-1], Done) and events[-1].message.text == "scripted hello"
    # the script is then exhausted: the provider echoes
    again = [e async for e in resolved.provider.stream(resolved.info, Context("", [UserMessage("x")]), StreamOptions())]
    assert isinstance(again[-1], Done) and again[-1].message.text == "x"


def test_inline_script() -> None:
    provider = (
        ModelRegistry(models({"demo": {"api": "scripted", "script": [{"reply": "a"}]}})).resolve("demo/m").provider
    )
    assert isinstance(provider, ScriptedProvider) and len(provider.steps) == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot load script"),
        ("{not: 'a list'}", "a script must be a list of steps"),
        ("[{bad json", "cannot load script"),
        (json.dumps([{"nothing": 1}]), "invalid script: script step 0: expected one of"),
        (json.dumps([{"toolCalls": [{"arguments": {}}]}]), "invalid script"),
    ],
)
def test_bad_scripts_are_config_errors(tmp_path: Path, content: str | None, message: str) -> None:
    if content is not None:
        (tmp_path / "s.json").write_text(content, encoding="utf-8")
    cfg = models({"demo": {"api": "scripted", "script": "s.json"}})
    with pytest.raises(ConfigError) as info:
        ModelRegistry(cfg, base_dir=tmp_path).resolve("demo/m")
    assert "models.providers.demo.script" in str(info.value) and message in str(info.value)


def test_adapters_are_cached_per_provider() -> None:
    calls: list[str] = []

    def factory(provider_id: str, config: ProviderConfig) -> Provider:
        calls.append(provider_id)
        return ScriptedProvider()

    cfg = models({"a": {}, "b": {}})
    registry = ModelRegistry(cfg, factories={"openai-completions": factory})
    first, again, other = registry.resolve("a/x").provider, registry.resolve("a/y").provider, registry.resolve("b/x")
    assert first is again and other.provider is not first and calls == ["a", "b"]
    assert registry.resolve("homarus/echo").provider is registry.resolve("homarus/echo").provider


def test_factories_receive_the_provider_config_and_a_missing_factory_is_an_error() -> None:
    seen: list[tuple[str, ProviderConfig]] = []

    def factory(provider_id: str, config: ProviderConfig) -> Provider:
        seen.append((provider_id, config))
        return ScriptedProvider()

    cfg = models({"ant": {"api": "anthropic-messages"}, "oai": {}})
    registry = ModelRegistry(cfg, factories={"anthropic-messages": factory})
    registry.resolve("ant/claude")
    assert seen == [("ant", cfg.providers["ant"])]
    with pytest.raises(InvalidRequest, match="no adapter for api 'openai-completions'"):
        registry.resolve("oai/gpt")


def test_overrides_win() -> None:
    registry = ModelRegistry(models({"a": {}}), factories=default_factories())
    fake = ScriptedProvider()
    registry.overrides["a"] = fake
    assert registry.resolve("a/m").provider is fake


async def test_default_factories_build_http_adapters_sharing_a_client() -> None:
    async with httpx.AsyncClient() as client:
        factories = default_factories(client)
        assert set(factories) == {"openai-completions", "anthropic-messages"}
        cfg = ProviderConfig(api="anthropic-messages")
        oai = factories["openai-completions"]("o", ProviderConfig())
        ant = factories["anthropic-messages"]("a", cfg)
        assert isinstance(oai, OpenAICompletionsProvider) and oai.api == "openai-completions"
        assert isinstance(ant, AnthropicMessagesProvider) and ant.api == "anthropic-messages"
        assert oai._http() is client and ant._http() is client
        await oai.aclose()  # a shared client belongs to the caller: not closed by the adapter
        assert not client.is_closed
