"""Markdown (what models write) to the HTML subset Telegram renders, and plain text as a fallback.

Telegram's HTML mode knows ``b i u s code pre a blockquote`` and nothing else, and only ``< > &``
need escaping (HTML mode is chosen over MarkdownV2, whose eighteen reserved characters make every
model reply a parse error waiting to happen). The walk itself is the channel layer's
(``channels/markdown.py``); a link keeps its target only for ``http(s)``, ``tg`` and ``mailto``.
"""

from __future__ import annotations

import html
from typing import ClassVar

from homarus.channels.markdown import Dialect, render

__all__ = ["markdown_to_html", "markdown_to_text"]


class _TelegramHtml(Dialect):
    bold: ClassVar[tuple[str, str]] = ("<b>", "</b>")
    italic: ClassVar[tuple[str, str]] = ("<i>", "</i>")
    strike: ClassVar[tuple[str, str]] = ("<s>", "</s>")
    safe_schemes: ClassVar[tuple[str, ...]] = ("http://", "https://", "tg://", "mailto:")

    def escape(self, text: str) -> str:
        return html.escape(text, quote=False)

    def code(self, text: str) -> str:
        return f"<code>{self.escape(text)}</code>"

    def pre(self, text: str, lang: str) -> str:
        cls = f' class="language-{html.escape(lang, quote=True)}"' if lang else ""
        return f"<pre><code{cls}>{self.escape(text)}</code></pre>"

    def table(self, text: str) -> str:
        return f"<pre>{self.escape(text)}</pre>"

    def quote(self, inner: str) -> str:
        return f"<blockquote>{inner}</blockquote>"

    def link_open(self, href: str) -> str:
        return f'<a href="{html.escape(href, quote=True)}">'

    def link_close(self, href: str) -> str:
        return "</a>"


_HTML = _TelegramHtml()


def markdown_to_html(markdown: str) -> str:
    """Telegram HTML for ``markdown`` (never raises: the worst case is escaped text)."""
    return render(markdown, _HTML)


def markdown_to_text(markdown: str) -> str:
    """The plain-text fallback: the HTML rendering without its tags, entities decoded."""
    import re

    return html.unescape(re.sub(r"<[^>]+>", "", markdown_to_html(markdown)))
