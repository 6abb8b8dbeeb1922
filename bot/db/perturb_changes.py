"""Changes that make a perturbed copy of a database: each one UPDATEs or INSERTs a few rows of one table, as the
restricted role, under its own savepoint, so a change the schema refuses (NOT NULL, a key, a foreign key, a CHECK)
is dropped and the copy stays a database the schema allows.

A Change's `value` and `where` are SQL text rendered by bot/scoring/perturb_targets.py from the gold's parse tree
(literals, columns and an allowlist of pure functions only); they are still run as the runner role, never as the
admin, since the gold comes from the pull request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Literal

import psycopg2
from psycopg2 import sql

Action = Literal["set", "null", "tie", "period", "duplicate", "orphan"]
PERIODS = {
    "month_start": "date_trunc('month', {c})",
    "month_end": "date_trunc('month', {c}) + interval '1 month' - interval '1 microsecond'",
    "year_start": "date_trunc('year', {c})",
    "year_end": "date_trunc('year', {c}) + interval '1 year' - interval '1 microsecond'",
    "day_start": "date_trunc('day', {c})",
    "day_end": "date_trunc('day', {c}) + interval '1 day' - interval '1 microsecond'",
}
_INTEGER = {"smallint", "integer", "bigint"}
_TEXT = {"text", "character varying", "character"}
_TIME = ("date", "timestamp")


@dataclass(frozen=True)
class Change:
    """One change to one table: `set` column = value, `null`, `tie` (column = its minimum or maximum, `value`
    "min"/"max"), `period` (the column moved to an edge of its period, `value` a key of PERIODS), `duplicate`
    (copies of rows, keys made fresh) or `orphan` (a copy of a row whose `column` points at no partner)."""

    action: Action
    table: str
    column: str | None = None
    value: str | None = None
    where: str | None = None  # rows worth changing: the gold's other conditions on this table
    rows: int = 1  # one row: the least change that moves a boundary, and the rest of the data stays as it was
    # set/null/tie/period: change the picked rows themselves, rather than add changed copies of them (a real row
    # then leaves the gold's result, or a group loses its last row of a kind)
    in_place: bool = False

    def describe(self, *, added: bool = False) -> str:
        """In words: `added` when the change was made on copies of rows (the real rows left as they were)."""
        rows = f"{self.rows} row{'s' if self.rows != 1 else ''}" + (
            f" where {self.where}" if self.where else ""
        )
        target = f"{self.table}.{self.column}" if self.column else self.table
        value = {
            "set": f"= {self.value}",
            "null": "NULL",
            "tie": f"tied at its {self.value}",
            "period": f"at the {str(self.value).replace('_', ' ')} of its period",
        }.get(self.action, "")
        if self.action == "duplicate":
            return f"duplicates of {rows} of {self.table}"
        if self.action == "orphan":
            how = "NULL" if self.value == "null" else "without a partner"
            how += " (its text made new)" if self.value == "distinct" else ""
            return f"copies of {rows} of {self.table} with {self.column} {how}"
        if added:
            return f"copies of {rows} of {self.table} with {self.column} {value}"
        return f"{target} {value} on {rows}"


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    not_null: bool
    generated: (
        bool  # GENERATED ALWAYS AS (...): never written; identity and serial columns are (fresh when keys)
    )
    unique: bool


def _columns(cur: Any, table: str) -> dict[str, Column] | None:
    cur.execute("SELECT to_regclass(%s)::oid", (table,))
    row = cur.fetchone()
    if not row or row[0] is None:
        return None
    oid = row[0]
    cur.execute(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,"
        " a.attgenerated <> '',"
        " EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisunique"
        "         AND i.indnkeyatts = 1 AND i.indkey[0] = a.attnum)"
        " FROM pg_attribute a"
        " WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
        (oid,),
    )
    return {r[0]: Column(r[0], r[1], r[2], r[3], r[4]) for r in cur.fetchall()}


def _table_ident(table: str) -> sql.Composable:
    return sql.SQL(".").join(sql.Identifier(p) for p in table.split(".", 1))


def _picked(table: sql.Composable, where: str | None, rows: int, seed: str) -> sql.Composable:
    """The ctids of `rows` rows (those satisfying `where` when it is given), picked by a seeded hash."""
    cond = sql.SQL(where) if where else sql.SQL("true")
    return sql.SQL("SELECT ctid FROM {t} WHERE {c} ORDER BY md5(ctid::text || {s}) LIMIT {n}").format(
        t=table, c=cond, s=sql.Literal(str(seed)), n=sql.Literal(rows)
    )


def _fresh(col: Column, table: sql.Composable, n: str) -> sql.Composable | None:
    """A value of `col` no existing row holds (for keys and join columns), or None for types without one. Text
    keeps its beginning (so a pattern the gold filters on still matches) within the column's length. `n` is an
    SQL expression unique per row and change (_salted): two changes' new keys never meet by accident."""
    ident = sql.Identifier(col.name)
    if col.type in _INTEGER or col.type.startswith("numeric") or col.type in ("double precision", "real"):
        return sql.SQL("(SELECT coalesce(max({c}), 0) FROM {t}) + {n}").format(c=ident, t=table, n=sql.SQL(n))
    if col.type in _TEXT or col.type.startswith("character"):
        m = re.search(r"\((\d+)\)", col.type)
        width = int(m.group(1)) if m else 44
        suffix = sql.SQL("'~' || lpad(({n} % 1000)::text, 3, '0')").format(n=sql.SQL(n))
        return sql.SQL("left({c}, {keep}) || {suffix}").format(
            c=ident, keep=sql.Literal(max(width - 4, 0)), suffix=suffix
        )
    return None


