"""Generic work scheduling: lanes, dedupe cache, durable run journal. Nothing agent-specific."""

from __future__ import annotations
