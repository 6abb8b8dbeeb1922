"""A SQLite database (Spider's and BIRD's `<db_id>/<db_id>.sqlite`) as a PostgreSQL fixture: one CREATE TABLE
per table and its rows as COPY data, loaded by psql like any fixture.

SQLite types are loose, so each column's PostgreSQL type is decided by the values it actually holds, with its
declared type as the hint: whole numbers -> integer or bigint, numbers -> double precision (declared REAL/FLOAT)
or numeric, bytes -> bytea, anything else -> text. A text column of whole numbers named as a number column of
another table is a number too (Spider's text ids, a join key): SQLite compares it with that column as a number,
so the join keeps working; other text stays text ("201201" can still be cut with SUBSTR). A column declared as a
number that holds other text is loaded as text. Both are said. Dates stay text, as SQLite stores them, so
comparisons with '2009-01-01' mean what they meant.
Names are lowercased (SQLite's names are case-insensitive, PostgreSQL folds unquoted ones to lowercase), so the
gold SQL finds them however it spells them. Keys and constraints are not carried over: the data is what is judged.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from bot.base.errors import CaseFileError

INT32 = 2**31 - 1
INT64 = 2**63 - 1
_WHOLE = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")  # fits a bigint


@dataclass
class SqliteSchema:
    """The lowercased names of a converted database: tables and the columns of each."""

    tables: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def names(self) -> set[str]:
        return set(self.tables) | {c for cols in self.tables.values() for c in cols}


@dataclass
class _Column:
    name: str
    declared: str
    kinds: set[type] = field(default_factory=set)
    big: bool = False
    whole_texts: bool = True  # every text value is a whole number written plainly ("14", not "014" or "1e3")
    key: bool = False  # another table has a whole-number column of this name: a join key (see convert_sqlite)

    def pg_type(self) -> str:
        kinds = self.kinds - {type(None)}
        declared = self.declared.upper()
        if not kinds:
            return _affinity_type(declared)
        if kinds == {bytes}:
            return "bytea"
        if kinds <= {int} or (kinds <= {int, str} and self.whole_texts and self.key):
            return "bigint" if self.big else "integer"
        if kinds <= {int, float}:
            return "double precision" if any(k in declared for k in ("REAL", "FLOA", "DOUB")) else "numeric"
        return "text"

    def warning(self, table: str) -> str | None:
        declared = self.declared.upper()
        if str in self.kinds and self.pg_type() in ("integer", "bigint"):
            return (
                f"{table}.{self.name} is declared {self.declared or 'without a type'} but holds only whole numbers: "
                "loaded as a number, as SQLite compares it with numbers (a join with a number column works)"
            )
        numeric = any(k in declared for k in ("INT", "REAL", "FLOA", "DOUB", "NUM", "DEC"))
        if numeric and self.pg_type() == "text":
            return (
                f"{table}.{self.name} is declared {self.declared} but holds text: loaded as text (SQLite compares "
                "such values as text too, but arithmetic on them fails on PostgreSQL)"
            )
        return None


def _affinity_type(declared: str) -> str:
    """SQLite's type affinity rules, for a column without values."""
    if "INT" in declared:
        return "bigint"
    if any(k in declared for k in ("CHAR", "CLOB", "TEXT")) or not declared:
        return "text"
    if "BLOB" in declared:
        return "bytea"
    if any(k in declared for k in ("REAL", "FLOA", "DOUB")):
        return "double precision"
    return "numeric"


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _connect(path: Path) -> sqlite3.Connection:
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        con.text_factory = lambda b: b.decode("utf-8", errors="replace")
        con.execute("SELECT 1 FROM sqlite_master LIMIT 1")
    except sqlite3.Error as exc:
        raise CaseFileError(f"not a readable SQLite database: {exc}", path=str(path)) from exc
    return con


def _tables(con: sqlite3.Connection) -> list[str]:
    rows = con.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
        "ORDER BY name"
    )
    return [r[0] for r in rows]


def _scan(con: sqlite3.Connection, table: str) -> list[_Column]:
    cols = [_Column(r[1], r[2] or "") for r in con.execute(f"PRAGMA table_info({quote(table)})")]
    for row in con.execute(f"SELECT * FROM {quote(table)}"):
        for col, value in zip(cols, row, strict=True):
            col.kinds.add(type(value))
            if isinstance(value, str) and col.whole_texts:
                if not _WHOLE.fullmatch(value):
                    col.whole_texts = False
                elif abs(int(value)) > INT32:
                    col.big = True
            if isinstance(value, int) and abs(value) > INT32:
                col.big = True
                if abs(value) > INT64:
                    col.kinds.add(str)  # beyond bigint: keep its digits as text
    return cols


def _copy_value(value: Any, pg_type: str) -> str:
    if value is None:
        return "\\N"
    if isinstance(value, bytes):
        return "\\\\x" + value.hex() if pg_type == "bytea" else _escape(value.decode("utf-8", "replace"))
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    return _escape(str(value))


def _escape(text: str) -> str:
    text = text.replace("\x00", "")  # PostgreSQL text cannot hold NUL
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def _rows(con: sqlite3.Connection, table: str, types: list[str]) -> Iterator[str]:
    for row in con.execute(f"SELECT * FROM {quote(table)}"):
        yield "\t".join(_copy_value(v, t) for v, t in zip(row, types, strict=True)) + "\n"


def convert_sqlite(path: Path, out: TextIO) -> tuple[SqliteSchema, list[str]]:
    """Write the PostgreSQL fixture of the SQLite database at `path` to `out`; its schema and the warnings."""
    con = _connect(path)
    schema, warnings = SqliteSchema(), list[str]()
    try:
        out.write(f"-- {path.name}, converted from SQLite by `sqlcanary import` (names lowercased)\n")
        scanned = {table: _scan(con, table) for table in _tables(con)}
        numbers = {
            c.name.lower() for cols in scanned.values() for c in cols if c.kinds - {type(None)} <= {int}
        }
        for table, cols in scanned.items():
            for c in cols:
                c.key = c.name.lower() in numbers
            name = table.lower()
            schema.tables[name] = tuple(c.name.lower() for c in cols)
            types = [c.pg_type() for c in cols]
            warnings.extend(w for c in cols if (w := c.warning(table)))
            body = ",\n".join(f"  {quote(c.name.lower())} {t}" for c, t in zip(cols, types, strict=True))
            out.write(f"\nCREATE TABLE {quote(name)} (\n{body}\n);\n")
            columns = ", ".join(quote(c.name.lower()) for c in cols)
            out.write(f"COPY {quote(name)} ({columns}) FROM stdin;\n")
            out.writelines(_rows(con, table, types))
            out.write("\\.\n")
    except sqlite3.Error as exc:
        raise CaseFileError(f"cannot read the SQLite database: {exc}", path=str(path)) from exc
    finally:
        con.close()
    if not schema.tables:
        raise CaseFileError("the SQLite database has no tables", path=str(path))
    return schema, warnings
