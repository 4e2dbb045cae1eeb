"""Homarus: a self-hosted personal AI-assistant gateway."""

from __future__ import annotations

import sys

__all__ = ["__version__"]

__version__ = "0.1.0"

# httpx imports its command-line entry point (``httpx._main``) at its own import and ignores the
# ImportError when ``rich`` is missing, but ``click`` and ``pygments`` are imported by then and stay
# loaded: 2 MB of a gateway's resident memory for a CLI Homarus never runs. Marking the module
# absent makes httpx take its fallback at once.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
