"""What a transcript line may contain (validated before it is written, never after)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from homarus.patterns import Pattern

__all__ = ["CURRENT_VERSION", "ENTRY_ADAPTER", "TranscriptEntry"]

CURRENT_VERSION = 3


class _Open(BaseModel):
    # Forward compatible: fields we do not model are kept, the ones we do are checked.
    model_config = ConfigDict(extra="allow")


class TextBlock(_Open):
    type: Literal["text"]
    text: str


class ImageBlock(_Open):
    type: Literal["image"]
    data: str
    mime_type: str = Field(alias="mimeType")


class ThinkingBlock(_Open):
    type: Literal["thinking"]
    thinking: str


class ToolCallBlock(_Open):
    type: Literal["toolCall"]
    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    arguments: dict[str, Any]


UserBlock = Annotated[TextBlock | ImageBlock, Field(discriminator="type")]
AssistantBlock = Annotated[TextBlock | ThinkingBlock | ToolCallBlock, Field(discriminator="type")]


class UserMessage(_Open):
    role: Literal["user"]
    content: str | list[UserBlock]
    timestamp: int | None = None


class AssistantMessage(_Open):
    role: Literal["assistant"]
    content: list[AssistantBlock]
    stop_reason: Literal["stop", "length", "toolUse", "error", "aborted"] | None = Field(
        default=None, alias="stopReason"
    )
    timestamp: int | None = None


class ToolResultMessage(_Open):
    role: Literal["toolResult"]
    tool_call_id: str = Field(alias="toolCallId", min_length=1)
    tool_name: str = Field(alias="toolName", min_length=1)
    content: list[UserBlock]
    is_error: bool = Field(alias="isError")
    timestamp: int | None = None


AgentMessage = Annotated[UserMessage | AssistantMessage | ToolResultMessage, Field(discriminator="role")]


class _Entry(_Open):
    id: Annotated[str, Pattern(r"^[0-9a-f]{8}$")] | None = None
    parent_id: str | None = Field(default=None, alias="parentId")
    timestamp: str | None = None


class MessageEntry(_Entry):
    type: Literal["message"]
    message: AgentMessage


class CompactionEntry(_Entry):
    type: Literal["compaction"]
    summary: str
    first_kept_entry_id: str = Field(alias="firstKeptEntryId")
    tokens_before: int = Field(alias="tokensBefore", ge=0)


class ModelChangeEntry(_Entry):
    type: Literal["model_change"]
    provider: str
    model_id: str = Field(alias="modelId")


class LabelEntry(_Entry):
    type: Literal["label"]
    label: str | None
    target_id: str | None = Field(default=None, alias="targetId")


class CustomEntry(_Entry):
    type: Literal["custom"]
    custom_type: str = Field(alias="customType", min_length=1)
    data: Any = None


class OtherEntry(_Entry):
    type: Literal["custom_message", "thinking_level_change", "session_info", "branch_summary"]


TranscriptEntry = Annotated[
    MessageEntry | CompactionEntry | ModelChangeEntry | LabelEntry | CustomEntry | OtherEntry,
    Field(discriminator="type"),
]
ENTRY_ADAPTER: TypeAdapter[Any] = TypeAdapter(TranscriptEntry)
