"""The base of every config model: closed, camelCase on disk, immutable; and lazy sub-sections.

A sub-section that only one subsystem reads (``agents.defaults.memorySearch``, ``.sandbox``) is a
:func:`lazy_section` field: its model is imported and validated with the rest of the file when the
file has the key (so a typo still stops the start, with its full path), and built from its
defaults the first time it is read when the file does not. A gateway whose config never mentions
memory or the sandbox then never builds their models.
"""

from __future__ import annotations

import importlib
from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, PlainSerializer, PlainValidator, SerializationInfo
from pydantic.alias_generators import to_camel

__all__ = ["DEFAULTS", "ConfigModel", "LazyTarget", "lazy_section"]


class ConfigModel(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        validate_default=True,
    )

    def _lazy(self, field: str, target: str) -> Any:
        """The value of the :func:`lazy_section` field ``field``: as validated, or its defaults."""
        value = getattr(self, field)
        return _defaults(target) if value is DEFAULTS else value


class _Defaults:
    """The value of a lazy sub-section the file does not have: its defaults, built when read."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<defaults>"


DEFAULTS: Final = _Defaults()


_DEFAULT_MODELS: dict[str, BaseModel] = {}


def _defaults(target: str) -> BaseModel:
    """The model ``target`` with its defaults; one shared instance (config models are frozen)."""
    model = _DEFAULT_MODELS.get(target)
    if model is None:
        model = _DEFAULT_MODELS[target] = _model(target)()
    return model


def _model(target: str) -> type[BaseModel]:
    module, _, attr = target.partition(":")
    model: type[BaseModel] = getattr(importlib.import_module(module), attr)
    return model


class LazyTarget(str):
    """The model a :func:`lazy_section` field holds (``"module:Class"``), kept in its annotation so
    that walks over the schema (secret redaction, docs) can reach it without validating anything."""

    __slots__ = ()

    def model(self) -> type[BaseModel]:
        return _model(str(self))


def lazy_section(target: str) -> Any:
    """The annotation of a field holding the model ``target`` (``"module:Class"``), imported only
    when the input has the field or the field is read. Pair it with ``Field(DEFAULTS, alias=...)``
    (or ``None`` for an optional section) and a property that returns ``self._lazy(...)``."""

    def validate(value: Any) -> Any:
        if value is None or value is DEFAULTS or isinstance(value, BaseModel):
            return value
        return _model(target).model_validate(value)

    def serialize(value: Any, info: SerializationInfo) -> Any:
        if value is None:
            return None
        model = _defaults(target) if value is DEFAULTS else value
        return model.model_dump(
            mode=info.mode,
            by_alias=info.by_alias,
            exclude_none=info.exclude_none,
            exclude_defaults=info.exclude_defaults,
            exclude_unset=info.exclude_unset,
        )

    return Annotated[Any, PlainValidator(validate), PlainSerializer(serialize), LazyTarget(target)]
