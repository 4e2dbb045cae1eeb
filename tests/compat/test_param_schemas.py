"""Every method Homarus implements accepts the parameters the original (2026.9.6) accepts: its
params model against the original's schema (tests/fixtures/openclaw-param-schemas.json, the
property names of the original's ``*ParamsSchema`` objects). Runs everywhere (no CLI needed).

The properties Homarus does not accept yet are listed below, per method: a new gap (a method
implemented without a property the original has, or a property dropped) fails the test.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

from homarus.gateway.methods import CORE_METHODS

SCHEMAS = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "openclaw-param-schemas.json").read_text())[
    "schemas"
]


def schema_name(method: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in method.replace("-", ".").split(".")) + "ParamsSchema"


def accepted(target: str, params: str | None) -> set[str] | None:
    if params is None:
        return set()
    module = importlib.import_module(target.partition(":")[0])
    model = getattr(module, params)
    return {f.alias or name for name, f in model.model_fields.items()}


def gaps() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for m in CORE_METHODS:
        schema = SCHEMAS.get(schema_name(m.name))
        ours = accepted(m.target, m.params)
        if schema is None or ours is None:
            continue
        missing = sorted(set(schema["properties"]) - ours)
        if missing:
            out[m.name] = missing
    return out


KNOWN: dict[str, list[str]] = json.loads((Path(__file__).with_name("param_gaps.json")).read_text())


def test_no_new_parameter_gaps() -> None:
    current = gaps()
    new = {m: sorted(set(props) - set(KNOWN.get(m, []))) for m, props in current.items()}
    new = {m: props for m, props in new.items() if props}
    assert new == {}, f"parameters the original accepts and Homarus now refuses: {new}"


def test_the_original_schemas_cover_the_implemented_methods() -> None:
    compared = [m.name for m in CORE_METHODS if schema_name(m.name) in SCHEMAS]
    assert len(compared) >= 25  # the comparison is not vacuous (29 methods matched by name on 2026-11-26)
