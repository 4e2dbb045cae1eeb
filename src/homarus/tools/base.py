"""A tool is a typed async function the model can call.

``tool_from_function`` derives the JSON Schema sent to the model from the function's signature
(via pydantic) and validates the model's arguments against it before the function runs; the
function receives a :class:`ToolContext` and returns text, a :class:`ToolResult` or raises.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from homarus.errors import InvalidRequest, RegistrationError
from homarus.messages import ImageContent, TextContent, ToolSpec
from homarus.tools.services import ToolServices

if TYPE_CHECKING:
    from homarus.tools.sandbox_sessions import SandboxView

__all__ = [
    "Tool",
    "ToolContext",
    "ToolRegistry",
    "ToolResult",
    "ToolServices",
    "tool_from_function",
    "tool_schema_tool",
]


@dataclass(slots=True)
class ToolContext:
    """What a running tool may know about its call."""

    session_key: str
    agent_id: str
    run_id: str
    tool_call_id: str
    workspace: Path
    abort: asyncio.Event = field(default_factory=asyncio.Event)
    #: what the gateway lends to tools (session manager, approvals, ...)
    services: ToolServices = field(default_factory=ToolServices)
    #: send a partial result (streamed to clients as a tool `update` event)
    on_update: Callable[[Any], None] | None = None
    #: set when the session is sandboxed: ``workspace`` is then the sandbox's ``/workspace``
    sandbox: SandboxView | None = None
    #: False when the run was sent by someone other than an owner: tools that reach beyond the
    #: caller's own session (other sessions' transcripts) refuse or narrow
    trusted: bool = True


@dataclass(slots=True)
class ToolResult:
    content: list[TextContent | ImageContent]
    #: for clients and logs only; never sent to the model
    details: Any = None
    is_error: bool = False

    @classmethod
    def text(cls, text: str, *, details: Any = None, is_error: bool = False) -> ToolResult:
        return cls([TextContent(text)], details, is_error)


Execute = Callable[[ToolContext, dict[str, Any]], Awaitable[ToolResult]]


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    #: the JSON Schema of the arguments, or a function that builds it once when first asked (a
    #: deferred tool's is rarely needed, and deriving one costs milliseconds on the first turn);
    #: read it through :attr:`parameters`
    schema: dict[str, Any] | Callable[[], dict[str, Any]]
    execute: Execute
    label: str = ""
    #: owner-only / dangerous tools are marked so policies can deny them by default
    tags: frozenset[str] = frozenset()
    #: a few words for the system prompt's tool list; the full description goes with the schema
    summary: str = ""
    #: a large or rarely needed tool: by default the model is given its name and summary, and gets
    #: its parameters on demand (``tool_schema``); every turn pays for the rest in full
    deferred: bool = False

    @property
    def parameters(self) -> dict[str, Any]:
        return self.schema() if callable(self.schema) else self.schema

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters, self.summary)


class ToolRegistry:
    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

    def register(self, tool: Tool) -> Tool:
        if tool.name in self._tools:
            raise RegistrationError(f"tool {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        return tool

    def unregister(self, name: str) -> Tool | None:
        """Remove a tool (a plugin whose registration failed is rolled back); None if absent."""
        return self._tools.pop(name, None)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @staticmethod
    def from_function(fn: Callable[..., Awaitable[Any]], *, name: str | None = None) -> Tool:
        """:func:`tool_from_function`, reachable through a registry by layers below this one (plugins)."""
        return tool_from_function(fn, name=name)

    def names(self) -> list[str]:
        return sorted(self._tools)

    def tools(self) -> list[Tool]:
        return [self._tools[n] for n in sorted(self._tools)]


def tool_from_function(
    fn: Callable[..., Awaitable[Any]],
    *,
    name: str | None = None,
    description: str | None = None,
    tags: frozenset[str] = frozenset(),
    summary: str = "",
    deferred: bool = False,
    parameters: dict[str, Any] | None = None,
) -> Tool:
    """Build a Tool from ``async def fn(ctx: ToolContext, *, a: int, b: str = "x") -> str | ToolResult``.

    ``parameters``: the schema the signature gives, written out, for a tool offered on every turn
    whose schema would otherwise be derived on the first (milliseconds of pydantic); a test must
    compare the two (``tests/tools/test_builtin.py``). The arguments are validated against the
    signature either way."""
    sig = inspect.signature(fn)
    names = list(sig.parameters)[1:]  # the first parameter is the context

    @functools.cache
    def args_model() -> tuple[type[BaseModel], dict[str, Any]]:
        hints = get_type_hints(fn, include_extras=True)
        fields: dict[str, Any] = {}
        for pname in names:
            param = sig.parameters[pname]
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[pname] = (hints.get(pname, Any), default)
        model: type[BaseModel] = create_model(f"{fn.__name__}_args", __config__=ConfigDict(extra="forbid"), **fields)
        return model, _compact_schema(model.model_json_schema())

    def schema() -> dict[str, Any]:
        return args_model()[1]

    doc = inspect.getdoc(fn) or ""
    text = description or doc.split("\n\n")[0].replace("\n", " ")

    async def execute(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        try:
            parsed = args_model()[0].model_validate(args)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
            )
            raise InvalidRequest(f"invalid arguments for {tool_name}: {problems}") from None
        result = await fn(ctx, **{k: getattr(parsed, k) for k in names})
        return result if isinstance(result, ToolResult) else ToolResult.text(str(result))

    tool_name = name or fn.__name__
    label = tool_name.replace("_", " ")
    # a deferred tool's schema is derived when first asked for (``tool_schema``, a call, a client);
    # every other one at once, so that a signature pydantic cannot read fails where it is declared
    source = parameters if parameters is not None else schema if deferred else schema()
    return Tool(tool_name, text, source, execute, label=label, tags=tags, summary=summary, deferred=deferred)


_NAME_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})
#: keywords the validation enforces and the model need not read on every turn
_VALIDATION_ONLY = frozenset({"title", "maxLength", "minLength", "maxItems", "minItems", "maximum", "minimum"})


def _compact_schema(schema: Any) -> Any:
    """The schema as the model needs it: every byte is paid on every turn.

    Drops pydantic's titles (they tell the model nothing new), ``additionalProperties: false`` and
    the size bounds (``maxLength``, ``maximum``, …): the validation refuses unknown arguments and
    values out of bounds with a message the model can act on, and the original's schemas do not
    state them either. States an optional parameter
    (``x: T | None = None``) as plain ``T``: not being in ``required`` already says it may be left
    out, and the validation still accepts an explicit null.
    """
    if isinstance(schema, list):
        return [_compact_schema(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _NAME_MAPS and isinstance(value, dict):  # names here are parameters, not keywords
            out[key] = {name: _compact_schema(sub) for name, sub in value.items()}
        elif key not in _VALIDATION_ONLY and not (key == "additionalProperties" and value is False):
            out[key] = _compact_schema(value)
    if "default" in out and out["default"] is None:
        del out["default"]
        variants = out.get("anyOf")
        if isinstance(variants, list) and {"type": "null"} in variants:
            rest = [v for v in variants if v != {"type": "null"}]
            if len(rest) == 1 and isinstance(rest[0], dict):
                del out["anyOf"]
                out = {**rest[0], **out}
            else:
                out["anyOf"] = rest
    return out


TOOL_SCHEMA_DESCRIPTION = "The parameters of tools declared without them: call it before using one of those."
_TOOL_SCHEMA_PARAMETERS: dict[str, Any] = {
    "properties": {"names": {"items": {"type": "string"}, "type": "array"}},
    "required": ["names"],
    "type": "object",
}


def tool_schema_tool(tools: dict[str, Tool]) -> Tool:
    """``tool_schema``: the full parameter schemas of named tools (for lazily described tool sets).

    Built for every run that defers a tool, so it is written out by hand: no pydantic model is
    created per run (each one costs CPU and stays in typing's caches)."""

    async def execute(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        names = args.get("names")
        if set(args) - {"names"} or not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise InvalidRequest("invalid arguments for tool_schema: names: a list of tool names")
        found = {
            n: {"description": tools[n].description, "parameters": tools[n].parameters} for n in names if n in tools
        }
        missing = [n for n in names if n not in tools]
        text = json.dumps(found, indent=1)
        if missing:
            text += f"\nunknown tools: {', '.join(missing)}"
        return ToolResult.text(text, is_error=not found)

    return Tool("tool_schema", TOOL_SCHEMA_DESCRIPTION, _TOOL_SCHEMA_PARAMETERS, execute, label="tool schema")
