"""Find plugin candidates and read their manifests, without running any plugin code.

Sources, highest precedence first (on a duplicate id only the highest is kept, the others are
dropped with a warning):

1. ``config``: ``plugins.entries.<id>.path`` (relative paths are relative to the state dir)
2. ``entrypoint``: installed distributions exposing the ``homarus.plugins`` entry-point group
3. ``bundled``: Homarus' own features, registered through the same API (always discovered)
4. ``global``: ``$STATE/extensions/<id>/``
5. ``workspace``: ``<workspace>/.homarus/extensions/<id>/``, only when ``plugins.workspace.enabled``
6. ``path``: ``plugins.load.paths`` (a plugin dir, or a dir of plugin dirs)

Bundled plugins rank below installed packages and above loose directories, so an untracked copy
in a state or workspace directory can never shadow a built-in feature. ``plugins.enabled=false``
skips every source except the bundled one.

Directory candidates pass safety gates before anything is imported: the entry file must resolve
(symlinks followed) inside the plugin root, neither may be world-writable, and both must be owned
by the current user or root. A failing candidate keeps its id and is reported ``blocked``.
"""

from __future__ import annotations

import importlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib.machinery import PathFinder
from pathlib import Path
from typing import TYPE_CHECKING, Any

from homarus.config.plugins import PluginsConfig
from homarus.entry_points import entry_points
from homarus.plugins.manifest import MANIFEST_FILE, ManifestError, PluginManifest, parse_manifest, read_manifest
from homarus.plugins.presence import ENTRY_POINT_GROUP
from homarus.plugins.registry import Diagnostic, Origin

if TYPE_CHECKING:
    from importlib.metadata import Distribution

__all__ = [
    "BUNDLED_PLUGINS",
    "ENTRY_POINT_GROUP",
    "BundledPlugin",
    "Candidate",
    "Discovery",
    "check_safety",
    "discover_plugins",
]

_RANK: dict[Origin, int] = {"config": 0, "entrypoint": 1, "bundled": 2, "global": 3, "workspace": 4, "path": 5}


@dataclass(frozen=True, slots=True)
class BundledPlugin:
    """A built-in feature exposed as a plugin: ``module`` (or ``module:attr``) has ``manifest`` and ``register``."""

    module: str
    attr: str | None = None


#: imported by name (like entry points), so this low layer does not import the features it lists
BUNDLED_PLUGINS: tuple[BundledPlugin, ...] = (
    BundledPlugin("homarus.tools.builtin"),
    BundledPlugin("homarus.channels.plugin"),
    BundledPlugin("homarus.channels.telegram.plugin"),
    BundledPlugin("homarus.channels.discord.plugin"),
    BundledPlugin("homarus.channels.slack.plugin"),
    BundledPlugin("homarus.channels.whatsapp.plugin"),
)


@dataclass(slots=True)
class Candidate:
    """One discovered plugin, before enablement and loading."""

    id: str
    origin: Origin
    source: str
    root: Path | None = None
    manifest: PluginManifest | None = None
    #: directory plugins: the entry module file
    entry_file: Path | None = None
    #: entry-point and bundled plugins: the module and the object in it (None = the module)
    module: str | None = None
    attr: str | None = None
    #: bundled: the already-imported object
    target: Any = None
    #: the manifest is the ``manifest`` attribute of the imported object (read after import)
    deferred_manifest: bool = False
    #: a broken manifest or a missing entry: the plugin is an error
    problem: str | None = None
    #: a failed safety gate: the plugin is blocked
    blocked: str | None = None
    unknown_keys: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Discovery:
    candidates: list[Candidate]
    diagnostics: list[Diagnostic]


