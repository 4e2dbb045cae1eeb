"""Markdown (what models write) to the HTML subset Telegram renders, and plain text as a fallback.

Telegram's HTML mode knows ``b i u s code pre a blockquote`` and nothing else, and only ``< > &``
need escaping (HTML mode is chosen over MarkdownV2, whose eighteen reserved characters make every
model reply a parse error waiting to happen). The rest is rendered in text: headings bold, list
items with bullets or numbers, tables as aligned monospace, rules as a line. Raw HTML in the
Markdown is shown as text, never passed through. A link keeps its target only for ``http(s)``,
``tg`` and ``mailto`` URLs.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from markdown_it.token import Token

__all__ = ["markdown_to_html", "markdown_to_text"]

_SAFE_SCHEMES: Final = ("http://", "https://", "tg://", "mailto:")
_parser: Any = None


def _md() -> Any:
    global _parser
    if _parser is None:
        from markdown_it import MarkdownIt

        _parser = MarkdownIt("commonmark", {"html": False}).enable(["strikethrough", "table"])
    return _parser


def _esc(text: str) -> str:
    return html.escape(text, quote=False)


def markdown_to_html(markdown: str) -> str:
    """Telegram HTML for ``markdown`` (never raises: the worst case is escaped text)."""
    tokens = _md().parse(markdown)
    out: list[str] = []
    lists: list[list[int]] = []  # per open list: [next number or -1 for bullets]
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        t = tok.type
        if t == "inline":
            out.append(_inline(tok.children or []))
        elif t == "paragraph_close" or t == "heading_close":
            if t == "heading_close":
                out.append("</b>")
            if not tok.hidden:
                out.append("\n\n")
            elif lists:
                out.append("\n")
        elif t == "heading_open":
            out.append("<b>")
        elif t in ("bullet_list_open", "ordered_list_open"):
            start = int(tok.attrGet("start") or 1) if t == "ordered_list_open" else -1
            lists.append([start])
        elif t in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
            if not lists:
                out.append("\n")
        elif t == "list_item_open":
            depth = len(lists) - 1
            number = lists[-1][0]
            out.append("  " * depth + (f"{number}. " if number >= 0 else "• "))
            if number >= 0:
                lists[-1][0] += 1
        elif t == "blockquote_open":
            out.append("<blockquote>")
        elif t == "blockquote_close":
            while out and out[-1] in ("\n", "\n\n"):
                out.pop()
            out.append("</blockquote>\n\n")
        elif t in ("fence", "code_block"):
            lang = (tok.info or "").strip().split(" ")[0]
            cls = f' class="language-{html.escape(lang, quote=True)}"' if lang else ""
            out.append(f"<pre><code{cls}>{_esc(tok.content.rstrip(chr(10)))}</code></pre>\n\n")
        elif t == "hr":
            out.append("———\n\n")
        elif t == "table_open":
            end, table = _table(tokens, i)
            out.append(f"<pre>{_esc(table)}</pre>\n\n")
            i = end
        elif t == "html_block":
            out.append(_esc(tok.content) + "\n")
        i += 1
    return "".join(out).strip()


def _inline(children: list[Token]) -> str:
    out: list[str] = []
    links: list[bool] = []
    for tok in children:
        t = tok.type
        if t == "text":
            out.append(_esc(tok.content))
        elif t in ("softbreak", "hardbreak"):
            out.append("\n")
        elif t == "code_inline":
            out.append(f"<code>{_esc(tok.content)}</code>")
        elif t == "strong_open":
            out.append("<b>")
        elif t == "strong_close":
            out.append("</b>")
        elif t == "em_open":
            out.append("<i>")
        elif t == "em_close":
            out.append("</i>")
        elif t == "s_open":
            out.append("<s>")
        elif t == "s_close":
            out.append("</s>")
        elif t == "link_open":
            href = str(tok.attrGet("href") or "")
            safe = href.lower().startswith(_SAFE_SCHEMES)
            links.append(safe)
            if safe:
                out.append(f'<a href="{html.escape(href, quote=True)}">')
        elif t == "link_close":
            if links.pop() if links else False:
                out.append("</a>")
        elif t == "image":
            out.append(_esc(tok.content or str(tok.attrGet("alt") or "")))
        elif t == "html_inline":
            out.append(_esc(tok.content))
    return "".join(out)


def _table(tokens: list[Token], start: int) -> tuple[int, str]:
    """(index of ``table_close``, the table as aligned plain text)."""
    rows: list[list[str]] = []
    i = start
    while i < len(tokens) and tokens[i].type != "table_close":
        tok = tokens[i]
        if tok.type == "tr_open":
            rows.append([])
        elif tok.type == "inline" and rows:
            rows[-1].append("".join(c.content for c in tok.children or [] if c.type in ("text", "code_inline")))
        i += 1
    widths = [max(len(r[c]) if c < len(r) else 0 for r in rows) for c in range(max(map(len, rows), default=0))]
    lines = [" | ".join(cell.ljust(widths[c]) for c, cell in enumerate(row)).rstrip() for row in rows]
    if len(lines) > 1:
        lines.insert(1, "-+-".join("-" * w for w in widths))
    return i, "\n".join(lines)


def markdown_to_text(markdown: str) -> str:
    """The plain-text fallback: the HTML rendering without its tags, entities decoded."""
    import re

    return html.unescape(re.sub(r"<[^>]+>", "", markdown_to_html(markdown)))
