"""The methods ``@dataclass`` generates, compiled once and kept across starts, as ``.pyc`` files
keep a module's bytecode.

Every ``@dataclass`` writes the source of its ``__init__``, ``__repr__`` and ``__eq__`` (frozen:
also ``__setattr__``, ``__delattr__``, ``__hash__``) when its module is imported and compiles each
with ``exec``: about 0.2 ms a method on the 2-core host of ``bench/RESULTS.md``, 0.6 to 1.2 ms a
class, against 0.01 ms for a plain class. The gateway creates some 270 dataclasses on the way to
its first answer (92 before it is ready: 85 ms; 176 for the first run: about 200 ms, timed around
``dataclasses._process_class``). Python caches a module's bytecode but not these; this module
caches them the same way: the code objects compiled from each generated source, keyed by the
source's SHA-256, in one marshal file beside the package's bytecode (``__pycache__``), written by
``make install`` (:func:`build`, again whenever a source changes) and read on the first dataclass
after ``homarus gateway run`` installs it (only there: ``homarus --help`` and the other short
commands create few dataclasses and would pay for the file and the ``dataclasses`` module instead).
Served from the file, importing the gateway took 264 ms instead of 318 (median of 3, same host).

What stays the same: ``exec`` runs the same code in the same namespaces; a source not in the file
(a class changed since the file was written, a plugin's) is compiled as before; a file written
by another Python (its magic number differs), a damaged or a missing one is ignored. The file is
trusted as the ``.pyc`` files beside it are, and a little less: one that others than its owner may
write, or whose owner is neither this user nor root, is ignored.

Only the ``exec`` name inside the ``dataclasses`` module is replaced, so nothing else in the
process is affected. No library does this (attrs generates and compiles its methods the same
way), hence this module.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import importlib
import marshal
import os
import sys
from importlib._bootstrap_external import MAGIC_NUMBER  # importlib.util's, without its imports
from pathlib import Path
from types import CodeType
from typing import Any

__all__ = ["build", "cache_path", "install", "release", "stats"]

_MAGIC = b"HMDC" + MAGIC_NUMBER
_MAX_BYTES = 16 * 1024 * 1024  # a larger file is not ours: ignored

#: digest of a generated source -> its marshalled code (unmarshalled when first needed)
_entries: dict[bytes, bytes] | None = None
_path: Path | None = None
#: while :func:`build` records: digest -> marshalled code of every source compiled
_recording: dict[bytes, bytes] | None = None
_hits = 0
_misses = 0


def cache_path() -> Path:
    """Where this package's file lives (one per Python version, like its ``.pyc`` files)."""
    return Path(__file__).resolve().parent / "__pycache__" / f"dataclasses.{sys.implementation.cache_tag}.bin"


def install(path: Path | None = None) -> None:
    """Serve the ``dataclasses`` module's compiles from ``path`` (default :func:`cache_path`).
    Idempotent; the file is read on the first dataclass created afterwards."""
    global _path, _entries
    _path = path or cache_path()
    _entries = None
    setattr(dataclasses, "exec", _exec)  # noqa: B010 - shadows the builtin for that module only


def release() -> None:
    """Stop serving from the file and let its entries go (1.5 MiB for this package): the gateway
    calls this once the modules of its runs and clients are loaded; a dataclass created later (a
    subsystem used for the first time hours after the start) compiles its methods as Python does."""
    global _entries, _path
    if dataclasses.__dict__.get("exec") is _exec:
        delattr(dataclasses, "exec")
    _entries = None
    _path = None


def stats() -> dict[str, int]:
    """Sources served from the file and compiled anew since :func:`install`."""
    return {"hits": _hits, "misses": _misses, "entries": len(_entries or {})}


def _load() -> dict[bytes, bytes]:
    entries: dict[bytes, bytes] = {}
    if _path is None:
        return entries
    with contextlib.suppress(OSError, ValueError, EOFError, TypeError):
        with open(_path, "rb") as f:
            st = os.fstat(f.fileno())
            if st.st_mode & 0o022 or st.st_uid not in (0, os.getuid()) or st.st_size > _MAX_BYTES:
                return entries
            if f.read(len(_MAGIC)) != _MAGIC:
                return entries
            loaded = marshal.loads(f.read())  # noqa: S302 - our own file, trusted as a .pyc is (above)
        if isinstance(loaded, dict):
            entries = {k: v for k, v in loaded.items() if isinstance(k, bytes) and isinstance(v, bytes)}
    return entries


def _exec(source: Any, globals: Any = None, locals: Any = None, /) -> None:
    global _entries, _hits, _misses
    if not isinstance(source, str):
        builtins.exec(source, globals, locals)  # noqa: S102 - what the dataclasses module asked for
        return
    if _entries is None:
        _entries = _load()
    from hashlib import sha256  # here: ``homarus --help`` defines no dataclass

    digest = sha256(source.encode()).digest()
    code: CodeType | None = None
    blob = _entries.get(digest)
    if blob is not None:
        with contextlib.suppress(ValueError, EOFError, TypeError):
            loaded = marshal.loads(blob)  # noqa: S302 - from the file checked by _load
            code = loaded if isinstance(loaded, CodeType) else None
    if code is None:
        _misses += 1
        code = compile(source, "<string>", "exec")  # what exec() does with a string
        blob = marshal.dumps(code)
    else:
        _hits += 1
    if _recording is not None and blob is not None:
        _recording[digest] = blob
    builtins.exec(code, globals, locals)  # noqa: S102 - the dataclasses module's own generated source


def build(package: str = "homarus", path: Path | None = None) -> int:
    """Import every module of ``package`` (one that fails to import is skipped) and write the code
    of every dataclass method created meanwhile to ``path``, and nothing else (a class changed or
    removed since the last build leaves no entry behind); returns the number of entries. Run again
    after an upgrade (``make install`` does, whenever a source changes)."""
    import pkgutil
    import tempfile

    global _recording
    target = path or cache_path()
    install(target)
    entries: dict[bytes, bytes] = {}
    _recording = entries
    try:
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, f"{package}."):
            if not info.name.endswith("__main__"):
                with contextlib.suppress(Exception):
                    importlib.import_module(info.name)
    finally:
        _recording = None
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".dataclasses-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(_MAGIC + marshal.dumps(entries))
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return len(entries)
