"""Entry points of the installed distributions, read with ``importlib.metadata`` only when one declares the group.

Importing ``importlib.metadata`` (with the ``zipfile``, ``csv`` and ``email`` machinery it loads)
and letting it build every distribution's ``EntryPoint`` objects holds ~0.8 MiB for the life of
the process, and a gateway asks three times at start (installed plugins, channel config models,
and pydantic's own plugin loader, on the first model it builds) — where almost always nobody has
installed a plugin. :func:`declared_groups` answers the question that decides it with a scan of
what ``importlib.metadata`` would read anyway: the section headers of each ``entry_points.txt``
in the ``*.dist-info``/``*.egg-info`` directories of the ``sys.path`` entries. When a group is
declared (or a path entry is an archive this scan does not open), ``importlib.metadata`` answers
as before.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = ["declared_groups", "entry_points", "skip_pydantic_plugin_scan"]

_METADATA_DIRS = (".dist-info", ".egg-info")


def declared_groups(paths: Sequence[str] | None = None) -> frozenset[str] | None:
    """The entry-point groups the distributions on ``paths`` (``sys.path``) declare, or ``None``
    when that cannot be told without ``importlib.metadata`` (an archive on the path)."""
    groups: set[str] = set()
    for entry in sys.path if paths is None else paths:
        root = entry or "."
        try:
            listing = os.scandir(root)
        except NotADirectoryError:
            return None  # a zip or egg on the path: importlib.metadata reads inside it
        except OSError:
            continue  # a missing directory declares nothing, for importlib.metadata as well
        with listing:
            for item in listing:
                if item.name.endswith(_METADATA_DIRS):
                    groups.update(_sections(os.path.join(item.path, "entry_points.txt")))
        if root.endswith(".egg"):  # an unpacked egg on the path keeps its metadata inside
            groups.update(_sections(os.path.join(root, "EGG-INFO", "entry_points.txt")))
    return frozenset(groups)


def _sections(path: str) -> list[str]:
    """The sections of an ``entry_points.txt`` that hold an entry (an empty one is no group, as
    for ``importlib.metadata``)."""
    groups: list[str] = []
    section: str | None = None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for raw in f:
                line = raw.strip()
                if line.startswith("[") and "]" in line:
                    section = line[1 : line.index("]")].strip()
                elif section is not None and "=" in line and not line.startswith(("#", ";")):
                    groups.append(section)
                    section = None  # named once
    except OSError:
        return []
    return groups


def entry_points(group: str) -> Sequence[EntryPoint]:
    """``importlib.metadata.entry_points(group=group)``; empty, without importing it, when no
    installed distribution declares ``group``."""
    groups = declared_groups()
    if groups is not None and group not in groups:
        return ()
    import importlib.metadata

    return tuple(importlib.metadata.entry_points(group=group))


def skip_pydantic_plugin_scan() -> bool:
    """When no installed distribution declares a pydantic plugin, give pydantic the answer its
    plugin loader would compute (no plugins) before its first model asks, so that the loader and
    ``importlib.metadata`` are never imported. True when it did. For a process's entry point: it
    must run before the first pydantic model is built.

    pydantic imports ``get_plugins`` from ``pydantic.plugin._loader`` on each validator it builds
    (``tests/test_entry_points.py`` fails if that changes with an upgrade)."""
    name = "pydantic.plugin._loader"
    if name in sys.modules:
        return False
    groups = declared_groups()
    if groups is None or "pydantic" in groups:
        return False
    loader = types.ModuleType(name, "pydantic's plugin loader, answering for a process with no plugin installed")
    loader.get_plugins = _no_plugins  # type: ignore[attr-defined]
    sys.modules[name] = loader
    return True


def _no_plugins() -> tuple[()]:
    return ()