def discover_plugins(
    config: PluginsConfig,
    *,
    state_dir: Path,
    workspace: Path | None,
    bundled: Iterable[BundledPlugin] = BUNDLED_PLUGINS,
    uid: int | None = None,
) -> Discovery:
    """All candidates, deduplicated by id by precedence, in load order (precedence order)."""
    diags: list[Diagnostic] = []
    uid = os.getuid() if uid is None else uid
    found: list[Candidate] = []
    if config.enabled:
        for plugin_id, entry in config.entries.items():
            if entry.path is not None:
                found.append(_pinned(plugin_id, _expand(entry.path, state_dir), uid))
        found.extend(_entry_points(diags))
    found.extend(_bundled(bundled))
    if config.enabled:
        found.extend(_scan(state_dir / "extensions", "global", uid, diags, required=False))
        if workspace is not None and config.workspace.enabled:
            found.extend(_scan(workspace / ".homarus" / "extensions", "workspace", uid, diags, required=False))
        for raw in config.load.paths:
            found.extend(_scan(_expand(raw, state_dir), "path", uid, diags, required=True))
    found.sort(key=lambda c: _RANK[c.origin])  # stable: each source keeps its own order
    winners: dict[str, Candidate] = {}
    for cand in found:
        kept = winners.get(cand.id)
        if kept is None:
            winners[cand.id] = cand
            continue
        diags.append(
            Diagnostic(
                "warn",
                cand.id,
                cand.source,
                f"duplicate plugin id {cand.id!r}: {cand.origin} {cand.source} ignored; "
                f"{kept.origin} {kept.source} takes precedence",
            )
        )
    return Discovery(list(winners.values()), diags)


def _expand(raw: str, base: Path) -> Path:
    path = Path(raw).expanduser()
    return path if path.is_absolute() else base / path


# -- directories -------------------------------------------------------------------------------------
def _pinned(plugin_id: str, path: Path, uid: int) -> Candidate:
    if path.is_file() and path.name == MANIFEST_FILE:
        path = path.parent
    if not path.is_dir():
        return Candidate(plugin_id, "config", str(path), problem=f"plugins.entries.{plugin_id}.path: not a directory")
    cand = _dir_candidate(path, "config", uid)
    if cand.manifest is not None and cand.id != plugin_id:
        cand.problem = f"manifest id {cand.id!r} does not match plugins.entries.{plugin_id}.path"
        cand.id = plugin_id
    return cand


def _scan(root: Path, origin: Origin, uid: int, diags: list[Diagnostic], *, required: bool) -> list[Candidate]:
    if root.is_file() and root.name == MANIFEST_FILE:
        root = root.parent
    if not root.is_dir():
        if required:
            diags.append(
                Diagnostic("warn", None, str(root), f"plugin path {root} does not exist or is not a directory")
            )
        return []
    if (root / MANIFEST_FILE).is_file():
        return [_dir_candidate(root, origin, uid)]
    out = []
    for child in sorted(root.iterdir()):
        if child.name.startswith(".") or not child.is_dir():
            continue
        if not (child / MANIFEST_FILE).exists():
            diags.append(Diagnostic("warn", None, str(child), f"no {MANIFEST_FILE} in {child}; ignored"))
            continue
        out.append(_dir_candidate(child, origin, uid))
    return out


def _dir_candidate(root: Path, origin: Origin, uid: int) -> Candidate:
    source = str(root)
    try:
        manifest, unknown = read_manifest(root / MANIFEST_FILE)
    except ManifestError as exc:
        return Candidate(root.name, origin, source, root=root, problem=exc.message)
    entry = root / manifest.entry
    cand = Candidate(manifest.id, origin, source, root=root, manifest=manifest, entry_file=entry, unknown_keys=unknown)
    cand.blocked, cand.problem = check_safety(root, entry, uid=uid)
    return cand


