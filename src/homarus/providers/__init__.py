"""LLM providers: one message/stream model (`types`), wire adapters, the scripted provider."""

from __future__ import annotations
