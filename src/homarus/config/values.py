"""Parsers of config values that sections and their users share: durations, bind addresses."""

from __future__ import annotations

import ipaddress
import re

__all__ = ["is_loopback_host", "parse_duration_ms", "resolve_bind_host"]

_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration_ms(text: str) -> int:
    """``"30d"`` → milliseconds. Units: ms, s, m, h, d."""
    match = re.fullmatch(r"(\d+)(ms|s|m|h|d)", text.strip())
    if match is None:
        raise ValueError(f"not a duration: {text!r} (use e.g. 500ms, 30s, 5m, 2h, 30d)")
    return int(match.group(1)) * _UNITS_MS[match.group(2)]


def resolve_bind_host(bind: str) -> str:
    """Turn a bind mode or address into the host to listen on; ValueError when neither."""
    if bind == "loopback":
        return "127.0.0.1"
    if bind == "lan":
        return "0.0.0.0"
    try:
        return str(ipaddress.ip_address(bind))
    except ValueError:
        raise ValueError(f"bind must be 'loopback', 'lan' or an IP address, not {bind!r}") from None


def is_loopback_host(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"
