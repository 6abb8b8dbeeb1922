"""Changes that make a perturbed copy of a database: each one UPDATEs or INSERTs a few rows of one table, as the
restricted role, under its own savepoint, so a change the schema refuses (NOT NULL, a key, a foreign key, a CHECK)
is dropped and the copy stays a database the schema allows.

A Change's `value` and `where` are SQL text rendered by bot/scoring/perturb_targets.py from the gold's parse tree
(literals, columns and an allowlist of pure functions only); they are still run as the runner role, never as the
admin, since the gold comes from the pull request.
"""

from __future__ import annotations

from dataclasses import dataclass
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
    rows: int = 2

    def describe(self) -> str:
        target = f"{self.table}.{self.column}" if self.column else self.table
        what = {
            "set": f"{target} = {self.value}",
            "null": f"{target} = NULL",
            "tie": f"{target} tied at its {self.value}",
            "period": f"{target} at the {str(self.value).replace('_', ' ')} of its period",
            "duplicate": f"duplicate rows of {target}",
            "orphan": f"rows of {self.table} whose {self.column} has no partner",
        }[self.action]
        return f"{what} ({self.rows} row{'s' if self.rows != 1 else ''}" + (
            f" where {self.where})" if self.where else ")"
        )


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    not_null: bool
    generated: bool  # identity, serial or GENERATED: left to its default in an INSERT
    unique: bool


def _columns(cur: Any, table: str) -> dict[str, Column] | None:
    cur.execute("SELECT to_regclass(%s)::oid", (table,))
    row = cur.fetchone()
    if not row or row[0] is None:
        return None
    oid = row[0]
    cur.execute(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,"
        " a.attidentity <> '' OR a.attgenerated <> '' OR coalesce(pg_get_expr(d.adbin, d.adrelid) LIKE"
        " 'nextval(%%', false),"
        " EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisunique"
        "         AND i.indnkeyatts = 1 AND i.indkey[0] = a.attnum)"
        " FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
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
    """A value of `col` no existing row holds (for keys and join columns), or None for types without one."""
    ident = sql.Identifier(col.name)
    if col.type in _INTEGER:
        return sql.SQL("(SELECT coalesce(max({c}), 0) FROM {t}) + 1000 + {n}").format(
            c=ident, t=table, n=sql.SQL(n)
        )
    if col.type in _TEXT or col.type.startswith("character"):
        return sql.SQL("left({c}, 40) || '~' || {n}::text").format(c=ident, n=sql.SQL(n))
    if col.type in ("numeric", "double precision", "real") or col.type.startswith("numeric"):
        return sql.SQL("(SELECT coalesce(max({c}), 0) FROM {t}) + 1000 + {n}").format(
            c=ident, t=table, n=sql.SQL(n)
        )
    return None


def _insert_copies(
    cur: Any, change: Change, cols: dict[str, Column], table: sql.Composable, seed: str, orphan: str | None
) -> int:
    names: list[sql.Composable] = []
    values: list[sql.Composable] = []
    for col in cols.values():
        if col.generated:
            continue
        value: sql.Composable | None = sql.Identifier(col.name)
        if col.unique or col.name == orphan:
            value = _fresh(col, table, "row_number() OVER ()")
            if value is None and col.name == orphan and not col.not_null:
                value = sql.SQL("NULL")
        if value is None:
            return 0
        names.append(sql.Identifier(col.name))
        values.append(value)
    if not names:
        return 0
    cur.execute(
        sql.SQL("INSERT INTO {t} ({cols}) SELECT {vals} FROM {t} WHERE ctid IN ({picked})").format(
            t=table,
            cols=sql.SQL(", ").join(names),
            vals=sql.SQL(", ").join(values),
            picked=_picked(table, change.where, change.rows, seed),
        )
    )
    return int(cur.rowcount)


def _update(cur: Any, change: Change, col: Column, table: sql.Composable, seed: str) -> int:
    ident = sql.Identifier(change.column or "")
    if change.action == "set":
        value: sql.Composable = sql.SQL("({v})::{ty}").format(
            v=sql.SQL(change.value or "NULL"), ty=sql.SQL(col.type)
        )
    elif change.action == "null":
        if col.not_null:
            return 0
        value = sql.SQL("NULL")
    elif change.action == "tie":
        agg = sql.SQL("max" if change.value == "max" else "min")
        value = sql.SQL("(SELECT {a}({c}) FROM {t})").format(a=agg, c=ident, t=table)
    else:  # period
        if not col.type.startswith(_TIME):
            return 0
        expr = PERIODS.get(change.value or "", PERIODS["month_start"]).format(c="{c}")
        value = sql.SQL("(" + expr + ")::{ty}").format(c=ident, ty=sql.SQL(col.type))
    cur.execute(
        sql.SQL("UPDATE {t} SET {c} = {v} WHERE ctid IN ({picked})").format(
            t=table, c=ident, v=value, picked=_picked(table, change.where, change.rows, seed)
        )
    )
    return int(cur.rowcount)


def _apply(cur: Any, change: Change, seed: str) -> int:
    cols = _columns(cur, change.table)
    if cols is None:
        return 0
    table = _table_ident(change.table)
    if change.action == "duplicate":
        return _insert_copies(cur, change, cols, table, seed, orphan=None)
    col = cols.get(change.column or "")
    if col is None:
        return 0
    if change.action == "orphan":
        return _insert_copies(cur, change, cols, table, seed, orphan=col.name)
    return _update(cur, change, col, table, seed)


def apply_changes(conn: Any, changes: list[Change], *, seed: int) -> tuple[str, ...]:
    """Apply `changes` in one transaction on `conn` (the runner role's, on the copy being built); each under a
    savepoint, retried without its `where` when that picks no row; each picks its rows by a hash seeded with
    `seed` and its position. Returns what was applied, described."""
    applied: list[str] = []
    with conn.cursor() as cur:
        for i, change in enumerate(changes):
            for attempt in (change, Change(**{**change.__dict__, "where": None}) if change.where else None):
                if attempt is None:
                    break
                cur.execute(f"SAVEPOINT c{i}")
                try:
                    n = _apply(cur, attempt, f"{seed}:{i}")
                except psycopg2.Error:
                    cur.execute(f"ROLLBACK TO SAVEPOINT c{i}")
                    n = 0
                else:
                    cur.execute(f"RELEASE SAVEPOINT c{i}")
                if n:
                    applied.append(Change(**{**attempt.__dict__, "rows": n}).describe())
                    break
    conn.commit()
    return tuple(applied)