def _salted(seed: str) -> str:
    """1000 + 10 x the change's position in its copy + the row's number: fresh keys apart per change."""
    position = int(seed.rsplit(":", 1)[-1]) if seed.rsplit(":", 1)[-1].isdigit() else 0
    return f"({1000 + 10 * position} + row_number() OVER ())"


def _insert_copies(
    cur: Any,
    change: Change,
    cols: dict[str, Column],
    table: sql.Composable,
    seed: str,
    overrides: dict[str, sql.Composable | None],
    *,
    distinct_text: bool = False,
) -> int:
    """INSERT copies of the picked rows: generated columns left out, single-column keys made fresh (a serial's
    sequence may lag behind rows a fixture inserted with their ids, so keys are never left to it),
    `overrides` set (None: left to its default), and with `distinct_text` every text column made new too (a
    copied parent is then a group of its own wherever the gold groups by its name). 0 when a key cannot be made
    fresh."""
    names: list[sql.Composable] = []
    values: list[sql.Composable] = []
    for col in cols.values():
        if col.name in overrides:
            value = overrides[col.name]
            if value is None:
                continue
        elif col.generated:
            continue
        elif col.unique or (distinct_text and (col.type in _TEXT or col.type.startswith("character"))):
            fresh = _fresh(col, table, _salted(seed))
            if fresh is None:
                return 0
            value = fresh
        else:
            value = sql.Identifier(col.name)
        names.append(sql.Identifier(col.name))
        values.append(value)
    if not names:
        return 0
    cur.execute(
        sql.SQL(
            "INSERT INTO {t} ({cols}) OVERRIDING SYSTEM VALUE SELECT {vals} FROM {t} WHERE ctid IN ({picked})"
        ).format(
            t=table,
            cols=sql.SQL(", ").join(names),
            vals=sql.SQL(", ").join(values),
            picked=_picked(table, change.where, change.rows, seed),
        )
    )
    return int(cur.rowcount)


