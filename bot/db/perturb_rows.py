"""Rows of a perturbed copy, read and written as the restricted role: a table's columns (types, NOT NULL, keys),
rows picked by a seeded hash, values no row holds yet, and copies of rows inserted with some columns changed.
bot/db/perturb_changes.py says which."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from psycopg2 import sql

INTEGER = {"smallint", "integer", "bigint"}
TEXT = {"text", "character varying", "character"}


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    not_null: bool
    # GENERATED ALWAYS AS (...): never written (identity and serial columns are, with fresh values when keys)
    generated: bool
    unique: bool


def table_columns(cur: Any, table: str) -> dict[str, Column] | None:
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


def table_ident(table: str) -> sql.Composable:
    return sql.SQL(".").join(sql.Identifier(p) for p in table.split(".", 1))


def picked_rows(
    table: sql.Composable, where: str | None, rows: int, seed: str, *, also: sql.Composable | None = None
) -> sql.Composable:
    """The ctids of `rows` rows (those satisfying `where` and `also` when given), picked by a seeded hash."""
    conds = [sql.SQL(f"({where})") if where else sql.SQL("true")] + ([also] if also is not None else [])
    cond = sql.SQL(" AND ").join(conds)
    return sql.SQL("SELECT ctid FROM {t} WHERE {c} ORDER BY md5(ctid::text || {s}) LIMIT {n}").format(
        t=table, c=cond, s=sql.Literal(str(seed)), n=sql.Literal(rows)
    )


def fresh_value(col: Column, table: sql.Composable, n: str) -> sql.Composable | None:
    """A value of `col` no existing row holds (for keys and join columns), or None for types without one. Text
    keeps its beginning (so a pattern the gold filters on still matches) within the column's length. `n` is an
    SQL expression unique per row and change (salted): two changes' new keys never meet by accident."""
    ident = sql.Identifier(col.name)
    if col.type in INTEGER or col.type.startswith("numeric") or col.type in ("double precision", "real"):
        return sql.SQL("(SELECT coalesce(max({c}), 0) FROM {t}) + {n}").format(c=ident, t=table, n=sql.SQL(n))
    if col.type in TEXT or col.type.startswith("character"):
        m = re.search(r"\((\d+)\)", col.type)
        width = int(m.group(1)) if m else 44
        suffix = sql.SQL("'~' || lpad(({n} % 1000)::text, 3, '0')").format(n=sql.SQL(n))
        return sql.SQL("left({c}, {keep}) || {suffix}").format(
            c=ident, keep=sql.Literal(max(width - 4, 0)), suffix=suffix
        )
    return None


def salted(seed: str) -> str:
    """1000 + 10 x the change's position in its copy + the row's number: fresh keys apart per change."""
    position = int(seed.rsplit(":", 1)[-1]) if seed.rsplit(":", 1)[-1].isdigit() else 0
    return f"({1000 + 10 * position} + row_number() OVER ())"


def insert_copies(
    cur: Any,
    cols: dict[str, Column],
    table: sql.Composable,
    picked: sql.Composable,
    overrides: Mapping[str, sql.Composable | None],
    *,
    salt: str,
    distinct_text: bool = False,
    returning: str | None = None,
) -> list[Any]:
    """INSERT copies of the `picked` rows (a query of their ctids): generated columns left out, single-column
    keys made fresh (a serial's sequence may lag behind rows a fixture inserted with their ids, so keys are never
    left to it), `overrides` set (None: left to its default), and with `distinct_text` every text column made new
    too (a copied parent is then a group of its own wherever the gold groups by its name). Returns the new rows'
    `returning` column (their count's worth of None without one); [] when a key cannot be made fresh."""
    names: list[sql.Composable] = []
    values: list[sql.Composable] = []
    for col in cols.values():
        if col.name in overrides:
            value = overrides[col.name]
            if value is None:
                continue
        elif col.generated:
            continue
        elif col.unique or (distinct_text and (col.type in TEXT or col.type.startswith("character"))):
            fresh = fresh_value(col, table, salt)
            if fresh is None:
                return []
            value = fresh
        else:
            value = sql.Identifier(col.name)
        names.append(sql.Identifier(col.name))
        values.append(value)
    if not names:
        return []
    back = sql.SQL(" RETURNING {}").format(sql.Identifier(returning)) if returning else sql.SQL("")
    cur.execute(
        sql.SQL(
            "INSERT INTO {t} ({cols}) OVERRIDING SYSTEM VALUE SELECT {vals} FROM {t} WHERE ctid IN ({picked}){back}"
        ).format(
            t=table, cols=sql.SQL(", ").join(names), vals=sql.SQL(", ").join(values), picked=picked, back=back
        )
    )
    return [r[0] for r in cur.fetchall()] if returning else [None] * int(cur.rowcount)


def update_rows(
    cur: Any, table: sql.Composable, column: str, value: sql.Composable, picked: sql.Composable
) -> int:
    cur.execute(
        sql.SQL("UPDATE {t} SET {c} = {v} WHERE ctid IN ({picked})").format(
            t=table, c=sql.Identifier(column), v=value, picked=picked
        )
    )
    return int(cur.rowcount)
