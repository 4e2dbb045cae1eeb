"""The ``agents`` and ``messages`` sections: agent list, defaults for runs, queueing of messages."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, field_validator, model_validator

from homarus.config.base import DEFAULTS, ConfigModel, lazy_section
from homarus.config.heartbeat import HeartbeatConfig
from homarus.patterns import Pattern

if TYPE_CHECKING:
    from homarus.config.memory import MemorySearchConfig
    from homarus.config.sandbox import SandboxConfig
    from homarus.config.tools import AgentToolsConfig

__all__ = [
    "DEFAULT_AGENT_ID",
    "AgentEntry",
    "AgentsConfig",
    "AgentsDefaults",
    "CompactionConfig",
    "InboundConfig",
    "MessagesConfig",
    "ModelChoice",
    "QueueConfig",
    "RetryConfig",
]

DEFAULT_AGENT_ID = "main"
_AGENT_ID_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
_MODEL_REF = r"^[A-Za-z0-9._-]+/\S+$"
_AGENT_TOOLS = "homarus.config.tools:AgentToolsConfig"
_SANDBOX = "homarus.config.sandbox:SandboxConfig"
_MEMORY_SEARCH = "homarus.config.memory:MemorySearchConfig"


class ModelChoice(ConfigModel):
    """``primary`` model ref (``<provider>/<model>``) and the ``fallbacks`` tried in order."""

    primary: Annotated[str, Pattern(_MODEL_REF)] | None = None
    fallbacks: tuple[str, ...] = ()

    @field_validator("fallbacks")
    @classmethod
    def _refs(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for ref in v:
            if "/" not in ref.strip("/"):
                raise ValueError(f"model ref {ref!r} must look like <provider>/<model>")
        return v

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, value: object) -> object:
        return {"primary": value} if isinstance(value, str) else value


class RetryConfig(ConfigModel):
    """Retries of transient provider failures: ``max_retries`` tries, delays base·2^n."""

    max_retries: int = Field(3, ge=0, le=10)
    base_delay_ms: int = Field(2000, ge=0, le=60_000)
    max_delay_ms: int = Field(60_000, ge=0, le=600_000)


class MemoryFlushConfig(ConfigModel):
    enabled: bool = True
    soft_threshold_tokens: int = Field(4000, ge=0)


class CompactionConfig(ConfigModel):
    enabled: bool = True
    #: tokens kept free below the context window; compaction starts above window - reserve
    reserve_tokens_floor: int = Field(20_000, ge=1000)
    keep_recent_tokens: int = Field(20_000, ge=500)
    max_overflow_retries: int = Field(3, ge=0, le=10)
    memory_flush: MemoryFlushConfig = Field(default_factory=MemoryFlushConfig)


class AgentEntry(ConfigModel):
    id: Annotated[str, Pattern(_AGENT_ID_PATTERN)]
    default: bool = False
    name: str | None = None
    workspace: str | None = None
    model: ModelChoice | None = None
    #: this agent's own tool policy layer (narrows the global one)
    tools_: lazy_section(_AGENT_TOOLS) = Field(None, alias="tools")  # type: ignore[valid-type]
    skills: tuple[str, ...] | None = None  # skill names this agent may use (None: all)

    @property
    def tools(self) -> AgentToolsConfig | None:
        return self._lazy("tools_", _AGENT_TOOLS)  # type: ignore[no-any-return]


class SubagentDefaults(ConfigModel):
    max_concurrent: int = Field(8, ge=1, le=256)


class AgentsDefaults(ConfigModel):
    workspace: str | None = None
    model: ModelChoice = Field(default_factory=ModelChoice)
    #: a run is aborted after this long (the original's default: 600 s)
    timeout_seconds: int = Field(600, ge=1, le=86_400)
    retry: RetryConfig = Field(default_factory=RetryConfig)
    compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    bootstrap_max_chars: int = Field(20_000, ge=100)
    bootstrap_total_max_chars: int = Field(60_000, ge=100)
    user_timezone: str | None = None
    #: confinement of exec: off | non-main | all (bubblewrap on Linux)
    sandbox_: lazy_section(_SANDBOX) = Field(DEFAULTS, alias="sandbox")  # type: ignore[valid-type]
    #: "parallel" runs a turn's tool calls concurrently (results still in call order)
    tool_execution: Literal["parallel", "sequential"] = "parallel"
    #: global `main` lane: agent runs in parallel across sessions
    max_concurrent: int = Field(4, ge=1, le=256)
    subagents: SubagentDefaults = Field(default_factory=SubagentDefaults)
    heartbeat: HeartbeatConfig = Field(default_factory=HeartbeatConfig)
    memory_search_: lazy_section(_MEMORY_SEARCH) = Field(DEFAULTS, alias="memorySearch")  # type: ignore[valid-type]

    @property
    def sandbox(self) -> SandboxConfig:
        return self._lazy("sandbox_", _SANDBOX)  # type: ignore[no-any-return]

    @property
    def sandbox_mode(self) -> str:
        """``sandbox.mode``, read without building the section when the file does not set it (off)."""
        return "off" if self.sandbox_ is DEFAULTS else self.sandbox.mode

    @property
    def memory_search(self) -> MemorySearchConfig:
        return self._lazy("memory_search_", _MEMORY_SEARCH)  # type: ignore[no-any-return]

    @property
    def memory_paths(self) -> tuple[str, ...] | None:
        """``memorySearch.extraPaths``, or None when memory search is off; read without building the
        section when the file does not set it (its defaults: on, no extra paths). Every run asks."""
        if self.memory_search_ is DEFAULTS:
            return ()
        cfg = self.memory_search
        return cfg.extra_paths if cfg.enabled else None


class AgentsConfig(ConfigModel):
    defaults: AgentsDefaults = Field(default_factory=AgentsDefaults)
    list: tuple[AgentEntry, ...] = ()

    @field_validator("list")
    @classmethod
    def _unique_ids(cls, v: tuple[AgentEntry, ...]) -> tuple[AgentEntry, ...]:
        seen: set[str] = set()
        for entry in v:
            if entry.id in seen:
                raise ValueError(f"duplicate agent id {entry.id!r}")
            seen.add(entry.id)
        if sum(1 for e in v if e.default) > 1:
            raise ValueError("more than one agent is marked default")
        return v

    @property
    def default_id(self) -> str:
        for entry in self.list:
            if entry.default:
                return entry.id
        return self.list[0].id if self.list else DEFAULT_AGENT_ID

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(e.id for e in self.list) or (DEFAULT_AGENT_ID,)

    def workspace_for(self, agent_id: str, state_dir: Path) -> Path:
        """The agent's workspace: its own ``workspace``, the default one, else under ``state_dir``."""
        entry = next((a for a in self.list if a.id == agent_id), None)
        raw = (entry.workspace if entry and entry.workspace else None) or self.defaults.workspace
        if raw:
            return Path(raw).expanduser()
        return state_dir / ("workspace" if agent_id == self.default_id else f"workspace-{agent_id}")


class QueueConfig(ConfigModel):
    """What happens to a message that arrives while its session is running."""

    mode: Literal["steer", "followup", "collect", "interrupt"] = "steer"
    debounce_ms: int = Field(500, ge=0, le=60_000)
    cap: int = Field(20, ge=1, le=1000)
    drop: Literal["summarize", "old", "new"] = "summarize"


class InboundConfig(ConfigModel):
    """Chat messages from one sender that arrive close together become one agent turn."""

    #: the quiet window that ends a burst (0: every message is its own turn)
    debounce_ms: int = Field(300, ge=0, le=60_000)
    #: per channel id, overriding ``debounceMs``
    by_channel: dict[str, int] = Field(default_factory=dict, max_length=100)

    def debounce_for(self, channel: str) -> int:
        value = self.by_channel.get(channel, self.debounce_ms)
        return max(0, min(60_000, int(value)))


class MessagesConfig(ConfigModel):
    queue: QueueConfig = Field(default_factory=QueueConfig)
    inbound: InboundConfig = Field(default_factory=InboundConfig)
