"""The configuration file's root: one section per top-level key, each validated on its own.

Key names follow the original's `openclaw.json` (camelCase on disk, snake_case in Python) so its
users recognise them. Every model forbids unknown keys: a typo fails fast instead of being
silently ignored.

A section's model lives in its own module and is imported only when needed: a section present in
the file is validated when the file is loaded (a bad key still stops the start, with its path);
a section the file does not mention gets its defaults the first time it is read. So a gateway pays
the cost of building a section's pydantic models only for what its config says or its code reads
(pydantic builds a model's validator when its class is created, about 1 ms per model here).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel, ValidationError
from pydantic_core import InitErrorDetails

if TYPE_CHECKING:
    from homarus.config.agents import AgentsConfig, MessagesConfig
    from homarus.config.automation import HooksConfig
    from homarus.config.browser import BrowserConfig
    from homarus.config.channels import Bindings, ChannelsConfig, CommandsConfig
    from homarus.config.cron import CronConfig
    from homarus.config.gateway import GatewayConfig
    from homarus.config.mcp import McpConfig
    from homarus.config.models import ModelsConfig
    from homarus.config.observability import LoggingConfig
    from homarus.config.plugins import PluginsConfig
    from homarus.config.session import SessionConfig
    from homarus.config.skills import SkillsConfig
    from homarus.config.storage import StorageConfig
    from homarus.config.tools import ToolsConfig
    from homarus.config.ui import UiConfig

__all__ = ["SECTIONS", "HomarusConfig"]

#: top-level key -> "module:Model" of its section
SECTIONS: Final[dict[str, str]] = {
    "gateway": "homarus.config.gateway:GatewayConfig",
    "session": "homarus.config.session:SessionConfig",
    "agents": "homarus.config.agents:AgentsConfig",
    "models": "homarus.config.models:ModelsConfig",
    "messages": "homarus.config.agents:MessagesConfig",
    "tools": "homarus.config.tools:ToolsConfig",
    "plugins": "homarus.config.plugins:PluginsConfig",
    "hooks": "homarus.config.automation:HooksConfig",
    "logging": "homarus.config.observability:LoggingConfig",
    "cron": "homarus.config.cron:CronConfig",
    "skills": "homarus.config.skills:SkillsConfig",
    "channels": "homarus.config.channels:ChannelsConfig",
    "bindings": "homarus.config.channels:Bindings",
    "commands": "homarus.config.channels:CommandsConfig",
    "mcp": "homarus.config.mcp:McpConfig",
    "browser": "homarus.config.browser:BrowserConfig",
    "ui": "homarus.config.ui:UiConfig",
    "storage": "homarus.config.storage:StorageConfig",
}
#: editor hint, ignored by the gateway (JSON Schema URL)
SCHEMA_KEY: Final = "$schema"


def section_model(name: str) -> type[BaseModel]:
    module, _, attr = SECTIONS[name].partition(":")
    model: type[BaseModel] = getattr(importlib.import_module(module), attr)
    return model


class HomarusConfig:
    """The validated config: immutable, sections read as attributes (``config.gateway.port``)."""

    __slots__ = ("_sections", "schema_")

    def __init__(self, schema_: str | None = None, **sections: BaseModel) -> None:
        self.schema_ = schema_
        self._sections: dict[str, BaseModel] = dict(sections)

    @classmethod
    def model_validate(cls, data: Any) -> HomarusConfig:
        """Validate the sections ``data`` has; raises pydantic's ValidationError with full locations."""
        if not isinstance(data, Mapping):
            raise _validation_error(
                [{"type": "model_type", "loc": (), "input": data, "ctx": {"class_name": cls.__name__}}]
            )
        errors: list[InitErrorDetails] = []
        sections: dict[str, BaseModel] = {}
        for key, value in data.items():
            if key == SCHEMA_KEY:
                if value is not None and not isinstance(value, str):
                    errors.append({"type": "string_type", "loc": (key,), "input": value})
            elif key not in SECTIONS:
                errors.append({"type": "extra_forbidden", "loc": (key,), "input": value})
            else:
                try:
                    sections[key] = section_model(key).model_validate(value)
                except ValidationError as exc:
                    errors.extend(_nested(key, exc))
        if errors:
            raise _validation_error(errors)
        schema = data.get(SCHEMA_KEY)
        config = cls(schema if isinstance(schema, str) else None, **sections)
        if "hooks" in sections and "gateway" in sections:
            config._check_hook_token()
        if "bindings" in sections or "channels" in sections:
            config._check_agent_refs()
        return config

    def _check_agent_refs(self) -> None:
        """Bindings and forum topics name agents that exist (a typo would route to nobody)."""
        known = set(self.agents.ids)
        errors: list[InitErrorDetails] = []
        for i, binding in enumerate(self.bindings):
            if binding.agent_id not in known:
                errors.append(_unknown_agent(("bindings", i, "agentId"), binding.agent_id))
        for channel_id, channel in self.channels.configured().items():
            for account_id in channel.account_ids():
                for group_id, group in (channel.account(account_id).get("groups") or {}).items():
                    for topic_id, topic in group.topics.items():
                        if topic.agent_id is not None and topic.agent_id not in known:
                            loc = ("channels", channel_id, "groups", group_id, "topics", topic_id, "agentId")
                            errors.append(_unknown_agent(loc, topic.agent_id))
        if errors:
            raise _validation_error(errors)

    def _check_hook_token(self) -> None:
        hook, gw = self.hooks.token, self.gateway.auth.token
        if hook is not None and gw is not None and hook.get_secret_value() == gw.get_secret_value():
            message = (
                "hooks.token must differ from gateway.auth.token (a leaked webhook secret must not open the gateway)"
            )
            raise _validation_error([{"type": "value_error", "loc": (), "input": None, "ctx": {"error": message}}])

    def present(self, name: str) -> bool:
        """Whether the file has the section ``name`` (reading a section builds its defaults)."""
        return name in self._sections

    def section(self, name: str) -> BaseModel:
        """The section ``name`` (its defaults, built now, when the file does not have it)."""
        found = self._sections.get(name)
        if found is None:
            found = self._sections[name] = section_model(name)()
        return found

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        """Every section dumped like a pydantic model (``by_alias`` gives the file's keys)."""
        key = SCHEMA_KEY if kwargs.get("by_alias") else "schema_"
        out: dict[str, Any] = {}
        if self.schema_ is not None or not kwargs.get("exclude_none"):
            out[key] = self.schema_
        for name in SECTIONS:
            out[name] = self.section(name).model_dump(**kwargs)
        return out

    def model_dump_json(self, **kwargs: Any) -> str:
        return json.dumps(self.model_dump(mode="json", **kwargs), ensure_ascii=False)

    def __repr__(self) -> str:
        # the sections built so far; pydantic's reprs mask secrets
        inner = ", ".join(f"{name}={self._sections[name]!r}" for name in SECTIONS if name in self._sections)
        return f"HomarusConfig({inner})"

    # -- the sections, typed ------------------------------------------------------------------
    @property
    def gateway(self) -> GatewayConfig:
        return self.section("gateway")  # type: ignore[return-value]

    @property
    def session(self) -> SessionConfig:
        return self.section("session")  # type: ignore[return-value]

    @property
    def agents(self) -> AgentsConfig:
        return self.section("agents")  # type: ignore[return-value]

    @property
    def models(self) -> ModelsConfig:
        return self.section("models")  # type: ignore[return-value]

    @property
    def messages(self) -> MessagesConfig:
        return self.section("messages")  # type: ignore[return-value]

    @property
    def tools(self) -> ToolsConfig:
        return self.section("tools")  # type: ignore[return-value]

    @property
    def plugins(self) -> PluginsConfig:
        return self.section("plugins")  # type: ignore[return-value]

    @property
    def hooks(self) -> HooksConfig:
        return self.section("hooks")  # type: ignore[return-value]

    @property
    def logging(self) -> LoggingConfig:
        return self.section("logging")  # type: ignore[return-value]

    @property
    def cron(self) -> CronConfig:
        return self.section("cron")  # type: ignore[return-value]

    @property
    def skills(self) -> SkillsConfig:
        return self.section("skills")  # type: ignore[return-value]

    @property
    def channels(self) -> ChannelsConfig:
        return self.section("channels")  # type: ignore[return-value]

    @property
    def bindings(self) -> Bindings:
        return self.section("bindings")  # type: ignore[return-value]

    @property
    def commands(self) -> CommandsConfig:
        return self.section("commands")  # type: ignore[return-value]

    @property
    def mcp(self) -> McpConfig:
        return self.section("mcp")  # type: ignore[return-value]

    @property
    def browser(self) -> BrowserConfig:
        return self.section("browser")  # type: ignore[return-value]

    @property
    def ui(self) -> UiConfig:
        return self.section("ui")  # type: ignore[return-value]

    @property
    def storage(self) -> StorageConfig:
        return self.section("storage")  # type: ignore[return-value]


def _unknown_agent(loc: tuple[str | int, ...], agent_id: str) -> InitErrorDetails:
    message = f"unknown agent id {agent_id!r} (not in agents.list)"
    return {"type": "value_error", "loc": loc, "input": agent_id, "ctx": {"error": message}}


def _nested(section: str, exc: ValidationError) -> list[InitErrorDetails]:
    """A section's errors, located from the root of the file."""
    out: list[InitErrorDetails] = []
    for err in exc.errors():
        detail: InitErrorDetails = {"type": err["type"], "loc": (section, *err["loc"]), "input": err["input"]}
        if "ctx" in err:
            detail["ctx"] = err["ctx"]
        out.append(detail)
    return out


def _validation_error(errors: list[InitErrorDetails]) -> ValidationError:
    return ValidationError.from_exception_data(HomarusConfig.__name__, errors)
