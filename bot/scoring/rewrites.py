"""Canonicalising passes that read the meaning of a query, not only its spelling (see `bot.scoring.canonical`):
ranges on `date` columns (the live schema says which columns are dates) and a correlated `EXISTS` as `IN`.
"""

from __future__ import annotations

import datetime as dt
import re
from functools import reduce
from typing import Any

from sqlglot import exp

from bot.scoring.canonical import _MIRROR, _chain, _type_of, _typed

_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def date_ranges(expr: exp.Expr, ctx: Any) -> exp.Expr:
    """On a `date` column, ranges have one spelling: `d < '2025-12-01'` is `d <= '2025-11-30'`, `d > x` is
    `d >= x + 1 day`, and `date_trunc('month', d) = '2025-12-01'` is `d >= '2025-12-01' AND d <= '2025-12-31'`."""
    _typed(expr, ctx)
    for node in list(expr.find_all(exp.GT, exp.LT, exp.EQ)):
        left, right = node.this, node.expression
        if isinstance(left, exp.Literal) and not isinstance(right, exp.Literal):
            left, right, kind = right, left, _MIRROR[type(node)]
        else:
            kind = type(node)
        day = _iso_day(right)
        if day is None:
            continue
        if kind is exp.EQ:
            bounds = _truncated_range(left, day)
            if bounds:
                column, low, high = bounds
                node.replace(
                    exp.And(
                        this=exp.GTE(this=column.copy(), expression=_day(low)),
                        expression=exp.LTE(this=column.copy(), expression=_day(high)),
                    )
                )
        elif _is_date_column(left):
            shifted, new = (
                (day - dt.timedelta(days=1), exp.LTE)
                if kind is exp.LT
                else (day + dt.timedelta(days=1), exp.GTE)
            )
            node.replace(new(this=left.copy(), expression=_day(shifted)))
    return expr


def _iso_day(node: exp.Expr) -> dt.date | None:
    if not (isinstance(node, exp.Literal) and node.is_string and _ISO_DATE.fullmatch(node.name)):
        return None
    try:
        return dt.date.fromisoformat(node.name)
    except ValueError:
        return None


def _day(day: dt.date) -> exp.Literal:
    return exp.Literal.string(day.isoformat())


def _is_date_column(node: exp.Expr) -> bool:
    return isinstance(node, exp.Column) and _type_of(node) == exp.DType.DATE


def _truncated_range(node: exp.Expr, day: dt.date) -> tuple[exp.Expr, dt.date, dt.date] | None:
    """For `date_trunc(unit, d)` of a date column with `day` on a unit boundary: (d, first day, last day)."""
    if isinstance(node, exp.Cast) and node.to.this == exp.DType.DATE:
        node = node.this
    if not isinstance(node, exp.TimestampTrunc | exp.DateTrunc) or not _is_date_column(node.this):
        return None
    unit = node.args.get("unit")
    months = {"MONTH": 1, "QUARTER": 3, "YEAR": 12}.get(unit.name.upper() if unit is not None else "")
    if unit is not None and unit.name.upper() == "DAY":
        return node.this, day, day
    if months is None or day.day != 1 or (day.month - 1) % months:
        return None
    index = day.year * 12 + day.month - 1 + months
    end = dt.date(index // 12, index % 12 + 1, 1) - dt.timedelta(days=1)
    return node.this, day, end


def exists_to_in(expr: exp.Expr, ctx: Any) -> exp.Expr:
    """`EXISTS (SELECT 1 FROM s WHERE s.k = o.k AND rest)` is `o.k IN (SELECT s.k FROM s WHERE rest)` where it is
    a conjunct of a WHERE (not under NOT: `NOT IN` and `NOT EXISTS` differ on NULLs)."""
    for node in list(expr.find_all(exp.Exists)):
        parent = node.parent
        while isinstance(parent, exp.And):
            parent = parent.parent
        query = node.this
        if not isinstance(parent, exp.Where) or not isinstance(query, exp.Select) or query.args.get("joins"):
            continue
        if any(query.args.get(k) for k in ("group", "having", "limit", "offset", "with_", "with")):
            continue
        source = query.args.get("from_") or query.args.get("from")
        where = query.args.get("where")
        if not isinstance(source, exp.From) or not isinstance(source.this, exp.Table) or where is None:
            continue
        inner = source.this.alias_or_name
        conjuncts = _chain(where.this, exp.And)
        links = [c for c in conjuncts if _correlation(c, inner)]
        rest = [c for c in conjuncts if c not in links]
        if len(links) != 1 or any(col.table != inner for c in rest for col in c.find_all(exp.Column)):
            continue
        link = _correlation(links[0], inner)
        if link is None:
            continue
        inner_col, outer_col = link
        subquery = exp.select(inner_col.copy()).from_(source.this.copy())
        if rest:
            subquery = subquery.where(
                reduce(lambda a, b: exp.And(this=a, expression=b), [c.copy() for c in rest])
            )
        node.replace(exp.In(this=outer_col.copy(), query=exp.Subquery(this=subquery)))
    return expr


def _correlation(node: exp.Expr, inner: str) -> tuple[exp.Column, exp.Column] | None:
    """(inner column, outer column) of an equality `inner.k = outer.k`, else None."""
    if not isinstance(node, exp.EQ):
        return None
    left, right = node.this, node.expression
    if not (isinstance(left, exp.Column) and isinstance(right, exp.Column) and left.table and right.table):
        return None
    if left.table == inner and right.table != inner:
        return left, right
    if right.table == inner and left.table != inner:
        return right, left
    return None
