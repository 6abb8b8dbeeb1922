"""The hidden marker that makes the pull-request comment sticky: one per (suite, matrix key), so several suites or
jobs on one PR never overwrite each other's comment. It lives in the report layer because the comment template
writes it; bot/github imports it to find the comment again, so both always agree.

A key is text the user chose (a suite name, a matrix value). Inside an HTML comment `--` and `>` could end the
comment early and show the rest, so `marker_key` turns any text into a safe key; `comment_marker` refuses what
is not one already."""

from __future__ import annotations

import hashlib
import re

MARKER = "<!-- sqlcanary:comment -->"  # the key-less marker: one sqlcanary comment per PR, as before keys
MAX_KEY_CHARS = 100
_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+=-]*$")
_UNSAFE = re.compile(r"[^A-Za-z0-9._:/@+=-]+")


def valid_marker_key(key: str) -> bool:
    return bool(_KEY.match(key)) and "--" not in key and len(key) <= MAX_KEY_CHARS


def comment_marker(key: str = "") -> str:
    """`<!-- sqlcanary:comment:<key> -->`, or MARKER for the empty key. Raises ValueError for a key that could
    break the HTML comment (see marker_key for turning any text into a key)."""
    if not key:
        return MARKER
    if not valid_marker_key(key):
        raise ValueError(
            f"comment marker key {key!r} must be at most {MAX_KEY_CHARS} letters, digits and ._:/@+=-, "
            "start with a letter or digit, and hold no '--'"
        )
    return f"<!-- sqlcanary:comment:{key} -->"


def marker_key(text: str) -> str:
    """Any text as a valid key: itself when it is one; otherwise unsafe runs become `_`, `--` becomes `-`, it is
    cut to length, and a short hash of the original text is added, so two different texts never share a
    comment ("shop a" and "shop_a" stay apart)."""
    if not text or valid_marker_key(text):
        return text
    safe = _UNSAFE.sub("_", text)
    while "--" in safe:
        safe = safe.replace("--", "-")
    safe = safe.lstrip("._:/@+=-")
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    safe = safe[: MAX_KEY_CHARS - len(digest) - 1].rstrip("-")
    return f"{safe}.{digest}" if safe else digest


def marker_for(text: str) -> str:
    """The marker of any text (a suite name, a matrix value): comment_marker(marker_key(text))."""
    return comment_marker(marker_key(text))
