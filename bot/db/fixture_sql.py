"""A fixture file read as SQL, never as a psql script: its statements and the data of its `COPY ... FROM stdin`
blocks, each with the line it starts on. No psql meta-command is ever run: a backslash outside a string, a
quoted identifier, a comment or a COPY block (`\\!`, `\\copy`, `\\o`, `\\i`, `\\c`, ...) is refused, naming its
line. pg_dump's own `\\restrict` and `\\unrestrict` lines (psql's guard against a dump it restores, which has no
meaning without psql) are passed over.

Statements that give an object to a named owner (`ALTER ... OWNER TO ...`) are passed over too: every object of a
fixture belongs to sqlcanary's restricted role (bot.db.templates), whoever owned it where the dump was taken.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from pathlib import Path

from bot.base.errors import CaseFileError

_SPECIAL = re.compile(r"['\"$;\\]|--|/\*")
_DOLLAR_TAG = re.compile(r"\$(?:[A-Za-z_\u0080-\uffff][\w\u0080-\uffff]*)?\$")
_IDENT_CHAR = re.compile(r"[\w$\u0080-\uffff]")
_COPY_FROM_STDIN = re.compile(r"\ACOPY\b.*\bFROM\s+STDIN\b", re.I | re.S)
_OWNER_TO = re.compile(r'\AALTER\s.*\sOWNER\s+TO\s+(?:"(?:[^"]|"")*"|\S+)\s*\Z', re.I | re.S)
_PASSED_OVER_META = re.compile(r"\\(?:un)?restrict(?:[ \t]+[A-Za-z0-9]+)?[ \t\r]*\n?\Z")
_COMMENTS = re.compile(r"--[^\n]*|/\*.*?\*/", re.S)
# Statements that end or split the transaction a fixture file is loaded in (its changes are checked before it
# commits: bot.db.fixture_load).
_TX_CONTROL = re.compile(
    r"\A(?:COMMIT|END|ROLLBACK|ABORT|BEGIN|START|SAVEPOINT|RELEASE|PREPARE\s+TRANSACTION)\b", re.I
)


@dataclass(frozen=True)
class Unit:
    """One statement to execute (`copy_data` set for `COPY ... FROM stdin`), and the line it starts on."""

    sql: str
    line: int
    copy_data: str | None = None


class _Lines:
    def __init__(self, text: str) -> None:
        self._starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def at(self, index: int) -> int:
        return bisect.bisect_right(self._starts, index)


def _fail(path: Path, line: int, message: str) -> CaseFileError:
    return CaseFileError(f"fixture: {message}", path=str(path), line=line)


def _end_of_quote(text: str, i: int, quote: str, *, backslashes: bool) -> int:
    """The index just past the quote that closes the one at `i` ('' or "" inside are escaped quotes)."""
    j = i + 1
    while True:
        k = text.find(quote, j)
        if k < 0:
            return -1
        if backslashes:
            run = len(text[j:k]) - len(text[j:k].rstrip("\\"))
            if run % 2:  # an escaped quote: \'
                j = k + 1
                continue
        if text.startswith(quote, k + 1):
            j = k + 2
            continue
        return k + 1


def _end_of_block_comment(text: str, i: int) -> int:
    depth, j = 0, i
    while j < len(text):
        if text.startswith("/*", j):
            depth, j = depth + 1, j + 2
        elif text.startswith("*/", j):
            depth, j = depth - 1, j + 2
            if depth == 0:
                return j
        else:
            j += 1
    return -1


def _is_e_string(text: str, i: int) -> bool:
    """A quote opening an escape string (E'...'): E or e right before it, not ending an identifier."""
    return i > 0 and text[i - 1] in "Ee" and not (i > 1 and _IDENT_CHAR.match(text[i - 2]))


def split_fixture(text: str, path: Path) -> list[Unit]:
    """The fixture's units in order; raises CaseFileError (file and line) for a psql meta-command, an unclosed
    string or comment, or a COPY block without its end."""
    lines = _Lines(text)
    units: list[Unit] = []
    start = pos = 0
    while True:
        m = _SPECIAL.search(text, pos)
        if m is None:
            _flush(units, text, start, len(text), lines, path)
            return units
        i, tok = m.start(), m.group()
        if tok == ";":
            unit = _flush(units, text, start, i + 1, lines, path)
            pos = start = i + 1
            if unit is not None and _COPY_FROM_STDIN.match(_COMMENTS.sub(" ", unit.sql)):
                pos = start = _copy_block(units, text, pos, lines, path)
            continue
        if tok == "\\":
            pos = start = _meta_command(text, i, start, lines, path)
            continue
        end = _skip(text, i, tok)
        if end < 0:
            raise _fail(path, lines.at(i), f"a {_what(tok)} that starts here is never closed")
        pos = end


def _what(tok: str) -> str:
    return {"'": "string", '"': "quoted identifier", "--": "comment", "/*": "comment"}.get(
        tok, "dollar quote"
    )


def _skip(text: str, i: int, tok: str) -> int:
    """The index past the string, identifier, comment or dollar quote at `i` (-1: never closed)."""
    if tok == "'":
        return _end_of_quote(text, i, "'", backslashes=_is_e_string(text, i))
    if tok == '"':
        return _end_of_quote(text, i, '"', backslashes=False)
    if tok == "--":
        nl = text.find("\n", i)
        return len(text) if nl < 0 else nl + 1
    if tok == "/*":
        return _end_of_block_comment(text, i)
    m = _DOLLAR_TAG.match(text, i)
    if m is None or (i > 0 and _IDENT_CHAR.match(text[i - 1])):
        return i + 1  # `$1`, or a `$` inside a name
    close = text.find(m.group(), m.end())
    return -1 if close < 0 else close + len(m.group())


def _meta_command(text: str, i: int, start: int, lines: _Lines, path: Path) -> int:
    """Past a psql meta-command line that is passed over; any other backslash outside a string is refused."""
    line_start = text.rfind("\n", 0, i) + 1
    nl = text.find("\n", i)
    end = len(text) if nl < 0 else nl + 1
    pending = _COMMENTS.sub(" ", text[start:i]).strip()
    if not text[line_start:i].strip() and not pending and _PASSED_OVER_META.match(text[i:end]):
        return end
    shown = text[i:end].strip()[:40]
    raise _fail(
        path,
        lines.at(i),
        f"`{shown}` is a psql meta-command; a fixture is plain SQL and sqlcanary never runs psql on it "
        "(COPY ... FROM stdin blocks are read as data)",
    )


def _copy_block(units: list[Unit], text: str, pos: int, lines: _Lines, path: Path) -> int:
    """The data after a `COPY ... FROM stdin;` (from the next line to the `\\.` line) attached to that unit."""
    nl = text.find("\n", pos)
    data_start = len(text) if nl < 0 else nl + 1
    m = re.compile(r"^\\\.[ \t\r]*$", re.M).search(text, data_start)
    if m is None:
        raise _fail(path, units[-1].line, "the COPY ... FROM stdin data that starts here has no `\\.` line")
    units[-1] = Unit(sql=units[-1].sql, line=units[-1].line, copy_data=text[data_start : m.start()])
    return m.end()


def _flush(units: list[Unit], text: str, start: int, end: int, lines: _Lines, path: Path) -> Unit | None:
    """The statement between `start` and `end` as a unit (None when it holds only blanks and comments, or gives
    an object to a named owner); transaction control is refused."""
    chunk = text[start:end]
    body = _COMMENTS.sub(" ", chunk).strip().rstrip(";").strip()
    if not body or _OWNER_TO.match(body):
        return None
    lead = len(chunk) - len(chunk.lstrip())
    stripped = chunk.strip()
    while stripped.startswith(("--", "/*")):  # the line the statement itself starts on, after its comments
        rest = _COMMENTS.match(stripped)
        if rest is None:
            break
        after = stripped[rest.end() :]
        lead += len(stripped) - len(after.lstrip())
        stripped = after.lstrip()
    unit = Unit(sql=chunk.strip(), line=lines.at(start + lead))
    if _TX_CONTROL.match(body):
        raise _fail(
            path,
            unit.line,
            f"`{body[:40]}`: a fixture file is loaded in one transaction, which it may not end or split",
        )
    units.append(unit)
    return unit
