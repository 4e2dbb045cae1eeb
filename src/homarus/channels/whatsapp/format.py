"""Markdown (what models write) in WhatsApp's formatting: ``*bold*``, ``_italic_``, ``~strike~``,
```` ```monospace``` ```` blocks, `` `code` ``, ``> quotes``, bulleted and numbered lists.

WhatsApp has no link markup and no escaping: a link is its text and its URL in parentheses (only
``http(s)`` and ``mailto``), and text is sent as written. The walk is the layer's
(``channels/markdown.py``).
"""

from __future__ import annotations

from typing import ClassVar

from homarus.channels.markdown import Dialect, quote_lines, render

__all__ = ["to_whatsapp"]


class _WhatsApp(Dialect):
    bold: ClassVar[tuple[str, str]] = ("*", "*")
    italic: ClassVar[tuple[str, str]] = ("_", "_")
    strike: ClassVar[tuple[str, str]] = ("~", "~")

    def code(self, text: str) -> str:
        return f"`{text}`"

    def pre(self, text: str, lang: str) -> str:
        return f"```\n{text}\n```"

    def quote(self, inner: str) -> str:
        return quote_lines(inner)

    def link_close(self, href: str) -> str:
        return f" ({href.removeprefix('mailto:')})"


_DIALECT = _WhatsApp()


def to_whatsapp(markdown: str) -> str:
    """WhatsApp-formatted text for ``markdown`` (never raises)."""
    return render(markdown, _DIALECT)
