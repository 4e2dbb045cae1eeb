"""Configuration: one pydantic tree (`schema`), its loading (`loader`), redaction (`redact`)."""

from __future__ import annotations
