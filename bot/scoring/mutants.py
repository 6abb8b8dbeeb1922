"""The gold's likely-wrong neighbours (issue 18): each mutant is the gold with one change a text-to-SQL model
plausibly makes. Perturbed copies are distilled against them, as in Zhong, Yu and Klein (EMNLP 2020): a set of
copies is good when every mutant returns other rows than the gold on at least one copy. Pure: no database."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from itertools import zip_longest

from sqlglot import exp

from bot.scoring.perturb_sql import conjuncts, parse_statement, render

Change = Callable[[exp.Expr], object]  # mutates the copy's node in place (or replaces it)

_FLIP: dict[type[exp.Expr], type[exp.Expr]] = {
    exp.LT: exp.LTE,
    exp.LTE: exp.LT,
    exp.GT: exp.GTE,
    exp.GTE: exp.GT,
    exp.EQ: exp.NEQ,
    exp.NEQ: exp.EQ,
}
_DATE = re.compile(r"(\d{4}-\d{2}-\d{2})(.*)", re.DOTALL)


def gold_mutants(gold_sql: str, limit: int = 12) -> tuple[str, ...]:
    """Up to `limit` single-change neighbours of the gold, rendered for PostgreSQL, deduplicated, none equal to
    the gold's own rendering; unparsable SQL gives (). The kinds take turns (one of each, in the order of
    `_OPERATORS`, then a second of each...) so that a small limit still covers every kind the gold allows;
    inside a kind, the gold's nodes come in sqlglot's walk order (breadth first)."""
    tree = parse_statement(gold_sql)
    if tree is None or limit <= 0:
        return ()
    nodes = list(tree.walk())
    per_kind = [[(i, change) for i, node in enumerate(nodes) for change in op(node)] for op in _OPERATORS]
    seen = {render(tree)}
    found: list[str] = []
    for row in zip_longest(*per_kind):
        for candidate in row:
            if candidate is None:
                continue
            text = _apply(tree, *candidate)
            if text is not None and text not in seen:
                seen.add(text)
                found.append(text)
                if len(found) == limit:
                    return tuple(found)
    return tuple(found)


def _apply(tree: exp.Expr, index: int, change: Change) -> str | None:
    copy = tree.copy()
    node = list(copy.walk())[index]
    change(node)
    return render(copy)


def _comparison(node: exp.Expr) -> list[Change]:
    """`<` ↔ `<=`, `>` ↔ `>=`, `=` ↔ `<>` (not on a column = column join condition)."""
    new = _FLIP.get(type(node))
    if new is None or (isinstance(node.this, exp.Column) and isinstance(node.expression, exp.Column)):
        return []
    return [lambda n: n.replace(new(this=n.this, expression=n.expression))]


def _join(node: exp.Expr) -> list[Change]:
    """INNER JOIN → LEFT JOIN, LEFT JOIN → INNER JOIN (joins with an ON condition only)."""
    if not isinstance(node, exp.Join) or node.args.get("on") is None:
        return []
    side, kind = str(node.args.get("side") or "").upper(), str(node.args.get("kind") or "").upper()
    if side == "LEFT":
        return [lambda n: _set_join(n, None)]
    if not side and kind in ("", "INNER"):
        return [lambda n: _set_join(n, "LEFT")]
    return []


def _set_join(join: exp.Expr, side: str | None) -> None:
    join.set("side", side)
    join.set("kind", None)


def _count(node: exp.Expr) -> list[Change]:
    """COUNT(col) → COUNT(*); COUNT(*) → COUNT(the right side's join column) under a LEFT JOIN."""
    if not isinstance(node, exp.Count):
        return []
    if isinstance(node.this, exp.Star):
        column = _left_joined_column(node)
        return [lambda n: n.set("this", column.copy())] if column is not None else []
    if isinstance(node.this, exp.Column):
        return [lambda n: n.set("this", exp.Star())]
    return []


def _left_joined_column(node: exp.Expr) -> exp.Column | None:
    select = node.parent_select
    joins = select.args.get("joins") if select is not None else None
    for join in joins or []:
        on, alias = join.args.get("on"), join.this.alias_or_name
        if str(join.args.get("side") or "").upper() != "LEFT" or on is None:
            continue
        for eq in on.find_all(exp.EQ):
            sides = [s for s in (eq.this, eq.expression) if isinstance(s, exp.Column) and s.table == alias]
            if sides:
                return sides[0]
    return None


def _distinct(node: exp.Expr) -> list[Change]:
    """SELECT → SELECT DISTINCT and back; COUNT(DISTINCT x) → COUNT(x)."""
    if isinstance(node, exp.Select):
        if node.args.get("distinct"):
            return [lambda n: n.set("distinct", None)]
        return [lambda n: n.set("distinct", exp.Distinct())] if _may_repeat_rows(node) else []
    if (
        isinstance(node, exp.Count)
        and isinstance(node.this, exp.Distinct)
        and len(node.this.expressions) == 1
    ):
        return [lambda n: n.set("this", n.this.expressions[0])]
    return []


def _may_repeat_rows(select: exp.Select) -> bool:
    """Adding DISTINCT can change the rows: a FROM, not one aggregate row, not the inside of IN/EXISTS."""
    if not (select.args.get("from_") or select.args.get("from")) or isinstance(
        select.parent, exp.In | exp.Exists
    ):
        return False
    if isinstance(select.parent, exp.Subquery) and isinstance(select.parent.parent, exp.In | exp.Exists):
        return False
    aggregated = any(e.find(exp.AggFunc) and not e.find(exp.Window) for e in select.expressions)
    return bool(select.args.get("group")) or not aggregated


def _order(node: exp.Expr) -> list[Change]:
    """ASC ↔ DESC on one ORDER BY key; NULLS FIRST/LAST follows the new direction unless the gold spelled it."""
    if not isinstance(node, exp.Ordered):
        return []

    def flip(n: exp.Expr) -> None:
        desc = bool(n.args.get("desc"))
        if bool(n.args.get("nulls_first")) == desc:  # the default placement for its direction
            n.set("nulls_first", not desc)
        n.set("desc", not desc)

    return [flip]


def _drop_conjunct(node: exp.Expr) -> list[Change]:
    """Drop one of a WHERE's top-level AND conjuncts: the whole WHERE when it has one (an aggregate's
    FILTER (WHERE c) goes with it)."""
    if not (isinstance(node, exp.Where) and isinstance(node.parent, exp.Select | exp.Filter)):
        return []
    return [_dropping(k) for k in range(len(conjuncts(node.this)))]


def _dropping(k: int) -> Change:
    def drop(where: exp.Expr) -> None:
        rest = [c for i, c in enumerate(conjuncts(where.this)) if i != k]
        if rest:
            where.set("this", exp.and_(*rest, copy=False))
        elif isinstance(where.parent, exp.Filter):
            where.parent.replace(where.parent.this)
        else:
            where.pop()

    return drop


def _and_to_or(node: exp.Expr) -> list[Change]:
    """One AND between two conditions of a WHERE becomes OR (parenthesised, so nothing else regroups)."""
    if not (isinstance(node, exp.And) and isinstance(node.find_ancestor(exp.Where, exp.Select), exp.Where)):
        return []
    return [lambda n: n.replace(exp.Paren(this=exp.Or(this=n.this, expression=n.expression)))]


def _is_null(node: exp.Expr) -> list[Change]:
    """IS NULL ↔ IS NOT NULL."""
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        if isinstance(node.parent, exp.Not):
            return [lambda n: n.parent.replace(n)]
        return [lambda n: n.set("negate", not n.args.get("negate"))]
    return []


def _limit(node: exp.Expr) -> list[Change]:
    """LIMIT n → LIMIT n + 1."""
    count = node.expression if isinstance(node, exp.Limit) else None
    if isinstance(count, exp.Literal) and count.is_int:
        return [lambda n: n.set("expression", exp.Literal.number(int(n.expression.name) + 1))]
    return []


def _date_shift(node: exp.Expr) -> list[Change]:
    """A date constant ('YYYY-MM-DD', possibly with a time) one day earlier, or one day later."""
    if not (isinstance(node, exp.Literal) and node.is_string):
        return []
    match = _DATE.fullmatch(node.name)
    try:
        day = dt.date.fromisoformat(match.group(1)) if match else None
    except ValueError:
        day = None
    if day is None or not (match and (not match.group(2) or match.group(2)[0] in " T")):
        return []
    return [
        _replace_by(exp.Literal.string((day + dt.timedelta(days=d)).isoformat() + match.group(2)))
        for d in (-1, 1)
    ]


def _replace_by(new: exp.Expr) -> Change:
    return lambda n: n.replace(new.copy())


_OPERATORS: tuple[Callable[[exp.Expr], list[Change]], ...] = (
    _comparison,
    _join,
    _count,
    _distinct,
    _order,
    _drop_conjunct,
    _and_to_or,
    _is_null,
    _limit,
    _date_shift,
)
