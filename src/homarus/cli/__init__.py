"""The `homarus` command line. Heavy modules are imported inside the command that needs them."""

from __future__ import annotations
