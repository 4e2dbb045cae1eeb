"""The edge: Starlette/uvicorn server, WebSocket adapter, HTTP routes, and the composition root."""

from __future__ import annotations