def check_safety(root: Path, entry: Path, *, uid: int) -> tuple[str | None, str | None]:
    """``(blocked_reason, problem)`` for a plugin directory and its entry file (both None = safe)."""
    try:
        real_root = root.resolve(strict=True)
    except OSError as exc:
        return None, f"cannot resolve plugin root {root}: {exc}"
    try:
        real_entry = entry.resolve(strict=True)
    except FileNotFoundError:
        real_entry = entry.resolve()
        if not real_entry.is_relative_to(real_root):
            return f"entry {entry} escapes the plugin root {real_root}", None
        return None, f"entry file {entry} not found"
    except OSError as exc:
        return None, f"cannot resolve entry {entry}: {exc}"
    if not real_entry.is_relative_to(real_root):
        return f"entry {entry} resolves to {real_entry}, outside the plugin root {real_root}", None
    for path in (real_root, real_entry):
        st = os.stat(path)
        if st.st_mode & stat.S_IWOTH:
            return f"{path} is world-writable", None
        if st.st_uid not in (uid, 0):
            return f"{path} is owned by uid {st.st_uid}, neither the current user ({uid}) nor root", None
    if not stat.S_ISREG(os.stat(real_entry).st_mode):
        return None, f"entry {entry} is not a regular file"
    return None, None


# -- entry points and bundled ------------------------------------------------------------------------
def _entry_points(diags: list[Diagnostic]) -> list[Candidate]:
    importlib.invalidate_caches()
    out = []
    for ep in sorted(entry_points(ENTRY_POINT_GROUP), key=lambda e: e.name):
        module, _, attr = ep.value.partition(":")
        module, attr = module.strip(), attr.strip()
        dist_name = ep.dist.name if ep.dist is not None else "?"
        source = f"{dist_name}:{ep.value}"
        module_file = _module_file(module, ep.dist)
        manifest_path = module_file.parent / MANIFEST_FILE if module_file is not None else None
        cand = Candidate(ep.name, "entrypoint", source, module=module, attr=attr or None)
        if module_file is not None:
            cand.root = module_file.parent
        if manifest_path is None or not manifest_path.is_file():
            cand.deferred_manifest = True  # the object's ``manifest`` attribute, read once imported
        else:
            try:
                cand.manifest, cand.unknown_keys = read_manifest(manifest_path)
            except ManifestError as exc:
                cand.problem = exc.message
            else:
                if cand.manifest.id != ep.name:
                    diags.append(
                        Diagnostic(
                            "warn",
                            cand.manifest.id,
                            source,
                            f"entry point name {ep.name!r} differs from the manifest id; using {cand.manifest.id!r}",
                        )
                    )
                    cand.id = cand.manifest.id
        out.append(cand)
    return out


def _module_file(module: str, dist: Distribution | None) -> Path | None:
    """Where ``module``'s source is, found without importing it (nor its parent packages)."""
    parts = module.split(".")
    wanted = {"/".join(parts) + ".py", "/".join([*parts, "__init__.py"])}
    if dist is not None:
        for file in dist.files or []:
            if file.as_posix() in wanted:
                return Path(str(dist.locate_file(file)))
    search: list[str] | None = None
    spec = None
    for i, part in enumerate(parts):
        spec = PathFinder.find_spec(part, search)
        if spec is None:
            return None
        if i < len(parts) - 1:
            search = list(spec.submodule_search_locations or [])
            if not search:
                return None
    if spec is None or not spec.origin or spec.origin in ("built-in", "frozen"):
        return None
    return Path(spec.origin)


def _bundled(bundled: Iterable[BundledPlugin]) -> list[Candidate]:
    out = []
    for b in bundled:
        source = f"{b.module}:{b.attr}" if b.attr else b.module
        try:
            target = resolve_object(importlib.import_module(b.module), b.attr)
            manifest = parse_manifest(getattr(target, "manifest", None), source=source)
        except Exception as exc:
            out.append(Candidate(b.module, "bundled", source, problem=f"bundled plugin failed to load: {exc!r}"))
            continue
        module_file = getattr(importlib.import_module(b.module), "__file__", None)
        root = Path(module_file).parent if module_file else None
        out.append(Candidate(manifest.id, "bundled", source, root=root, manifest=manifest, target=target))
    return out


def resolve_object(module: Any, attr: str | None) -> Any:
    """``module`` itself, or the dotted attribute ``attr`` of it."""
    obj = module
    for part in (attr or "").split("."):
        if part:
            obj = getattr(obj, part)
    return obj
