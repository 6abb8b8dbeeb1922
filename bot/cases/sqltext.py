"""A small lexical scanner for SQL text: where quoted strings, quoted identifiers, dollar quotes and comments end.

Used where SQL must be scanned without parsing it (defog's `{}` column choices, splitting an imported script on
`;`). PostgreSQL's rules with standard_conforming_strings on: '' doubles a quote, E'' strings take backslash
escapes, $tag$ quotes need a tag that does not continue an identifier.
"""

from __future__ import annotations

import re

_DOLLAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$")


def _continues_identifier(sql: str, i: int) -> bool:
    return i > 0 and (sql[i - 1].isalnum() or sql[i - 1] in "_$")


def skip_quoted(sql: str, i: int) -> int | None:
    """The index just after the string, quoted identifier, dollar quote or comment starting at `i`; None when
    no such token starts there. An unterminated one runs to the end of the text."""
    n = len(sql)
    ch = sql[i]
    if ch in ("e", "E") and sql.startswith("'", i + 1) and not _continues_identifier(sql, i):
        j = i + 2
        while j < n:
            if sql[j] == "\\":
                j += 2
                continue
            if sql[j] == "'":
                if sql.startswith("'", j + 1):
                    j += 2
                    continue
                return j + 1
            j += 1
        return n
    if ch in ("'", '"'):
        j = i + 1
        while j < n:
            if sql[j] == ch:
                if sql.startswith(ch, j + 1):
                    j += 2
                    continue
                return j + 1
            j += 1
        return n
    if sql.startswith("--", i):
        j = sql.find("\n", i)
        return n if j < 0 else j
    if sql.startswith("/*", i):
        j = sql.find("*/", i + 2)
        return n if j < 0 else j + 2
    if ch == "$" and not _continues_identifier(sql, i):
        m = _DOLLAR.match(sql, i)
        if m:
            end = sql.find(m.group(0), m.end())
            return n if end < 0 else end + len(m.group(0))
    return None
