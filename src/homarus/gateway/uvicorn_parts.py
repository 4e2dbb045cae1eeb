"""uvicorn's ``Config`` and ``Server`` without the rest of its package.

``import uvicorn.server`` first runs ``uvicorn/__init__.py``, which imports ``uvicorn.main``: the
command line (click), the reloader (watchfiles) and the worker supervisor (multiprocessing), 33
modules and 1.75 MiB of memory a gateway that serves in-process never uses (measured on the host
of ``bench/RESULTS.md``). Here the package object is made from its spec without running that file,
the two modules the gateway needs are imported into it, and the package's own ``__init__`` runs in
full the first time anything else is asked of it (``uvicorn.run``, ``uvicorn.__version__``, ``from
uvicorn import main``), so other code in the process sees the package it expects. No library or
setting of uvicorn's does this, hence this module.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from uvicorn.config import Config
    from uvicorn.server import Server

__all__ = ["uvicorn_config_and_server"]


def uvicorn_config_and_server() -> tuple[type[Config], type[Server]]:
    """uvicorn's ``Config`` and ``Server`` classes, its package ``__init__`` deferred when uvicorn
    is not imported yet (as it is, the package is used as it stands)."""
    if "uvicorn" not in sys.modules:
        _install_deferred_package()
    from uvicorn.config import Config
    from uvicorn.server import Server

    package = sys.modules["uvicorn"]
    # what uvicorn's own modules import from the package (``from uvicorn import Config`` in the
    # lifespan handlers), set so that asking for them does not run the deferred ``__init__``
    if "Config" not in package.__dict__:
        package.Config = Config  # type: ignore[attr-defined]
    if "Server" not in package.__dict__:
        package.Server = Server  # type: ignore[attr-defined]
    return Config, Server


def _install_deferred_package() -> None:
    spec = importlib.util.find_spec("uvicorn")
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return  # not a regular package: the plain imports below report what is wrong
    package = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def __getattr__(name: str) -> Any:
        del package.__getattr__  # the real __init__ runs once, then attributes are plain
        loader.exec_module(package)
        try:
            return package.__dict__[name]
        except KeyError:
            raise AttributeError(f"module 'uvicorn' has no attribute {name!r}") from None

    package.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules["uvicorn"] = package
