"""Pure security decisions: credentials, scopes, rate limits."""

from __future__ import annotations
