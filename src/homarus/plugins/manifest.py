"""``homarus.plugin.json``: what a plugin is, read without running any of its code.

The manifest is JSON5. ``id`` and ``configSchema`` (a JSON Schema, even if only
``{"type": "object"}``) are required; ``entries.<id>.config`` is validated against that schema
before the plugin is imported. Unknown top-level keys are ignored with a warning so that newer
manifests still load on older hosts.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from homarus.config import json5_text
from homarus.config.plugins import PLUGIN_ID_PATTERN
from homarus.errors import UserError
from homarus.patterns import Pattern

__all__ = [
    "MANIFEST_FILE",
    "ManifestError",
    "PluginContracts",
    "PluginManifest",
    "parse_manifest",
    "parse_manifest_text",
    "read_manifest",
    "unknown_manifest_keys",
    "validate_plugin_config",
]

MANIFEST_FILE = "homarus.plugin.json"
#: manifests are small; a huge file is a mistake or an attack, not a manifest
_MAX_MANIFEST_BYTES = 256 * 1024


class ManifestError(UserError):
    """A manifest that cannot be read or does not validate (the plugin does not load)."""


class _ManifestModel(BaseModel):
    model_config = ConfigDict(extra="ignore", alias_generator=to_camel, populate_by_name=True, frozen=True)


class PluginContracts(_ManifestModel):
    """What the plugin claims to own; registrations outside the contract are refused."""

    tools: tuple[str, ...] = ()
    #: chat channel ids the plugin registers (``register_channel``)
    channels: tuple[str, ...] = ()


class PluginManifest(_ManifestModel):
    id: Annotated[str, Pattern(PLUGIN_ID_PATTERN)]
    #: JSON Schema of ``plugins.entries.<id>.config``
    config_schema: dict[str, Any]
    name: str | None = None
    description: str | None = None
    version: str | None = None
    #: the module file, relative to the plugin directory (directory plugins only)
    entry: str = Field("plugin.py", min_length=1)
    contracts: PluginContracts = Field(default_factory=PluginContracts)
    #: directories of skills (``<name>/SKILL.md``) the plugin ships, relative to the plugin directory
    skills: tuple[str, ...] | None = None

    @property
    def display_name(self) -> str:
        return self.name or self.id

    def to_json(self) -> dict[str, Any]:
        """The manifest as written on disk (camelCase keys, no unset optionals)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


_KNOWN_KEYS = frozenset(to_camel(name) for name in PluginManifest.model_fields)


def unknown_manifest_keys(data: Mapping[str, Any]) -> list[str]:
    """Top-level keys the host does not read (reported as a warning, not an error)."""
    return sorted(k for k in data if k not in _KNOWN_KEYS and k != "$schema")


#: schemas that are valid and accept ``{}``: most plugins (the bundled ones too) declare one of them,
#: and checking them needs no JSON Schema validator (jsonschema costs ~15 ms to import)
_PLAIN_OBJECT_SCHEMAS: tuple[dict[str, Any], ...] = (
    {},
    {"type": "object"},
    {"type": "object", "additionalProperties": False},
    {"type": "object", "properties": {}, "additionalProperties": False},
)


def parse_manifest(data: Any, *, source: str) -> PluginManifest:
    """Validate parsed manifest data; ManifestError names the source and the offending key."""
    if not isinstance(data, Mapping):
        raise ManifestError(f"{source}: the manifest must be a JSON object")
    try:
        manifest = PluginManifest.model_validate(dict(data))
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"]) or "(root)"
            msg = "required" if err["type"] == "missing" else err["msg"]
            problems.append(f"{loc}: {msg}")
        raise ManifestError(f"{source}: invalid manifest: {'; '.join(problems)}") from None
    if manifest.config_schema in _PLAIN_OBJECT_SCHEMAS:
        return manifest  # valid by definition: no need to load a JSON Schema validator
    from jsonschema import exceptions as jsonschema_exceptions
    from jsonschema import validators

    try:
        validators.validator_for(manifest.config_schema).check_schema(manifest.config_schema)
    except jsonschema_exceptions.SchemaError as exc:
        raise ManifestError(f"{source}: configSchema is not a valid JSON Schema: {exc.message}") from None
    return manifest


def read_manifest(path: Path) -> tuple[PluginManifest, list[str]]:
    """Read and validate a manifest file; returns it with the unknown keys it had."""
    try:
        if path.stat().st_size > _MAX_MANIFEST_BYTES:
            raise ManifestError(f"{path}: manifest larger than {_MAX_MANIFEST_BYTES} bytes")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ManifestError(f"{path}: missing {MANIFEST_FILE}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(f"{path}: cannot read: {exc}") from None
    return parse_manifest_text(text, source=str(path))


def parse_manifest_text(text: str, *, source: str) -> tuple[PluginManifest, list[str]]:
    try:
        data = json5_text.loads(text)
    except ValueError as exc:
        raise ManifestError(f"{source}: not valid JSON5: {exc}") from None
    manifest = parse_manifest(data, source=source)
    return manifest, unknown_manifest_keys(data)


def validate_plugin_config(manifest: PluginManifest, config: Mapping[str, Any]) -> list[str]:
    """Problems of ``config`` against the manifest's ``configSchema`` (empty when valid)."""
    if not config and manifest.config_schema in _PLAIN_OBJECT_SCHEMAS:
        return []  # an empty object is what these schemas accept
    from jsonschema import validators  # loaded only by plugins whose configuration needs checking

    validator_cls = validators.validator_for(manifest.config_schema)
    validator = validator_cls(manifest.config_schema)
    problems = []
    for err in sorted(validator.iter_errors(dict(config)), key=lambda e: [str(p) for p in e.absolute_path]):
        where = ".".join(str(p) for p in err.absolute_path)
        problems.append(f"{where}: {err.message}" if where else err.message)
    return problems
