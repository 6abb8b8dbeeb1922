"""Changes that make a perturbed copy of a database: each one UPDATEs or INSERTs a few rows of one table, as the
restricted role, under its own savepoint, so a change the schema refuses (NOT NULL, a key, a foreign key, a CHECK)
is dropped and the copy stays a database the schema allows.

A Change's `value` and `where` are SQL text rendered by bot/scoring/perturb_targets.py from the gold's parse tree
(literals, columns and an allowlist of pure functions only); they are still run as the runner role, never as the
admin, since the gold comes from the pull request.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

import psycopg2
from psycopg2 import sql

from bot.db.perturb_rows import (
    Column,
    fresh_value,
    insert_copies,
    picked_rows,
    salted,
    table_columns,
    table_ident,
    update_rows,
)

Action = Literal["set", "null", "tie", "period", "duplicate", "orphan", "family"]
PERIODS = {
    "month_start": "date_trunc('month', {c})",
    "month_end": "date_trunc('month', {c}) + interval '1 month' - interval '1 microsecond'",
    "year_start": "date_trunc('year', {c})",
    "year_end": "date_trunc('year', {c}) + interval '1 year' - interval '1 microsecond'",
    "day_start": "date_trunc('day', {c})",
    "day_end": "date_trunc('day', {c}) + interval '1 day' - interval '1 microsecond'",
}
_TIME = ("date", "timestamp")


@dataclass(frozen=True)
class Change:
    """One change to one table: `set` column = value, `null`, `tie` (column = its minimum or maximum, `value`
    "min"/"max"), `period` (the column moved to an edge of its period, `value` a key of PERIODS), `duplicate`
    (copies of rows, keys made fresh), `orphan` (a copy of a row whose `column` points at no partner) or `family`
    (a new row of `table` with `column` = `value` together with one partner row of its join, `partner`: a new
    parent whose only child sits on the boundary, or a new child of a parent at it)."""

    action: Action
    table: str
    column: str | None = None
    value: str | None = None
    where: str | None = None  # rows worth changing: the gold's other conditions on this table
    rows: int = 1  # one row: the least change that moves a boundary, and the rest of the data stays as it was
    # set/null/tie/period: change the picked rows themselves, rather than add changed copies of them (a real row
    # then leaves the gold's result, or a group loses its last row of a kind)
    in_place: bool = False
    # family: (this table's join column, the other table, its column)
    partner: tuple[str, str, str] | None = None

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
        if self.action == "family" and self.partner:
            own, other, _ = self.partner
            return f"a new row of {self.table} with {self.column} = {self.value} and a row of {other} joined on {own}"
        if added:
            new_text = " (its text made new)" if self.value == "distinct" else ""
            return f"copies of {rows} of {self.table} with {self.column} {value}{new_text}"
        return f"{target} {value} on {rows}"


def _new_value(change: Change, col: Column, table: sql.Composable) -> sql.Composable | None:
    """What `set`, `null`, `tie` and `period` give the column (of a copied row, or of the row itself)."""
    ident = sql.Identifier(col.name)
    if change.action in ("set", "family"):
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


def _apply(cur: Any, change: Change, seed: str) -> tuple[int, bool]:
    """(rows, added): the change made by adding copies of rows, which leaves every real row as it was, else
    (a key that cannot be made fresh, a constraint the copy breaks) by changing the rows themselves."""
    cols = table_columns(cur, change.table)
    if cols is None:
        return 0, False
    table = table_ident(change.table)
    picked = picked_rows(table, change.where, change.rows, seed)
    salt = salted(seed)
    if change.action == "duplicate":
        return len(insert_copies(cur, cols, table, picked, {}, salt=salt)), True
    col = cols.get(change.column or "")
    if col is None:
        return 0, False
    if change.action == "orphan":
        override = sql.SQL("NULL") if change.value == "null" else fresh_value(col, table, salt)
        if override is None or (change.value == "null" and col.not_null):
            return 0, False
        distinct = change.value == "distinct"
        return len(
            insert_copies(cur, cols, table, picked, {col.name: override}, salt=salt, distinct_text=distinct)
        ), True
    value = _new_value(change, col, table)
    if value is None:
        return 0, False
    if change.action == "family":
        return _family(cur, change, cols, value, seed), True
    if change.in_place:
        return update_rows(cur, table, col.name, value, picked), False
    cur.execute("SAVEPOINT added")
    try:
        distinct = change.action == "null" and change.value == "distinct"
        n = len(insert_copies(cur, cols, table, picked, {col.name: value}, salt=salt, distinct_text=distinct))
    except psycopg2.Error:
        cur.execute("ROLLBACK TO SAVEPOINT added")
        n = 0
    if n:
        return n, True
    return update_rows(cur, table, col.name, value, picked), False


def _family(cur: Any, change: Change, cols: dict[str, Column], value: sql.Composable, seed: str) -> int:
    """A new row of the change's table with its column at `value`, joined to new rows of the partner table: a
    copy of a row (new join value) and copies of that row's partners pointing at it; or, when only the partner
    holds the key, a new partner (new key, new text: a group of its own) and a copy of a row pointing at it."""
    assert change.partner is not None
    own, other, theirs = change.partner
    ocols = table_columns(cur, other)
    if ocols is None or own not in cols or theirs not in ocols:
        return 0
    table, otable = table_ident(change.table), table_ident(other)
    salt = salted(seed)
    if cols[own].unique or not ocols[theirs].unique:  # this side as the parent (also when neither is a key):
        # a new parent at the boundary, with copies of the source row's partners
        with_partner = sql.SQL("EXISTS (SELECT 1 FROM {o} WHERE {o}.{theirs} = {t}.{own})").format(
            o=otable, theirs=sql.Identifier(theirs), t=table, own=sql.Identifier(own)
        )
        source = picked_rows(table, change.where, 1, seed, also=with_partner)
        cur.execute(
            sql.SQL("SELECT {c} FROM {t} WHERE ctid IN ({p})").format(
                c=sql.Identifier(own), t=table, p=source
            )
        )
        row = cur.fetchone()
        key = fresh_value(cols[own], table, salt)
        if row is None or key is None:
            return 0
        new = insert_copies(
            cur, cols, table, source, {change.column or "": value, own: key}, salt=salt, returning=own
        )
        children = sql.SQL("SELECT ctid FROM {t} WHERE {c} = {v} LIMIT 3").format(
            t=otable, c=sql.Identifier(theirs), v=sql.Literal(row[0])
        )
        made = (
            insert_copies(cur, ocols, otable, children, {theirs: sql.Literal(new[0])}, salt=salt)
            if new
            else []
        )
        return len(new) if made else 0
    parent_key = fresh_value(ocols[theirs], otable, salt)
    if parent_key is None:
        return 0
    parents = insert_copies(
        cur,
        ocols,
        otable,
        picked_rows(otable, None, 1, seed),
        {theirs: parent_key},
        salt=salt,
        distinct_text=True,
        returning=theirs,
    )
    if not parents:
        return 0
    overrides = {change.column or "": value, own: sql.Literal(parents[0])}
    return len(
        insert_copies(cur, cols, table, picked_rows(table, change.where, 1, seed), overrides, salt=salt)
    )


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
                    n, added = 0, False
                if not n:  # refused, or half done (a family without its partner): nothing of it is kept
                    cur.execute(f"ROLLBACK TO SAVEPOINT c{i}")
                cur.execute(f"RELEASE SAVEPOINT c{i}")
                if n:
                    applied.append(replace(attempt, rows=n).describe(added=added))
                    break
    conn.commit()
    return tuple(applied)
