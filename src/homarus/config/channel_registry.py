"""Which model validates ``channels.<id>``, as channel plugins register it: the class itself, or
``"module:attr"`` naming it.

Kept apart from the models (``config/channels.py``) so that registering a channel costs no model:
a bundled channel that nobody configures (Telegram, on most gateways) names its model, and the
model is imported and built only when ``channels.<id>`` is first read (``channel_schema``). This
module only records; resolving a name is ``config/channels.py``'s.
"""

from __future__ import annotations

import re
from typing import Any, Final

__all__ = ["REF", "register", "registered"]

#: ``package.module:Class`` (a dotted attribute allowed)
REF: Final = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")

_REGISTERED: dict[str, Any] = {}


def register(channel_id: str, model: Any) -> None:
    """``channels.<channel_id>`` is validated with ``model`` (a ``ChannelConfig`` subclass, or a
    ``"module:attr"`` string naming one) from now on."""
    _REGISTERED[channel_id] = model


def registered() -> dict[str, Any]:
    """Channel id → the class or the name each plugin registered (the live mapping: a resolved name
    is replaced by its class)."""
    return _REGISTERED
