"""The agent: the double loop, its runtime, compaction, prompt and workspace."""

from __future__ import annotations
