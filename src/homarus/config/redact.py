"""Mask secrets in anything shown to a client or written to a log.

What is a secret follows the config schema: every field typed ``SecretStr`` (found by walking the
section models, lazy sub-sections included: :func:`secret_fields`), every value of an ``env`` or
``headers`` map (environment variables and HTTP headers carry keys and bearer tokens), every key
whose name says so (``token``, ``password``, ``apiKey``, … — third-party plugin and channel keys
have no schema here), and the password of a URL that carries one (``https://user:pw@host``).
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Iterator
from functools import lru_cache
from typing import Any, Final

__all__ = [
    "REDACTED",
    "SECRET_MAPS",
    "is_sensitive_key",
    "redact",
    "redact_text",
    "restore_redacted",
    "secret_fields",
]

REDACTED = "__HOMARUS_REDACTED__"
# "token" but not "tokens": maxTokens / contextTokens are counts, not secrets
_SENSITIVE = re.compile(r"(?i)(token|(password|passphrase|secret|api[_-]?key|private[_-]?key|credential)s?)$")
#: maps whose every value is a secret, whatever its key (``Authorization``, ``GITHUB_TOKEN``, …)
SECRET_MAPS: Final = frozenset({"env", "headers"})
_URL_PASSWORD = re.compile(r"(?i)^([a-z][a-z0-9+.-]*://[^/@\s:]*:)([^/@\s]+)(@)")


def is_sensitive_key(key: str) -> bool:
    """Whether a key's name says it holds a secret (cheap: no schema; used on every audit record)."""
    return bool(_SENSITIVE.search(key))


def _is_secret_key(key: str) -> bool:
    return is_sensitive_key(key) or key in _schema_secret_names()


def _masked(value: Any) -> Any:
    return value if value is None or value == "" else REDACTED


def redact(value: Any, *, _secret_map: bool = False) -> Any:
    """Copy of ``value`` with every secret replaced by REDACTED."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if _secret_map and not isinstance(v, dict):
                out[k] = _masked(v)
            elif k in SECRET_MAPS and isinstance(v, dict):
                out[k] = redact(v, _secret_map=True)
            elif _is_secret_key(k) and not isinstance(v, dict):
                out[k] = _masked(v)
            else:
                out[k] = redact(v)
        return out
    if isinstance(value, list):
        return [redact(v) for v in value]
    if isinstance(value, str) and "@" in value:
        return _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + m.group(3), value)
    return value


def restore_redacted(new: Any, current: Any) -> Any:
    """Put back the current secret wherever a client echoed REDACTED instead of a value."""
    if isinstance(new, dict):
        cur = current if isinstance(current, dict) else {}
        out = {}
        for k, v in new.items():
            if v == REDACTED:
                if k not in cur:
                    continue  # nothing to restore: drop the sentinel rather than store it
                out[k] = cur[k]
            else:
                out[k] = restore_redacted(v, cur.get(k))
        return out
    if isinstance(new, list):
        cur_list = current if isinstance(current, list) else []
        return [restore_redacted(v, cur_list[i] if i < len(cur_list) else None) for i, v in enumerate(new)]
    if isinstance(new, str) and REDACTED in new and isinstance(current, str):
        return current  # a URL whose password was masked
    return new


def _secret_values(value: Any, secret_map: bool = False) -> Iterator[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, str) and v and (secret_map or _is_secret_key(k)):
                yield v
            else:
                yield from _secret_values(v, k in SECRET_MAPS and isinstance(v, dict))
    elif isinstance(value, list):
        for v in value:
            yield from _secret_values(v)
    elif isinstance(value, str) and (m := _URL_PASSWORD.match(value)):
        yield m.group(2)


def redact_text(raw: str, parsed: Any) -> str:
    """Replace each secret literal of ``parsed`` inside the raw file text."""
    # Longest first, so a secret containing another is replaced whole.
    for secret in sorted(set(_secret_values(parsed)), key=len, reverse=True):
        if "${" in secret:
            continue  # an env reference is not the secret itself
        raw = raw.replace(secret, REDACTED)
    return raw


# -- the schema walk -------------------------------------------------------------------------------
def secret_fields() -> list[str]:
    """Every secret of the config schema as a dotted path (``*`` for a map key or list item):
    ``SecretStr`` fields, and ``env``/``headers`` maps (``….env.*``); the channels' own models too."""
    from homarus.config.channels import channel_schemas
    from homarus.config.schema import SECTIONS, section_model

    out: list[str] = []
    for name in SECTIONS:
        _walk(section_model(name), name, out, set())
    for channel_id, model in channel_schemas().items():
        _walk(model, f"channels.{channel_id}", out, set())
    return sorted(set(out))


@lru_cache(maxsize=1)
def _schema_secret_names() -> frozenset[str]:
    """The on-disk names of the schema's ``SecretStr`` fields."""
    return frozenset(p.rsplit(".", 1)[-1] for p in secret_fields() if not p.endswith("*"))


def _walk(model: Any, path: str, out: list[str], seen: set[tuple[Any, str]]) -> None:
    from pydantic import BaseModel, RootModel

    if (model, path) in seen or path.count(".") > 12:
        return
    seen.add((model, path))
    if isinstance(model, type) and issubclass(model, RootModel):
        _annotation(model.model_fields["root"].annotation, [], path, out, seen)
        return
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return
    for field_name, info in model.model_fields.items():
        alias = info.alias or field_name
        _annotation(info.annotation, list(info.metadata), f"{path}.{alias}", out, seen, alias)


def _annotation(
    tp: Any, metadata: list[Any], path: str, out: list[str], seen: set[tuple[Any, str]], alias: str = ""
) -> None:
    from pydantic import BaseModel, SecretStr

    from homarus.config.base import LazyTarget

    for meta in metadata:
        if isinstance(meta, LazyTarget):
            _walk(meta.model(), path, out, seen)
            return
    if typing.get_origin(tp) is typing.Annotated:
        args = typing.get_args(tp)
        _annotation(args[0], [*metadata, *args[1:]], path, out, seen, alias)
        return
    if tp is SecretStr:
        out.append(path)
        return
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        for arg in args:
            _annotation(arg, metadata, path, out, seen, alias)
    elif origin is dict and len(args) == 2:
        if alias in SECRET_MAPS:
            out.append(f"{path}.*")
        else:
            _annotation(args[1], [], f"{path}.*", out, seen)
    elif origin in (list, tuple, set, frozenset) and args:
        _annotation(args[0], [], f"{path}.*", out, seen)
    elif isinstance(tp, type) and issubclass(tp, BaseModel):
        _walk(tp, path, out, seen)
