"""What ``homarus onboard`` knows about providers, and the config text it writes.

The presets carry each provider's wire API, base URL and key variable; the rendered config is
JSON5 with a comment before each section, so the file explains itself when opened later.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

__all__ = ["PRESETS", "Preset", "merged_config", "render_config"]


class Preset(NamedTuple):  # a NamedTuple, not a dataclass: `homarus --help` imports this module
    id: str
    label: str
    api: str
    base_url: str
    #: the key's variable; None: a local server that takes no key
    key_env: str | None
    local: bool = False


PRESETS: dict[str, Preset] = {
    p.id: p
    for p in (
        Preset("openai", "OpenAI", "openai-completions", "https://api.openai.com/v1", "OPENAI_API_KEY"),
        Preset("anthropic", "Anthropic", "anthropic-messages", "https://api.anthropic.com", "ANTHROPIC_API_KEY"),
        Preset("openrouter", "OpenRouter", "openai-completions", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
        Preset("ollama", "Ollama (local)", "openai-completions", "http://127.0.0.1:11434/v1", None, local=True),
        Preset("vllm", "vLLM (local)", "openai-completions", "http://127.0.0.1:8000/v1", None, local=True),
        Preset(
            "llamacpp", "llama.cpp server (local)", "openai-completions", "http://127.0.0.1:8080/v1", None, local=True
        ),
        Preset("custom", "another OpenAI-compatible URL", "openai-completions", "", "CUSTOM_API_KEY"),
    )
}

_NOTES = {
    "models": "Model providers: wire API, endpoint, key (a ${NAME} from the environment or $STATE/secrets.env).",
    "agents": "The agents: their default model (<provider>/<model>), fallbacks and workspace.",
    "channels": "Chat channels: who may talk to the assistant (pairing by default) and how.",
    "gateway": "The gateway: port, bind address and auth.",
}


def merged_config(
    existing: dict[str, Any] | None,
    *,
    provider_id: str,
    provider: dict[str, Any],
    model_ref: str,
    channel_patch: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``existing`` with the provider set, the default model chosen and a channel added."""
    data: dict[str, Any] = json.loads(json.dumps(existing or {}))
    data.setdefault("models", {}).setdefault("providers", {})[provider_id] = provider
    model = data.setdefault("agents", {}).setdefault("defaults", {}).get("model")
    fallbacks = model.get("fallbacks", []) if isinstance(model, dict) else []
    data["agents"]["defaults"]["model"] = {"primary": model_ref, **({"fallbacks": fallbacks} if fallbacks else {})}
    for name, body in (channel_patch or {}).get("channels", {}).items():
        current = data.setdefault("channels", {}).get(name)
        data["channels"][name] = {**current, **body} if isinstance(current, dict) else body
    return data


def render_config(data: dict[str, Any]) -> str:
    """JSON5 text: a header, then each top-level section behind a comment that says what it is."""
    lines = [
        "// Homarus config, written by `homarus onboard`. JSON5: comments and trailing commas are fine.",
        "// Every write keeps the previous file (homarus.json.bak.1 … .5); `homarus config restore` brings one back.",
        "{",
    ]
    keys = list(data)
    for n, key in enumerate(keys):
        note = _NOTES.get(key)
        if note:
            lines.append(f"  // {note}")
        body = json.dumps(data[key], indent=2, ensure_ascii=False).replace("\n", "\n  ")
        lines.append(f"  {json.dumps(key)}: {body}{',' if n < len(keys) - 1 else ''}")
    lines.append("}")
    return "\n".join(lines) + "\n"