def _new_value(change: Change, col: Column, table: sql.Composable) -> sql.Composable | None:
    """What `set`, `null`, `tie` and `period` give the column (of a copied row, or of the row itself)."""
    ident = sql.Identifier(col.name)
    if change.action == "set":
        return sql.SQL("({v})::{ty}").format(v=sql.SQL(change.value or "NULL"), ty=sql.SQL(col.type))
    if change.action == "null":
        return None if col.not_null else sql.SQL("NULL")
    if change.action == "tie":
        agg = sql.SQL("max" if change.value == "max" else "min")
        return sql.SQL("(SELECT {a}({c}) FROM {t})").format(a=agg, c=ident, t=table)
    if not col.type.startswith(_TIME):  # period
        return None
    expr = PERIODS.get(change.value or "", PERIODS["month_start"]).format(c="{c}")
    return sql.SQL("(" + expr + ")::{ty}").format(c=ident, ty=sql.SQL(col.type))


def _update(
    cur: Any, change: Change, col: Column, value: sql.Composable, table: sql.Composable, seed: str
) -> int:
    cur.execute(
        sql.SQL("UPDATE {t} SET {c} = {v} WHERE ctid IN ({picked})").format(
            t=table,
            c=sql.Identifier(col.name),
            v=value,
            picked=_picked(table, change.where, change.rows, seed),
        )
    )
    return int(cur.rowcount)


def _apply(cur: Any, change: Change, seed: str) -> tuple[int, bool]:
    """(rows, added): the change made by adding copies of rows, which leaves every real row as it was, else
    (a key that cannot be made fresh, a constraint the copy breaks) by changing the rows themselves."""
    cols = _columns(cur, change.table)
    if cols is None:
        return 0, False
    table = _table_ident(change.table)
    if change.action == "duplicate":
        return _insert_copies(cur, change, cols, table, seed, {}), True
    col = cols.get(change.column or "")
    if col is None:
        return 0, False
    if change.action == "orphan":
        override: sql.Composable | None
        if change.value == "null":
            override = None if col.not_null else sql.SQL("NULL")
            if override is None:
                return 0, False
        else:
            override = _fresh(col, table, _salted(seed))
            if override is None:
                return 0, False
        distinct = change.value == "distinct"
        return _insert_copies(
            cur, change, cols, table, seed, {col.name: override}, distinct_text=distinct
        ), True
    value = _new_value(change, col, table)
    if value is None:
        return 0, False
    if change.in_place:
        return _update(cur, change, col, value, table, seed), False
    cur.execute("SAVEPOINT added")
    try:
        n = _insert_copies(cur, change, cols, table, seed, {col.name: value})
    except psycopg2.Error:
        cur.execute("ROLLBACK TO SAVEPOINT added")
        n = 0
    if n:
        return n, True
    return _update(cur, change, col, value, table, seed), False


def _attempts(change: Change) -> list[Change]:
    """The change, then looser forms of it: without its `where` (which may pick no row), and for an orphan, its
    join column NULL instead of a value without a partner (which a foreign key refuses)."""
    forms = [change]
    if change.action == "orphan":
        forms.append(replace(change, value="null"))
    if change.where:
        forms += [replace(f, where=None) for f in forms]
    return forms


def apply_changes(conn: Any, changes: list[Change], *, seed: int) -> tuple[str, ...]:
    """Apply `changes` in one transaction on `conn` (the runner role's, on the copy being built); each under a
    savepoint, in the first of its forms (_attempts) that the schema accepts and that changes a row; each picks
    its rows by a hash seeded with `seed` and its position. Returns what was applied, described."""
    applied: list[str] = []
    with conn.cursor() as cur:
        for i, change in enumerate(changes):
            for attempt in _attempts(change):
                cur.execute(f"SAVEPOINT c{i}")
                try:
                    n, added = _apply(cur, attempt, f"{seed}:{i}")
                except psycopg2.Error:
                    cur.execute(f"ROLLBACK TO SAVEPOINT c{i}")
                    n, added = 0, False
                else:
                    cur.execute(f"RELEASE SAVEPOINT c{i}")
                if n:
                    applied.append(replace(attempt, rows=n).describe(added=added))
                    break
    conn.commit()
    return tuple(applied)
