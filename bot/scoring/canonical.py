"""Canonicalising passes of the structural scorer: rewrites that keep the meaning and remove the spelling.

Each pass takes a qualified statement and a `PassContext` (`bot.scoring.normalize`) and returns it rewritten
(it may mutate it), in the style of sqlglot's optimizer rules. They exist so that two queries written
differently but meaning the same compare equal (`BETWEEN` vs a range, `DATE '2025-11-01'` vs a string compared
to a date column, `x / NULLIF(y, 0)` vs `x / y`, operands in another order), and so that the text printed from
the tree parses back to the same tree: `strip_parens` first drops the parentheses the author wrote,
`restore_parens` last puts back exactly those that precedence needs (`(a OR b) AND c` stays that).
"""

from __future__ import annotations

from functools import reduce
from typing import Any

from sqlglot import exp
from sqlglot.optimizer.annotate_types import annotate_types

DIALECT = "postgres"
_MIRROR: dict[type, type] = {exp.EQ: exp.EQ, exp.NEQ: exp.NEQ, exp.GT: exp.LT, exp.LT: exp.GT}
_MIRROR |= {exp.GTE: exp.LTE, exp.LTE: exp.GTE}
_CONSTANTS = (exp.Literal, exp.Null, exp.Boolean)
_TEMPORAL = {exp.DType.DATE, exp.DType.TIMESTAMP, exp.DType.TIMESTAMPTZ, exp.DType.DATETIME}
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.NullSafeNEQ)
# Binding strength, weakest first, as PostgreSQL parses it; what is not listed binds tightest (atoms, calls).
_PRECEDENCE: tuple[tuple[tuple[type, ...], int], ...] = (
    ((exp.Or,), 1),
    ((exp.And,), 2),
    ((exp.Not,), 3),
    ((*_COMPARISONS, exp.Is, exp.Like, exp.ILike, exp.In, exp.Between, exp.SimilarTo), 4),
    ((exp.Add, exp.Sub, exp.DPipe), 5),
    ((exp.Mul, exp.Div, exp.Mod, exp.IntDiv), 6),
    ((exp.Neg,), 7),
)
_NON_ASSOCIATIVE = (exp.Sub, exp.Div, exp.Mod, exp.IntDiv, *_COMPARISONS)


def _sql(node: exp.Expr) -> str:
    return node.sql(dialect=DIALECT)


def _typed(expr: exp.Expr, ctx: Any) -> exp.Expr:
    """Column and expression types from the live schema (no-op without one: every type stays unknown)."""
    if ctx.schema is None:
        return expr
    return annotate_types(expr, schema=ctx.schema, dialect=DIALECT)


def _type_of(node: exp.Expr) -> exp.DType | None:
    kind = node.type
    return None if kind is None or kind.this == exp.DType.UNKNOWN else kind.this


def strip_parens(expr: exp.Expr, ctx: Any) -> exp.Expr:
    """Drop the parentheses the author wrote around expressions: the tree already holds their grouping."""
    for paren in list(expr.find_all(exp.Paren)):
        if not isinstance(paren.this, exp.Query) and paren.parent is not None:
            paren.replace(paren.this)
    return expr


def fold_literal_casts(expr: exp.Expr, ctx: Any) -> exp.Expr:
    """`d >= DATE '2025-11-01'`, `d >= CAST('2025-11-01' AS DATE)` and `d >= '2025-11-01'::date` are
    `d >= '2025-11-01'` when `d` is a date/time column (or of unknown type): PostgreSQL casts the bare string
    to the column's type. A cast compared with a text column is kept (that comparison means something else)."""
    _typed(expr, ctx)
    for node in list(expr.find_all(*_COMPARISONS, exp.Between, exp.In)):
        if isinstance(node, exp.Between | exp.In):
            subject, operands = node.this, [node.args.get("low"), node.args.get("high"), *node.expressions]
        else:
            subject, operands = None, [node.this, node.expression]
        for operand in operands:
            if not _is_literal_cast(operand):
                continue
            other = (
                subject if subject is not None else (node.expression if operand is node.this else node.this)
            )
            if other is None or isinstance(other, _CONSTANTS) or _is_literal_cast(other):
                continue
            if _type_of(other) in (None, *_TEMPORAL):
                operand.replace(operand.this)
    return expr


def _is_literal_cast(node: exp.Expr | None) -> bool:
    return (
        isinstance(node, exp.Cast)
        and isinstance(node.this, exp.Literal)
        and node.this.is_string
        and node.to.this in _TEMPORAL
    )


def expand_between(expr: exp.Expr, ctx: Any) -> exp.Expr:
    """`x BETWEEN a AND b` is `x >= a AND x <= b` (sqlglot's simplify does it too, but may be skipped)."""
    for node in list(expr.find_all(exp.Between)):
        if node.args.get("symmetric"):
            continue
        low, high = node.args["low"], node.args["high"]
        node.replace(
            exp.And(
                this=exp.GTE(this=node.this.copy(), expression=low.copy()),
                expression=exp.LTE(this=node.this.copy(), expression=high.copy()),
            )
        )
    return expr


def drop_zero_guards(expr: exp.Expr, ctx: Any) -> exp.Expr:
    """`x / NULLIF(y, 0)` is `x / y` but for the division by zero itself: the guard is a spelling, not a metric."""
    for div in list(expr.find_all(exp.Div)):
        guard = div.expression
        if isinstance(guard, exp.Nullif) and _is_zero(guard.expression):
            guard.replace(guard.this)
    return expr


