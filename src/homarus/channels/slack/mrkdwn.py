"""Slack's ``mrkdwn`` both ways: Markdown (what models write) to mrkdwn, and a received message's
mrkdwn to the plain text a model reads.

Out: ``*bold*``, ``_italic_``, ``~strike~``, code spans and fences as they are (without a
language, which Slack would show as text), links as ``<url|text>`` for ``http(s)`` and ``mailto``
only, headings bold, quotes ``>`` per line. Only ``& < >`` are escaped (``&amp; &lt; &gt;``, as
Slack asks), which also keeps a model from pinging anyone: ``<!channel>`` or ``<@U…>`` it writes
arrives as text.

In: Slack writes mentions, channels and links as ``<…>`` and escapes ``& < >``; they become
``@U123``, ``#general``, the link's label with its URL, and the characters themselves.
"""

from __future__ import annotations

import re
from typing import ClassVar, Final

from homarus.channels.markdown import Dialect, quote_lines, render

__all__ = ["from_mrkdwn", "to_mrkdwn"]


class _Mrkdwn(Dialect):
    bold: ClassVar[tuple[str, str]] = ("*", "*")
    italic: ClassVar[tuple[str, str]] = ("_", "_")
    strike: ClassVar[tuple[str, str]] = ("~", "~")

    def escape(self, text: str) -> str:
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

    def code(self, text: str) -> str:
        return f"`{self.escape(text)}`"

    def pre(self, text: str, lang: str) -> str:
        return f"```\n{self.escape(text)}\n```"

    def quote(self, inner: str) -> str:
        return quote_lines(inner)

    def link_open(self, href: str) -> str:
        return f"<{_link_target(href)}|"

    def link_close(self, href: str) -> str:
        return ">"


def _link_target(href: str) -> str:
    # inside <...> only the three control characters matter; a | would end the URL early
    return href.replace("&", "&amp;").replace("<", "%3C").replace(">", "%3E").replace("|", "%7C")


_MRKDWN = _Mrkdwn()


def to_mrkdwn(markdown: str) -> str:
    """Slack mrkdwn for ``markdown`` (never raises: the worst case is escaped text)."""
    return render(markdown, _MRKDWN)


_ANGLE: Final = re.compile(r"<([^<>]*)>")


def _angle(match: re.Match[str]) -> str:
    inner = match.group(1)
    target, _, label = inner.partition("|")
    if target.startswith("@"):
        return f"@{label or target[1:]}"
    if target.startswith("#"):
        return f"#{label or target[1:]}"
    if target.startswith("!"):
        name = target[1:].split("^", 1)[0]
        return f"@{label or name}"
    if label and label != target and label != target.removeprefix("mailto:"):
        return f"{label} ({target})"
    return target.removeprefix("mailto:")


def from_mrkdwn(text: str) -> str:
    """What a person typed, from the mrkdwn Slack delivers (entities decoded last, so an escaped
    ``&lt;`` is never read as the start of a link)."""
    return _ANGLE.sub(_angle, text).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
