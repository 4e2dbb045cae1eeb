"""The configuration file's JSON Schema (draft 2020-12, pydantic's), and a look-up of one path in
it: what the original's Control UI draws its settings forms from (``config.schema``,
``config.schema.lookup``).

The schema is built once per process from the sections' models (about 0.3 s and 35 KB, so only
when asked), with the definitions of every section under one ``$defs``. A look-up walks a dotted
path through ``properties``, maps (``additionalProperties``) and ``$ref``s, and answers the node
and its immediate children, each with whether changing it needs a restart.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Final

from homarus.config.schema import SECTIONS, section_model

__all__ = ["RESTART_PATHS", "config_json_schema", "lookup"]

#: what only a restart applies (``config.store``: the socket is bound once)
RESTART_PATHS: Final = ("gateway.port", "gateway.bind", "storage")
_MAX_CHILDREN: Final = 200


@functools.cache
def config_json_schema() -> dict[str, Any]:
    from pydantic.json_schema import models_json_schema

    models = [(section_model(name), "validation") for name in SECTIONS]
    with warnings.catch_warnings():  # a lazily built section's sentinel default is left out, as it should be
        warnings.simplefilter("ignore")
        refs, defs = models_json_schema(models, by_alias=True, ref_template="#/$defs/{model}")  # type: ignore[arg-type]
    properties = {name: refs[(section_model(name), "validation")] for name in SECTIONS}
    properties["$schema"] = {"type": "string", "description": "An editor hint; ignored by the gateway."}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Homarus configuration (homarus.json)",
        "type": "object",
        "additionalProperties": False,
        "properties": properties,
        "$defs": defs.get("$defs", {}),
    }


def _resolve(node: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """``node`` with its ``$ref`` followed (and a nullable ``anyOf [X, null]`` unwrapped)."""
    for _ in range(20):
        if not isinstance(node, dict):
            return {}
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            node = {**defs.get(ref.rsplit("/", 1)[1], {}), **{k: v for k, v in node.items() if k != "$ref"}}
            continue
        variants = node.get("anyOf")
        if isinstance(variants, list):
            real = [v for v in variants if not (isinstance(v, dict) and v.get("type") == "null")]
            if len(real) == 1:
                node = {**{k: v for k, v in node.items() if k != "anyOf"}, **real[0]}
                continue
        return node
    return {}


def _child(node: dict[str, Any], key: str, defs: dict[str, Any]) -> dict[str, Any] | None:
    props = node.get("properties")
    if isinstance(props, dict) and key in props:
        return _resolve(props[key], defs)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        return _resolve(extra, defs)
    items = node.get("items")
    if isinstance(items, dict) and key.isdigit():
        return _resolve(items, defs)
    return None


def _reload_kind(path: str) -> str:
    return "restart" if any(path == p or p.startswith(path + ".") for p in RESTART_PATHS) else "hot"


def _type(node: dict[str, Any]) -> str:
    kind = node.get("type")
    if isinstance(kind, str):
        return kind
    return "object" if "properties" in node else "unknown"


def lookup(path: str) -> dict[str, Any] | None:
    """The schema node at the dotted ``path`` and its children (None: no such path)."""
    schema = config_json_schema()
    defs = schema["$defs"]
    node: dict[str, Any] | None = schema
    parts = [p for p in path.split(".") if p] if path else []
    for part in parts:
        node = _child(node, part, defs) if node is not None else None
        if node is None:
            return None
    assert node is not None
    shown = {k: v for k, v in node.items() if k not in ("properties", "$defs")}
    children = []
    props = node.get("properties")
    required = set(node.get("required") or [])
    if isinstance(props, dict):
        for key, raw in list(props.items())[:_MAX_CHILDREN]:
            child = _resolve(raw, defs)
            child_path = f"{path}.{key}" if path else key
            children.append(
                {
                    "key": key,
                    "path": child_path,
                    "type": _type(child),
                    "required": key in required,
                    "hasChildren": bool(child.get("properties")) or isinstance(child.get("additionalProperties"), dict),
                    "reloadKind": _reload_kind(child_path),
                    "hint": {"label": child.get("title") or key, "advanced": False}
                    | ({"help": child["description"]} if isinstance(child.get("description"), str) else {}),
                    "hintPath": child_path,
                }
            )
    return {
        "path": path,
        "schema": shown,
        "reloadKind": _reload_kind(path),
        "hint": {"label": node.get("title") or path, "advanced": False},
        "hintPath": path,
        "children": children,
    }
