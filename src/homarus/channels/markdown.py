"""Markdown (what models write) rendered in a chat platform's own markup: one walk over the
markdown-it tokens, and a :class:`Dialect` per platform saying how each mark is written.

What every dialect shares: headings are bold lines, list items get bullets or numbers, tables
become aligned monospace, a rule is a line, raw HTML in the Markdown is shown as text, and a link
keeps its target only for the schemes the dialect allows (its text stays either way).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from markdown_it.token import Token

__all__ = ["Dialect", "quote_lines", "render"]

_parser: Any = None


def _md() -> Any:
    global _parser
    if _parser is None:
        from markdown_it import MarkdownIt

        _parser = MarkdownIt("commonmark", {"html": False}).enable(["strikethrough", "table"])
    return _parser


class Dialect:
    """How a platform writes each mark; subclasses set the pairs and override the methods."""

    bold: ClassVar[tuple[str, str]] = ("", "")
    italic: ClassVar[tuple[str, str]] = ("", "")
    strike: ClassVar[tuple[str, str]] = ("", "")
    rule: ClassVar[str] = "———"
    safe_schemes: ClassVar[tuple[str, ...]] = ("http://", "https://", "mailto:")

    def escape(self, text: str) -> str:
        return text

    def code(self, text: str) -> str:
        return text

    def pre(self, text: str, lang: str) -> str:
        return text

    def table(self, text: str) -> str:
        return self.pre(text, "")

    def quote(self, inner: str) -> str:
        return inner

    def link_open(self, href: str) -> str:
        """What starts a link to a safe ``href`` (its text follows, then :meth:`link_close`)."""
        return ""

    def link_close(self, href: str) -> str:
        return ""


def quote_lines(inner: str) -> str:
    """A quote as ``> `` before each line (the chat apps that quote that way: Slack, WhatsApp)."""
    return "\n".join(f"> {line}" if line else ">" for line in inner.split("\n"))


def render(markdown: str, dialect: Dialect) -> str:
    """``markdown`` in ``dialect`` (never raises: the worst case is escaped text)."""
    tokens = _md().parse(markdown)
    stack: list[list[str]] = [[]]  # a blockquote renders into its own buffer, then is wrapped
    lists: list[list[int]] = []  # per open list: [next number or -1 for bullets]
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        t = tok.type
        out = stack[-1]
        if t == "inline":
            out.append(_inline(tok.children or [], dialect))
        elif t == "paragraph_close" or t == "heading_close":
            if t == "heading_close":
                out.append(dialect.bold[1])
            if not tok.hidden:
                out.append("\n\n")
            elif lists:
                out.append("\n")
        elif t == "heading_open":
            out.append(dialect.bold[0])
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
            stack.append([])
        elif t == "blockquote_close" and len(stack) > 1:
            inner = "".join(stack.pop()).strip("\n")
            stack[-1].append(dialect.quote(inner) + "\n\n")
        elif t in ("fence", "code_block"):
            lang = (tok.info or "").strip().split(" ")[0]
            out.append(dialect.pre(tok.content.rstrip("\n"), lang) + "\n\n")
        elif t == "hr":
            out.append(dialect.rule + "\n\n")
        elif t == "table_open":
            end, table = _table(tokens, i)
            out.append(dialect.table(table) + "\n\n")
            i = end
        elif t == "html_block":
            out.append(dialect.escape(tok.content) + "\n")
        i += 1
    while len(stack) > 1:  # an unclosed quote (markdown-it closes them; belt and braces)
        inner = "".join(stack.pop()).strip("\n")
        stack[-1].append(dialect.quote(inner))
    return "".join(stack[0]).strip()


def _inline(children: list[Token], dialect: Dialect) -> str:
    out: list[str] = []
    links: list[str | None] = []
    for tok in children:
        t = tok.type
        if t == "text":
            out.append(dialect.escape(tok.content))
        elif t in ("softbreak", "hardbreak"):
            out.append("\n")
        elif t == "code_inline":
            out.append(dialect.code(tok.content))
        elif t in ("strong_open", "strong_close"):
            out.append(dialect.bold[t == "strong_close"])
        elif t in ("em_open", "em_close"):
            out.append(dialect.italic[t == "em_close"])
        elif t in ("s_open", "s_close"):
            out.append(dialect.strike[t == "s_close"])
        elif t == "link_open":
            href = str(tok.attrGet("href") or "")
            safe = href if href.lower().startswith(dialect.safe_schemes) else None
            links.append(safe)
            if safe is not None:
                out.append(dialect.link_open(safe))
        elif t == "link_close":
            href_or_none = links.pop() if links else None
            if href_or_none is not None:
                out.append(dialect.link_close(href_or_none))
        elif t == "image":
            out.append(dialect.escape(tok.content or str(tok.attrGet("alt") or "")))
        elif t == "html_inline":
            out.append(dialect.escape(tok.content))
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
