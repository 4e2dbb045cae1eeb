"""The audit trail of every run: who asked, model calls, tool calls and their decisions (JSONL per day)."""
