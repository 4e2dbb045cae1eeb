"""Tests of homarus.mcp (not named tests/mcp: that would shadow the SDK package ``mcp`` for ruff and mypy)."""
