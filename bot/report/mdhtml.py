"""The few Markdown constructs our own texts use (`code`, **bold**, [links](https://...)), rendered as HTML for
the standalone report, so a note reads as it does in the comment instead of showing its backticks.

Safe by construction: the text is HTML-escaped first, then only these constructs are turned into tags; nothing
in the text can open any other tag or attribute. Links are rendered only when the caller allows them (our own
sentences), only to http(s) or an anchor in the page, and open nothing by themselves. Case paths and ids get a
`<wbr>` after each separator, so a browser breaks them at `/`, `-`, `_` and `:`, never in the middle of a word.
"""

from __future__ import annotations

import re
from typing import Any

from markupsafe import Markup, escape

from bot.base.textfilters import clean

_CODE = re.compile(r"(`+)(.+?)\1", re.S)
# Bold that neither starts nor ends with `*`: a masked secret (`***`) stays as it is.
_BOLD = re.compile(r"(?<!\*)\*\*(?=[^\s*])(.+?)(?<=[^\s*])\*\*(?!\*)")
# After escaping: the link text, then an http(s) or in-page target without spaces, quotes or brackets.
_LINK = re.compile(r"\[([^\]\n]+)\]\(((?:https?://|#)[^\s()<>]+)\)")
_BREAK_AFTER = re.compile(r"([/\-_:])(?=.)")


def _inline(text: str, *, links: bool) -> str:
    """Escaped text (no code spans) with bold and, when allowed, links."""
    text = _BOLD.sub(r"<strong>\1</strong>", text)
    if links:
        text = _LINK.sub(r'<a href="\2">\1</a>', text)
    return text


def md_inline_html(value: Any, *, links: bool = False) -> Markup:
    """One Markdown line as HTML: `code` -> <code>, **bold** -> <strong>, and (with `links`) [text](url) -> <a>.
    Everything else stays text, escaped."""
    text = clean("" if value is None else str(value))
    out: list[str] = []
    last = 0
    for m in _CODE.finditer(text):
        out.append(_inline(str(escape(text[last : m.start()])), links=links))
        out.append(f"<code>{escape(m.group(2).strip() or m.group(2))}</code>")
        last = m.end()
    out.append(_inline(str(escape(text[last:])), links=links))
    return Markup("".join(out))


def md_trusted_html(value: Any) -> Markup:
    """Our own sentences (gate reasons, notes, warnings): md_inline_html with links."""
    return md_inline_html(value, links=True)


def breakable(value: Any) -> Markup:
    """A path or id, escaped, with `<wbr>` after each `/`, `-`, `_` and `:` so it wraps only there."""
    text = str(escape(clean("" if value is None else str(value))))
    return Markup(_BREAK_AFTER.sub(r"\1<wbr>", text))


FILTERS = {"md_html_inline": md_inline_html, "md_html_trusted": md_trusted_html, "breakable": breakable}
