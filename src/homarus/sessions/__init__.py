"""Sessions: keys, the SQLite session index, JSONL transcripts."""

from __future__ import annotations
