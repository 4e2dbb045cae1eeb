"""Sessions: keys, the `sessions.json` store, JSONL transcripts, locking."""

from __future__ import annotations
