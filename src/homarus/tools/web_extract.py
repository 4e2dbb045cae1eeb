"""Readable text from fetched bytes: charset decoding, binary detection, HTML → Markdown-ish text.

Only the standard library (``html.parser``). Dropped: ``<head>`` (the title is kept apart),
scripts, styles, navigation, forms' widgets, embedded objects and elements marked hidden
(``hidden``, ``aria-hidden="true"``, ``display:none``) — hidden text is a favourite carrier of
prompt injection. Kept: headings, paragraphs, lists, links, preformatted text and tables, as
Markdown (``markdown=True``) or as plain lines.
"""

from __future__ import annotations

import codecs
import re
from html.parser import HTMLParser
from urllib.parse import urljoin

__all__ = ["decode_text", "html_to_text", "is_html", "is_textual"]

_SKIP = frozenset(
    {"head", "script", "style", "noscript", "template", "nav", "svg", "math", "iframe", "object", "embed"}
    | {"canvas", "select", "button", "datalist", "dialog"}
)
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
)
_PARAGRAPHS = frozenset(
    {"p", "blockquote", "figure", "table", "dl", "address", "details", "article", "section", "main", "aside"}
    | {"header", "footer", "form", "fieldset", "figcaption"}
)
_LINES = frozenset({"div", "tr", "dt", "dd", "summary", "caption", "label", "legend"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_TEXT_TYPES = ("application/json", "application/xml", "application/javascript", "application/ecmascript")
_TEXT_SUFFIXES = ("+json", "+xml", "/yaml", "/x-yaml", "/toml", "/csv", "/x-ndjson", "/graphql")
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.IGNORECASE)
_HIDDEN_STYLE = re.compile(r"(display\s*:\s*none|visibility\s*:\s*hidden)", re.IGNORECASE)


def is_html(content_type: str, body: bytes) -> bool:
    if content_type in ("text/html", "application/xhtml+xml"):
        return True
    head = body[:512].lstrip().lower()
    return not content_type and (head.startswith(b"<!doctype html") or head.startswith(b"<html"))


def is_textual(content_type: str, body: bytes) -> bool:
    """Whether the body is text worth returning (by type, or sniffed when the type says nothing)."""
    if content_type.startswith("text/") or content_type in _TEXT_TYPES or content_type.endswith(_TEXT_SUFFIXES):
        return True
    if content_type and content_type not in ("application/octet-stream", "binary/octet-stream"):
        return False
    sample = body[:4096]
    if b"\x00" in sample:
        return False
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(sample) - 4  # only a character cut at the sample's end
    return True


def _codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def decode_text(body: bytes, charset: str | None, *, html: bool) -> str:
    """Decode with the header's charset, else a BOM, else ``<meta charset>``, else UTF-8 (never raises)."""
    codec = _codec(charset)
    if codec is None and body.startswith(codecs.BOM_UTF8):
        codec = "utf-8-sig"
    if codec is None and html:
        match = _META_CHARSET.search(body[:4096])
        codec = _codec(match.group(1).decode("ascii")) if match else None
    return body.decode(codec or "utf-8", errors="replace")


class _Extractor(HTMLParser):
    def __init__(self, base_url: str, markdown: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.markdown = markdown
        self.title = ""
        self.out: list[str] = []
        self._skip_tag: str | None = None
        self._skip_depth = 0
        self._in_title = False
        self._pre = 0
        self._lists: list[list[int]] = []  # [ordered (0/1), next number]
        self._links: list[tuple[str | None, int]] = []
        self._cells = 0

    # output helpers
    def _tail(self) -> str:
        for piece in reversed(self.out):
            if piece:
                return piece[-1]
        return "\n"

    def _newlines(self, n: int) -> None:
        """End the current line/paragraph: at least ``n`` newlines after the last text (none at the start)."""
        have = 0
        for piece in reversed(self.out):
            stripped = piece.rstrip("\n")
            have += len(piece) - len(stripped)
            if stripped:
                break
        else:
            return
        if have < n:
            self.out.append("\n" * (n - have))

    def _emit(self, text: str) -> None:
        self.out.append(text)

    # parser callbacks
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title" and self._skip_tag in (None, "head"):  # not an <svg><title>
            self._in_title = True
            return
        if self._skip_tag is not None:
            if tag == "body" and self._skip_tag == "head":  # a document that never closed <head>
                self._skip_tag, self._skip_depth = None, 0
            elif tag == self._skip_tag:
                self._skip_depth += 1
            return
        if tag not in _VOID and (tag in _SKIP or _hidden(attrs)):
            self._skip_tag, self._skip_depth = tag, 1
            return
        self._open(tag, dict(attrs))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._skip_tag is None and tag not in _SKIP and not _hidden(attrs):
            self._open(tag, dict(attrs))
            if tag not in _VOID:
                self.handle_endtag(tag)

    def _open(self, tag: str, attrs: dict[str, str | None]) -> None:
        if tag in _HEADINGS:
            self._newlines(2)
            if self.markdown:
                self._emit("#" * _HEADINGS[tag] + " ")
        elif tag in _PARAGRAPHS:
            self._newlines(2)
        elif tag in _LINES:
            self._newlines(1)
            self._cells = 0 if tag == "tr" else self._cells
        elif tag == "br":
            self._emit("\n")
        elif tag == "hr":
            self._newlines(2)
            self._emit("---")
            self._newlines(2)
        elif tag in ("ul", "ol"):
            self._newlines(1 if self._lists else 2)
            self._lists.append([1 if tag == "ol" else 0, 1])
        elif tag == "li":
            self._newlines(1)
            depth = max(len(self._lists), 1)
            kind = self._lists[-1] if self._lists else [0, 1]
            marker = f"{kind[1]}. " if kind[0] else "- "
            kind[1] += 1
            self._emit("  " * (depth - 1) + marker)
        elif tag in ("td", "th"):
            if self._cells:
                self._emit(" | ")
            self._cells += 1
        elif tag == "pre":
            self._newlines(2)
            self._pre += 1
            if self.markdown:
                self._emit("```\n")
        elif tag == "code" and not self._pre and self.markdown:
            self._emit("`")
        elif tag == "a":
            self._links.append((_link_target(self.base_url, attrs.get("href")), len(self.out)))

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
            return
        if self._skip_tag is not None:
            if tag == self._skip_tag:
                self._skip_depth -= 1
                if self._skip_depth <= 0:
                    self._skip_tag = None
            return
        if tag in _HEADINGS or tag in _PARAGRAPHS:
            self._newlines(2)
        elif tag in _LINES or tag == "li":
            self._newlines(1)
        elif tag in ("ul", "ol"):
            if self._lists:
                self._lists.pop()
            self._newlines(1 if self._lists else 2)
        elif tag == "pre" and self._pre:
            self._pre -= 1
            if self.markdown:
                self._newlines(1)
                self._emit("```")
            self._newlines(2)
        elif tag == "code" and not self._pre and self.markdown:
            self._emit("`")
        elif tag == "a" and self._links:
            href, start = self._links.pop()
            label = "".join(self.out[start:]).strip()
            if self.markdown and href and label:
                self.out[start:] = [f"[{label}]({href})"]

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
            return
        if self._skip_tag is not None:
            return
        if self._pre:
            self._emit(data)
            return
        text = re.sub(r"\s+", " ", data)
        if self._tail() in "\n " or not self.out:
            text = text.lstrip()
        if text:
            self._emit(text)


def _hidden(attrs: list[tuple[str, str | None]]) -> bool:
    for name, value in attrs:
        if name == "hidden" or (name == "aria-hidden" and (value or "").lower() == "true"):
            return True
        if name == "style" and value and _HIDDEN_STYLE.search(value):
            return True
    return False


def _link_target(base_url: str, href: str | None) -> str | None:
    href = (href or "").strip()
    if not href or href.startswith("#"):
        return None
    target = urljoin(base_url, href)
    return target if target.startswith(("http://", "https://", "mailto:")) else None


def html_to_text(html: str, *, base_url: str, markdown: bool) -> tuple[str, str]:
    """``(text, title)`` of an HTML document."""
    parser = _Extractor(base_url, markdown)
    parser.feed(html)
    parser.close()
    lines = [line.rstrip() for line in "".join(parser.out).split("\n")]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return text, re.sub(r"\s+", " ", parser.title).strip()
