"""What the gold's top-level query says about row order: ORDER BY keys mapped to output columns, and LIMIT.

Found by parsing (sqlglot), never by looking for the substring "order by".
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache  # `f = lru_cache(...)(_f_uncached)`: mutmut mutates the undecorated function
from typing import Any

import sqlglot
from sqlglot import exp

from bot.cases.sqlparse import parsed


@dataclass(frozen=True)
class OrderInfo:
    ordered: bool
    keys: tuple[str, ...] = ()  # the ORDER BY expressions as written (normalised SQL)
    limit: int | None = None
    offset: int | None = None
    has_distinct: bool = False


NO_ORDER = OrderInfo(ordered=False)


def _int_literal(node: exp.Expression | None) -> int | None:
    if node is None:
        return None
    if isinstance(node, exp.Fetch):  # FETCH FIRST n ROWS ONLY
        value = node.args.get("count")
    else:
        value = node.args.get("expression") if isinstance(node, exp.Limit | exp.Offset) else node
    if isinstance(value, exp.Literal) and value.is_int:
        return int(value.this)
    return None


_TAIL = ("order", "limit", "offset")  # the clauses PostgreSQL lets follow a parenthesised query


def _unwrap(tree: Any) -> Any:
    """`(SELECT ... ORDER BY x)` is the query inside the parentheses, and `(SELECT ... ORDER BY x) LIMIT n` is
    `SELECT ... ORDER BY x LIMIT n`: PostgreSQL merges the ORDER BY, LIMIT and OFFSET written after the parentheses
    into the query inside (each clause at most once). Returns a copy when it merges: the parsed tree is cached."""
    if not isinstance(tree, exp.Paren | exp.Subquery):
        return tree
    inner = _unwrap(tree.this)
    tail = {k: tree.args[k] for k in _TAIL if tree.args.get(k)}
    if not tail:
        return inner
    if not isinstance(inner, exp.Select | exp.SetOperation) or any(inner.args.get(k) for k in tail):
        return tree  # PostgreSQL refuses a clause given twice; nothing here is sure
    merged = inner.copy()
    for k, node in tail.items():
        merged.set(k, node.copy())
    return merged


def _parse_uncached(sql: str) -> exp.Expression | None:
    """The query's tree (the one bot.cases.sqlparse keeps: a gold was parsed when it was loaded), its tail
    clauses merged into it; None when it does not parse."""
    try:
        trees = parsed(sql)
    except Exception:  # noqa: BLE001 - sqlglot raises several kinds; unparsable means unknown
        return None
    if not trees or trees[0] is None:
        return None
    return _unwrap(exp.Block(expressions=list(trees)) if len(trees) > 1 else trees[0])


_parse = lru_cache(maxsize=4096)(_parse_uncached)


def _order_info_uncached(sql: str) -> OrderInfo:
    tree = _parse(sql)
    if tree is None:
        return NO_ORDER
    order = tree.args.get("order")
    limit = _int_literal(tree.args.get("limit"))
    offset = _int_literal(tree.args.get("offset"))
    distinct = bool(tree.args.get("distinct")) if isinstance(tree, exp.Select) else False
    if not order:
        return OrderInfo(ordered=False, limit=limit, offset=offset, has_distinct=distinct)
    keys = tuple(o.this.sql(dialect="postgres") for o in order.expressions)
    return OrderInfo(ordered=True, keys=keys, limit=limit, offset=offset, has_distinct=distinct)


order_info = lru_cache(maxsize=4096)(_order_info_uncached)


def _top_select(tree: Any) -> exp.Select | None:
    """The SELECT whose output columns the query returns (the first branch of a UNION)."""
    while isinstance(tree, exp.SetOperation):
        tree = tree.this
    return tree if isinstance(tree, exp.Select) else None


def _ident(node: exp.Column) -> str:
    """A column name as PostgreSQL folds it: unquoted names to lower case, quoted ones as written."""
    ident = node.this
    if isinstance(ident, exp.Identifier) and ident.quoted:
        return str(ident.this)
    return node.name.lower()


def _bare(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):  # PostgreSQL's parser keeps no node for parentheses
        node = node.this
    return node


def _same_expression(key: exp.Expression, out: exp.Expression) -> bool:
    """The ORDER BY key computes what this output column computes. A column matches a column of the same name
    when at most one of them names its table or both name the same one (the gold ran, so the name resolved)."""
    if isinstance(key, exp.Column) and isinstance(out, exp.Column):
        if _ident(key) != _ident(out) or isinstance(key.this, exp.Star) or isinstance(out.this, exp.Star):
            return False
        return not key.table or not out.table or key.table.lower() == out.table.lower()
    return key.sql(dialect="postgres").lower() == out.sql(dialect="postgres").lower()


def _resolve_key(key: exp.Expression, select: exp.Select | None, columns: tuple[str, ...]) -> int | None:
    """The output column an ORDER BY key sorts on, resolved as PostgreSQL does; None when it is not returned.

    An ordinal is an output position. A bare name is the output column of that name when there is one (it
    shadows an input column of the same name); otherwise, like any expression or qualified name (`t.d` is the
    input column even when an output is called `d`), it is the output column computing the same expression."""
    key = _bare(key)
    if isinstance(key, exp.Literal) and key.is_int:
        pos = int(key.this) - 1
        return pos if 0 <= pos < len(columns) else None
    if isinstance(key, exp.Column) and not key.table:
        named = [i for i, c in enumerate(columns) if c == _ident(key)]
        if named:
            return named[0]
    if select is None:
        return None
    outputs = [e.this if isinstance(e, exp.Alias) else e for e in select.expressions]
    if any(
        isinstance(o, exp.Star) or (isinstance(o, exp.Column) and isinstance(o.this, exp.Star))
        for o in outputs
    ):
        # `SELECT *` hides which position holds what: an input column is the output column of its name
        if isinstance(key, exp.Column) and [c for c in columns if c == _ident(key)] == [_ident(key)]:
            return columns.index(_ident(key))
        return None
    if len(outputs) != len(columns):
        return None
    hits = [i for i, o in enumerate(outputs) if _same_expression(key, o)]
    return hits[0] if hits else None


def _order_nodes(sql: str) -> list[exp.Expression]:
    tree = _parse(sql)
    order = tree.args.get("order") if tree is not None else None
    return [o.this for o in order.expressions] if order else []


def key_positions(sql: str, info: OrderInfo, columns: tuple[str, ...]) -> tuple[int, ...] | None:
    """Indexes of the output columns the ORDER BY sorts on; None when a key is not among the outputs (then the
    tie probe, `with_order_keys`, finds the runs of equal keys)."""
    if not info.keys:
        return ()
    nodes = _order_nodes(sql)
    if len(nodes) != len(info.keys):
        return None
    select = _top_select(_parse(sql))
    positions = [_resolve_key(node, select, tuple(columns)) for node in nodes]
    if any(p is None for p in positions):
        return None
    return tuple(p for p in positions if p is not None)


def _with_limit_uncached(sql: str, limit: int) -> str | None:
    """The same query with another LIMIT (to probe for ties cut by the limit); None if it cannot be rewritten."""
    tree = _parse(sql)
    if not isinstance(tree, exp.Select | exp.SetOperation):
        return None
    try:
        return tree.limit(limit, copy=True).sql(dialect="postgres")
    except Exception:  # noqa: BLE001
        return None


with_limit = lru_cache(maxsize=4096)(_with_limit_uncached)


KEY_PREFIX = "__sqlcanary_k"


def _with_order_keys_uncached(sql: str) -> str | None:
    """The gold with its ORDER BY keys appended as output columns (`__sqlcanary_k0`, ...), so that the runs of
    equal keys can be found when the keys are not among the outputs. None for shapes where that changes rows."""
    tree = _parse(sql)
    if not isinstance(tree, exp.Select) or tree.args.get("distinct") or not tree.args.get("order"):
        return None
    try:
        probe = tree.copy()
        keys = [_key_value(o.this, tree) for o in probe.args["order"].expressions]
        if any(k is None for k in keys):
            return None
        probe.select(*[exp.alias_(k, f"{KEY_PREFIX}{i}") for i, k in enumerate(keys) if k], copy=False)
        return probe.sql(dialect="postgres")
    except Exception:  # noqa: BLE001
        return None


with_order_keys = lru_cache(maxsize=4096)(_with_order_keys_uncached)


def _output_name(node: exp.Expression) -> str | None:
    if isinstance(node, exp.Alias):
        ident = node.args.get("alias")
        if isinstance(ident, exp.Identifier):
            return str(ident.this) if ident.quoted else ident.name.lower()
        return node.alias.lower()
    return _ident(node) if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star) else None


def _key_value(key: exp.Expression, select: exp.Select) -> exp.Expression | None:
    """The key as an expression of the input rows, to add to the select list: an ordinal or a bare name of an
    output column means that output's expression (in a select list the same name would be the input column)."""
    key = _bare(key)
    outputs = select.expressions
    starred = any(
        isinstance(o, exp.Star) or (isinstance(o, exp.Column) and isinstance(o.this, exp.Star))
        for o in outputs
    )
    if isinstance(key, exp.Literal) and key.is_int:
        pos = int(key.this) - 1
        if starred or not 0 <= pos < len(outputs):
            return None
        out = outputs[pos]
        return (out.this if isinstance(out, exp.Alias) else out).copy()
    if isinstance(key, exp.Column) and not key.table:
        for out in outputs:
            if isinstance(out, exp.Alias) and _output_name(out) == _ident(key):
                return out.this.copy()
    return key.copy()


def _without_distinct_uncached(sql: str) -> str:
    """The query with every DISTINCT removed, as Spider's test-suite evaluator does by default; unchanged when it
    cannot be parsed."""
    try:
        tree = sqlglot.parse_one(sql, read="postgres")
    except Exception:  # noqa: BLE001
        return sql
    if tree is None or not tree.find(exp.Distinct):
        return sql

    def strip(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Select) and node.args.get("distinct"):
            node.set("distinct", None)
        if (
            isinstance(node, exp.Distinct)
            and node.parent is not None
            and not isinstance(node.parent, exp.Select)
        ):
            return node.expressions[0] if len(node.expressions) == 1 else node
        return node

    try:
        return tree.transform(strip).sql(dialect="postgres")
    except Exception:  # noqa: BLE001
        return sql


without_distinct = lru_cache(maxsize=4096)(_without_distinct_uncached)