def _is_zero(node: exp.Expr | None) -> bool:
    return isinstance(node, exp.Literal) and not node.is_string and node.name in ("0", "0.0")


def drop_noop_casts(expr: exp.Expr, ctx: Any) -> exp.Expr:
    """`sum(spend)::numeric` is `sum(spend)` when `spend` is numeric: a cast to the type a value already has."""
    _typed(expr, ctx)
    for cast in list(expr.find_all(exp.Cast)):
        to = cast.to
        if to.expressions or isinstance(cast.this, exp.Literal):
            continue
        if _type_of(cast.this) is not None and _type_of(cast.this) == to.this:
            cast.replace(cast.this)
    return expr


def orient_comparisons(expr: exp.Expr, ctx: Any) -> exp.Expr:
    """`3 < x` is `x > 3`; `b.id = a.id` is `a.id = b.id`: constants right, otherwise operands sorted."""
    nodes: list[exp.Expr] = list(expr.find_all(*_MIRROR, bfs=False))
    for node in reversed(nodes):
        left, right = node.this, node.expression
        if left is None or right is None:
            continue
        if _side_key(right) < _side_key(left):
            node.replace(_MIRROR[type(node)](this=right, expression=left))
    return expr


def _side_key(node: exp.Expr) -> tuple[bool, str]:
    return (isinstance(node, _CONSTANTS), _sql(node))


def sort_operands(expr: exp.Expr, ctx: Any) -> exp.Expr:
    """`b + a` is `a + b` and `b * a` is `a * b`: chains of one commutative operator in a canonical order."""
    return _sort_chains(expr, (exp.Add, exp.Mul))


def sort_connectors(expr: exp.Expr, ctx: Any) -> exp.Expr:
    """AND / OR operands in a canonical order, innermost chains first."""
    return _sort_chains(expr, (exp.And, exp.Or))


def _sort_chains(expr: exp.Expr, kinds: tuple[type, ...]) -> exp.Expr:
    nodes: list[exp.Expr] = list(expr.find_all(*kinds, bfs=False))
    chains = [n for n in nodes if type(n.parent) is not type(n)]
    for head in reversed(chains):
        kind = type(head)
        operands = sorted(_chain(head, kind), key=_sql)
        head.replace(reduce(lambda a, b: kind(this=a, expression=b), operands))
    return expr


def _chain(node: exp.Expr, kind: type) -> list[exp.Expr]:
    """Operands of a chain of `kind`, looking through parentheses (which restore_parens puts back)."""
    while isinstance(node, exp.Paren) and not isinstance(node.this, exp.Query):
        node = node.this
    if type(node) is not kind:
        return [node]
    return _chain(node.this, kind) + _chain(node.expression, kind)


def sort_in_lists(expr: exp.Expr, ctx: Any) -> exp.Expr:
    """`x IN ('b', 'a', 'b')` is `x IN ('a', 'b')`: IN-lists sorted, duplicates dropped."""
    for node in expr.find_all(exp.In):
        if node.expressions:
            unique = {_sql(n): n for n in node.expressions}
            node.set("expressions", [unique[key] for key in sorted(unique)])
    return expr


def merge_point_ranges(expr: exp.Expr, ctx: Any) -> exp.Expr:
    """`x >= v AND x <= v` is `x = v`; a conjunct written twice is written once."""
    chains = [n for n in expr.find_all(exp.And) if type(n.parent) is not exp.And]
    for head in chains:
        operands = _chain(head, exp.And)
        keys = {
            id(o): (_sql(o.this), _sql(o.expression)) for o in operands if isinstance(o, exp.GTE | exp.LTE)
        }
        lows = {keys[id(o)] for o in operands if isinstance(o, exp.GTE)}
        points = lows & {keys[id(o)] for o in operands if isinstance(o, exp.LTE)}
        kept: dict[str, exp.Expr] = {}
        for operand in operands:
            if keys.get(id(operand)) in points:
                if isinstance(operand, exp.LTE):
                    continue  # folded into the `=` made from its `>=`
                operand = exp.EQ(this=operand.this.copy(), expression=operand.expression.copy())
            kept.setdefault(_sql(operand), operand)
        if len(kept) != len(operands):
            head.replace(reduce(lambda a, b: exp.And(this=a, expression=b), sorted(kept.values(), key=_sql)))
    return expr


def restore_parens(expr: exp.Expr, ctx: Any) -> exp.Expr:
    """Parenthesise every operand that binds more weakly than its operator, so the printed text parses back
    to this very tree: `And(Or(a, b), c)` prints `(a OR b) AND c`, never `a OR b AND c`."""
    for node in list(expr.walk()):
        strength = _strength(node)
        if strength is None:
            continue
        for key in ("this", "expression"):
            child = node.args.get(key)
            if not isinstance(child, exp.Expr) or (key == "expression" and not isinstance(node, exp.Binary)):
                continue
            inner = _strength(child)
            if inner is None:
                continue
            tie = inner == strength and (
                isinstance(node, _NON_ASSOCIATIVE) if key == "expression" else strength == 4
            )
            if inner < strength or tie:
                wrapper = exp.Paren()
                child.replace(wrapper)
                wrapper.set("this", child)
    return expr


def _strength(node: exp.Expr) -> int | None:
    for kinds, strength in _PRECEDENCE:
        if isinstance(node, kinds):
            return strength
    return None
