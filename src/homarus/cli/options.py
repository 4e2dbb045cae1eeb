"""Options shared by the subcommands that talk to a running gateway.

Kept apart from :mod:`homarus.cli.client` so that building the parser (``homarus --help``)
imports nothing but argparse.
"""

from __future__ import annotations

from typing import Any

__all__ = ["client_args"]


def client_args(p: Any, timeout: float = 30.0, *, token_flag: str = "--token") -> None:  # noqa: S107
    """The options every gateway-calling subcommand takes (``token_flag`` where ``--token``
    means something else, such as a bot token)."""
    p.add_argument("--url", help="gateway WebSocket URL (default: ws://127.0.0.1:<gateway.port>)")
    p.add_argument(token_flag, dest="token", help="gateway token (default: from config, env or the state dir)")
    p.add_argument("--timeout", type=float, default=timeout, help=f"seconds (default {timeout:g})")
    p.add_argument("--json", action="store_true", help="print the raw JSON result")
