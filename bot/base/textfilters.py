"""Small Jinja filters for the reports and the prompts. Questions, SQL and reasons come from agents and pull
requests: the Markdown filters make them inert (no HTML, no mentions, no issue links, no fence that the content
can close). A bottom-layer module (bot.base.templating registers them) so that prompts rendered by bot.agents,
bot.scoring and bot.repair need not import bot.report."""

from __future__ import annotations

import re
from typing import Any

from markupsafe import Markup, escape

# C0 controls (but tab, newline, carriage return), DEL, lone surrogates and the two non-characters XML forbids.
_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")
# Characters that change how text reads without being seen ("Trojan Source"): bidi embeddings, overrides and
# isolates and the Arabic letter mark; zero-width spaces, joiners and marks; the line and paragraph separators
# (a line break no diff shows); the byte-order mark, the Mongolian vowel separator, word joiner and the invisible
# operators. Shown as `<U+202E>` (see `show_invisible`).
_INVISIBLE = re.compile("[\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
# A zero-width space breaks `@user` and `#123` for GitHub's linkers; a reader sees no difference.
_ZWSP = "\u200b"
_ZWJ = "\u200d"
_MD_PUNCT = re.compile(r"([\\`*_\[\]|~])")
_MENTION = re.compile(r"@(?=\w)")
_ISSUE_REF = re.compile(r"#(?=\d)")
_BACKTICKS = re.compile(r"`+")
_QUOTED = re.compile(r"`([^`]+)`")


def _pictographic(ch: str) -> bool:
    """An emoji (or its skin tone or variation selector): what a zero-width joiner joins in 👩‍💻."""
    return ch == "\ufe0f" or "\U0001f000" <= ch <= "\U0001faff" or "\u2600" <= ch <= "\u27bf"


def _shown(m: re.Match[str], entity: bool) -> str:
    ch, text, at = m.group(), m.string, m.start()
    if ch == _ZWSP and at and text[at - 1] in "@#":
        return ch  # how the Markdown filters defuse a mention or an issue link (below): nothing hides there
    if (
        ch == _ZWJ
        and at
        and at + 1 < len(text)
        and _pictographic(text[at - 1])
        and _pictographic(text[at + 1])
    ):
        return ch  # an emoji sequence
    return f"&lt;U+{ord(ch):04X}&gt;" if entity else f"<U+{ord(ch):04X}>"


def show_invisible(text: str) -> str:
    """Bidi and zero-width control characters of untrusted text as a visible `<U+202E>`, so that text cannot
    read differently from what it is (a case id that looks like another, SQL whose order is not what is shown).
    Kept: a zero-width space right after `@` or `#` (a defused mention), a zero-width joiner inside an emoji."""
    return _INVISIBLE.sub(lambda m: _shown(m, False), text)


def clean(value: Any) -> Any:
    """Every template's finalizer, and the first step of the filters: drop characters that are invalid in XML
    and unprintable anywhere, and show bidi and zero-width controls escaped (`show_invisible`; in Markup, as
    `&lt;U+202E&gt;`); keeps Markup safe."""
    if isinstance(value, Markup):
        return Markup(_INVISIBLE.sub(lambda m: _shown(m, True), _INVALID.sub("", str(value))))
    if isinstance(value, str):
        return show_invisible(_INVALID.sub("", value))
    return value


def pct(value: float | None, digits: int = 1) -> str:
    """0.8 -> "80.0%"; None (nothing decidable) -> "n/a"."""
    return "n/a" if value is None else f"{value * 100:.{digits}f}%"


def delta(value: float | None, digits: int = 1) -> str:
    """A pass-rate difference in percentage points with its sign: "+2.5 pp", "-10.0 pp", "±0.0 pp"."""
    if value is None:
        return "n/a"
    points = round(value * 100, digits)
    if points == 0:
        return f"±{0:.{digits}f} pp"
    return f"{points:+.{digits}f} pp"


WORD_SLACK = 16  # characters a cut may give up to end at a word's edge


def truncate_middle(value: Any, width: int = 80, marker: str = " … ") -> str:
    """Keep the start and the end of a long text (the end of SQL or of a reason often matters too)."""
    text = "" if value is None else str(value)
    if width <= 0 or len(text) <= width:
        return text
    keep = max(width - len(marker), 2)
    head = (keep + 1) // 2
    start, end = text[:head], text[len(text) - (keep - head) :]
    # At a word's edge when one is near (a cut word reads as a typo): the start ends before a word the cut
    # would split, the end starts after one; never more than WORD_SLACK characters given up on either side.
    if text[head : head + 1].strip() and " " in start[-WORD_SLACK:]:
        start = start[: start.rindex(" ")]
    if text[len(text) - len(end) - 1 : len(text) - len(end)].strip() and " " in end[:WORD_SLACK]:
        end = end[end.index(" ") + 1 :]
    return start.rstrip() + marker + end.lstrip()


def one_line(value: Any) -> str:
    text = clean("" if value is None else str(value))
    return " ".join(text.split())


def _defuse_links(text: str) -> str:
    return _ISSUE_REF.sub("#" + _ZWSP, _MENTION.sub("@" + _ZWSP, text))


def md_escape(value: Any, width: int = 0) -> str:
    """Untrusted text as one inert line of Markdown, safe in a table cell: HTML escaped, Markdown punctuation
    backslash-escaped, `|` escaped, mentions and issue references broken with a zero-width space."""
    text = truncate_middle(one_line(value), width) if width else one_line(value)
    return _escape_inline(text)


def _escape_inline(text: str) -> str:
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _defuse_links(_MD_PUNCT.sub(r"\\\1", text))


def md_text(value: Any, width: int = 0) -> str:
    """Like md_escape, but `quoted` parts (the engine quotes columns and SQL that way in its reasons) become
    inert code spans instead of literal backticks."""
    text = truncate_middle(one_line(value), width) if width else one_line(value)
    parts = _QUOTED.split(text)
    return "".join(md_code(p) if i % 2 else _escape_inline(p) for i, p in enumerate(parts))


def md_code(value: Any, width: int = 0) -> str:
    """Untrusted text as an inline code span (ids, table names): backticks in it cannot end the span; `|` is
    escaped for tables. Mentions inside code are never linked by GitHub."""
    text = truncate_middle(one_line(value), width) if width else one_line(value)
    if not text:
        return "` `"
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    ticks = "`" * (longest + 1)
    if text.startswith("`") or text.endswith("`"):
        text = f" {text} "
    return ticks + text.replace("|", "\\|") + ticks


def md_fence(value: Any, lang: str = "", width: int = 0) -> str:
    """A fenced code block whose fence is longer than any backtick run in the content, so the content can
    never close it (CommonMark: a closing fence is at least as long as the opening one)."""
    text = clean("" if value is None else str(value)).replace("\r\n", "\n").replace("\r", "\n")
    if width:
        text = truncate_middle(text, width, marker="\n-- … (cut) …\n")
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    lang = re.sub(r"[^A-Za-z0-9_+-]", "", lang)
    return f"{fence}{lang}\n{text.rstrip(chr(10))}\n{fence}"


def md_html(value: Any, width: int = 0) -> str:
    """Untrusted text inside raw HTML in Markdown (a `<summary>`): HTML-escaped, mentions broken."""
    text = truncate_middle(one_line(value), width) if width else one_line(value)
    return _defuse_links(str(escape(text)))


def md_url(value: Any) -> str:
    """A link target that cannot end the Markdown link early."""
    text = one_line(value)
    return re.sub(r"[\s()<>\"'`]", lambda m: f"%{ord(m.group()):02X}", text)


def short_sha(value: Any, width: int = 10) -> str:
    return "n/a" if not value else str(value)[:width]


FILTERS = {
    "pct": pct,
    "delta": delta,
    "truncate_middle": truncate_middle,
    "one_line": one_line,
    "md_escape": md_escape,
    "md_code": md_code,
    "md_text": md_text,
    "md_fence": md_fence,
    "md_html": md_html,
    "md_url": md_url,
    "short_sha": short_sha,
}
