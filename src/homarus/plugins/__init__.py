"""Plugins: manifests, discovery, the registration API, the typed hook catalogue and its runner."""

from __future__ import annotations
