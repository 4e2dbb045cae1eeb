"""Tools the agent can call: the model (`base`), built-ins, and (later) policy and sandboxed exec."""

from __future__ import annotations
