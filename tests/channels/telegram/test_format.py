"""Markdown to Telegram's HTML subset: only b i s code pre a blockquote, only < > & escaped, raw
HTML shown as text, unsafe links dropped; and the plain-text fallback."""

from __future__ import annotations

from homarus.channels.telegram.format import markdown_to_html, markdown_to_text
from tests.fakes.telegram_server import check_html


def test_inline_styles_and_escaping() -> None:
    html = markdown_to_html("**bold** _it_ ~~gone~~ `a<b && c>d` 5 < 6 & 7 > 3")
    assert html == "<b>bold</b> <i>it</i> <s>gone</s> <code>a&lt;b &amp;&amp; c&gt;d</code> 5 &lt; 6 &amp; 7 &gt; 3"


def test_blocks_headings_lists_quotes_code_and_tables() -> None:
    md = (
        "# Title\n\n- one\n- two\n\n1. first\n2. second\n\n> quoted\n\n"
        "```py\nx = 1 < 2\n```\n\n| a | b |\n|---|---|\n| 1 | 22 |"
    )
    html = markdown_to_html(md)
    assert html.startswith("<b>Title</b>\n\n• one\n• two")
    assert "1. first\n2. second" in html
    assert "<blockquote>quoted</blockquote>" in html
    assert '<pre><code class="language-py">x = 1 &lt; 2</code></pre>' in html
    assert "<pre>a | b\n--+---\n1 | 22</pre>" in html
    assert check_html(html)[0] is None  # well-formed, as Telegram's parser wants it


def test_raw_html_and_unsafe_links_never_pass_through() -> None:
    html = markdown_to_html('<script>alert(1)</script> [x](javascript:alert(1)) [ok](https://example.org/?a=1&b="2")')
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert 'href="javascript' not in html
    assert markdown_to_html("[files](ftp://host/x)") == "files"  # a scheme Telegram has no use for: text only
    assert '<a href="https://example.org/?a=1&amp;b=%222%22">ok</a>' in html


def test_plain_text_fallback_has_no_tags_and_decoded_entities() -> None:
    assert markdown_to_text("**a** & `<b>`") == "a & <b>"
