"""Every method Homarus implements accepts the parameters the original (2026.9.6) accepts: its
params model against the original's schema (tests/fixtures/openclaw-param-schemas.json, the
property names of the original's ``*ParamsSchema`` objects). Runs everywhere (no CLI needed).

Every property is accepted: honoured, or declared (``homarus.protocol.compat``) as inert (no effect,
with the reason) or unsupported (refused unless harmless, with the reason). A method implemented
without one of the original's properties fails the test.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import cast

from pydantic import BaseModel

from homarus.gateway.methods import CORE_METHODS
from homarus.protocol.compat import inert_of, unsupported_of

SCHEMAS = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "openclaw-param-schemas.json").read_text())[
    "schemas"
]


#: where the original names a method's schema otherwise than by the method's name
SCHEMA_NAMES = {
    "agent.identity.get": "AgentIdentityParamsSchema",
    "sessions.github.options": "SessionGitHubOptionsParamsSchema",
    "tools.github.status": "ToolsGitHubStatusParamsSchema",
}


def schema_name(method: str) -> str:
    if method in SCHEMA_NAMES:
        return SCHEMA_NAMES[method]
    return "".join(part[:1].upper() + part[1:] for part in method.replace("-", ".").split(".")) + "ParamsSchema"


#: methods whose params are read elsewhere than the method table says (the handshake reads connect's)
MODELS = {"connect": "homarus.protocol.connect:ConnectParams"}


def model_of(name: str, target: str, params: str | None) -> type[BaseModel] | None:
    where = MODELS.get(name)
    if where is not None:
        module_name, _, attr = where.partition(":")
        return cast("type[BaseModel]", getattr(importlib.import_module(module_name), attr))
    if params is None:
        return None
    return cast("type[BaseModel]", getattr(importlib.import_module(target.partition(":")[0]), params))


def accepted(name: str, target: str, params: str | None) -> set[str]:
    model = model_of(name, target, params)
    if model is None:
        return set()
    return {f.alias or n for n, f in model.model_fields.items()} | set(inert_of(model)) | set(unsupported_of(model))


def gaps() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for m in CORE_METHODS:
        schema = SCHEMAS.get(schema_name(m.name))
        ours = accepted(m.name, m.target, m.params)
        if schema is None:
            continue
        missing = sorted(set(schema["properties"]) - ours)
        if missing:
            out[m.name] = missing
    return out


def test_every_parameter_of_the_original_is_accepted() -> None:
    assert gaps() == {}, "parameters the original accepts and Homarus refuses as unknown"


def test_declared_parameters_are_the_originals_and_say_why() -> None:
    """An inert or unsupported parameter exists in the original's schema and carries its reason."""
    for m in CORE_METHODS:
        model = model_of(m.name, m.target, m.params)
        if model is None:
            continue
        declared = {**inert_of(model), **{k: v.reason for k, v in unsupported_of(model).items()}}
        schema = SCHEMAS.get(schema_name(m.name))
        for wire, reason in declared.items():
            assert len(reason) > 15, (m.name, wire)
            assert schema is not None and wire in schema["properties"], f"{m.name}.{wire} is not the original's"


def test_the_original_schemas_cover_the_implemented_methods() -> None:
    compared = [m.name for m in CORE_METHODS if schema_name(m.name) in SCHEMAS]
    assert len(compared) >= 70  # the comparison is not vacuous (75 of 111 methods on 2026-11-26)
